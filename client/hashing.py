"""Key hashes: which partition a keyed message goes to.

The official Python client (C++ 4.x underneath) routes keyed messages with its default hashing
scheme BoostHash: boost::hash<std::string> of the key (Boost >= 1.81, 64-bit: the mulx-based
hash_range with seed 0), masked to 31 bits, modulo the number of partitions. Reproduced here so that
both clients send a key to the same partition (checked against pulsar-client 3.13 in the tests).
Source: Pulsar's C++ BoostHash and RoundRobinMessageRouter; Boost's boost::hash_range.
"""
from __future__ import annotations

_M64 = (1 << 64) - 1
_Q = 0x9E3779B97F4A7C15
_K = 0xDF442D22CE4859B9  # Q * Q mod 2^64


def _mulx(x: int, y: int) -> int:
    product = (x & _M64) * (y & _M64)
    return (product ^ (product >> 64)) & _M64


def boost_hash(data: bytes) -> int:
    """boost::hash_range(0, data) as a 64-bit unsigned integer."""
    n = len(data)
    w = _mulx(_Q, _K)
    h = w ^ n
    pos = 0
    while n >= 8:
        w = (w + _Q) & _M64
        h ^= _mulx(int.from_bytes(data[pos:pos + 8], "little") + w, _K)
        pos += 8
        n -= 8
    v = 0
    if n >= 4:
        v = (int.from_bytes(data[pos + n - 4:pos + n], "little") << ((n - 4) * 8)) | int.from_bytes(data[pos:pos + 4], "little")
    elif n >= 1:
        x1, x2 = (n - 1) & 2, n >> 1
        v = (data[pos + x1] << (x1 * 8)) | (data[pos + x2] << (x2 * 8)) | data[pos]
    w = (w + _Q) & _M64
    h ^= _mulx(v + w, _K)
    return _mulx(h + w, _K)


def partition_for_key(key: str, num_partitions: int) -> int:
    """The partition the official client picks for partition_key `key`."""
    return (boost_hash(key.encode("utf-8")) & 0x7FFFFFFF) % num_partitions
