"""Key hashes: which partition a keyed message goes to.

The official Python client (C++ 4.x underneath) routes keyed messages with its default hashing
scheme BoostHash: boost::hash<std::string> of the key (Boost >= 1.81, 64-bit: the mulx-based
hash_range with seed 0), masked to 31 bits, modulo the number of partitions. Reproduced here so that
both clients send a key to the same partition (checked against pulsar-client 3.13 in the tests).
The Java client's two schemes are here too (its default, JavaStringHash: String.hashCode over the
key's UTF-16 code units; Murmur3_32Hash: MurmurHash3 x86 32-bit, seed 0, of the UTF-8 bytes), each
masked to 31 bits, so a producer can pick what a Java producer would.
Source: Pulsar's C++ BoostHash and RoundRobinMessageRouter; Boost's boost::hash_range; Pulsar's
Java JavaStringHash and Murmur3_32Hash (HashingScheme).
"""
from __future__ import annotations

import mmh3

from minipulsar.client.options import HashingScheme

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


def java_string_hash(key: str) -> int:
    """Java's String.hashCode() of key (UTF-16 code units), as a signed 32-bit value."""
    h = 0
    units = key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def key_hash(key: str, scheme: HashingScheme = HashingScheme.BoostHash) -> int:
    """The 31-bit hash scheme gives key."""
    if scheme == HashingScheme.JavaStringHash:
        return java_string_hash(key) & 0x7FFFFFFF
    if scheme == HashingScheme.Murmur3_32Hash:
        return mmh3.hash(key.encode("utf-8"), 0, signed=False) & 0x7FFFFFFF
    return boost_hash(key.encode("utf-8")) & 0x7FFFFFFF


def partition_for_key(key: str, num_partitions: int, scheme: HashingScheme = HashingScheme.BoostHash) -> int:
    """The partition a producer with hashing scheme `scheme` picks for partition_key `key` (the
    default: what the official Python client picks)."""
    return key_hash(key, scheme) % num_partitions
