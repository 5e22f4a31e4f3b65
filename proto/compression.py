"""Payload compression as Pulsar frames it: the codec's output is the raw payload of the entry, and
MessageMetadata.uncompressed_size says how many bytes it decompresses to.

``kind`` is the protocol's CompressionType (an int): NONE 0, LZ4 1, ZLIB 2, ZSTD 3, SNAPPY 4.

- LZ4: the LZ4 *block* format (no frame, no stored size), package lz4;
- ZLIB: a zlib stream (Java's Deflater), the standard library;
- ZSTD: one zstd frame (level 3 when compressing), package zstandard;
- SNAPPY: raw snappy (no framing), package python-snappy.

Each package is imported the first time its kind is used, so a missing one fails only that kind,
with CodecUnavailableError naming the package to install. Compression applies to a whole entry
payload (for a batch, the whole batch payload; proto.entries).

Source: Pulsar's CompressionCodecLZ4, CompressionCodecZLib, CompressionCodecZstd,
CompressionCodecSnappy and CompressionCodecProvider.
"""
from __future__ import annotations

import zlib
from functools import partial
from typing import Callable, NamedTuple

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import CodecUnavailableError, CorruptPayloadError

NONE, LZ4, ZLIB, ZSTD, SNAPPY = api.NONE, api.LZ4, api.ZLIB, api.ZSTD, api.SNAPPY


class _Codec(NamedTuple):
    compress: Callable[[bytes], bytes]
    decompress: Callable[[bytes, int], bytes]  # (data, uncompressed_size)


def _lz4() -> _Codec:
    import lz4.block
    return _Codec(partial(lz4.block.compress, store_size=False),
                  lambda data, size: lz4.block.decompress(data, uncompressed_size=size))


def _zlib() -> _Codec:
    return _Codec(zlib.compress, lambda data, size: zlib.decompress(data))


def _zstd() -> _Codec:
    import zstandard  # a compressor object is not safe to share between threads: one per call
    return _Codec(lambda data: zstandard.ZstdCompressor(level=3).compress(data),
                  lambda data, size: zstandard.ZstdDecompressor().decompress(data, max_output_size=size))


def _snappy() -> _Codec:
    import snappy
    return _Codec(snappy.compress, lambda data, size: snappy.decompress(data))


# kind -> (the package it needs, the loader that imports it)
_LOADERS: dict[int, tuple[str, Callable[[], _Codec]]] = {
    LZ4: ("lz4", _lz4), ZLIB: ("zlib (standard library)", _zlib), ZSTD: ("zstandard", _zstd),
    SNAPPY: ("python-snappy", _snappy)}
_loaded: dict[int, _Codec] = {}


def _codec(kind: int) -> _Codec:
    """The codec of a known kind other than NONE; raises CodecUnavailableError."""
    codec = _loaded.get(kind)
    if codec is None:
        package, load = _LOADERS[kind]
        try:
            codec = _loaded[kind] = load()
        except ImportError as exc:
            raise CodecUnavailableError(api.CompressionType.Name(kind), package) from exc
    return codec


def _known(kind: int) -> int:
    if kind != NONE and kind not in _LOADERS:
        raise ValueError(f"unknown compression type {kind}")
    return kind


def check_available(kind: int) -> None:
    """Raise CodecUnavailableError now (for example when a producer is created) if kind's package
    is missing; ValueError for a kind the protocol does not have."""
    if _known(kind) != NONE:
        _codec(kind)


def compress(kind: int, data: bytes) -> bytes:
    """data compressed with kind (NONE returns data itself). Raises CodecUnavailableError, or
    ValueError for an unknown kind."""
    if _known(kind) == NONE:
        return data
    return _codec(kind).compress(data)


def decompress(kind: int, data: bytes, uncompressed_size: int) -> bytes:
    """data (compressed with kind) decompressed to exactly uncompressed_size bytes; NONE returns data
    itself. Raises CorruptPayloadError when kind is unknown, the codec rejects data, or the result
    is not uncompressed_size bytes long; CodecUnavailableError when kind's package is missing."""
    if kind == NONE:
        return data
    if kind not in _LOADERS:
        raise CorruptPayloadError(f"unknown compression type {kind}")
    codec = _codec(kind)
    try:
        out = codec.decompress(data, uncompressed_size)
    except Exception as exc:  # each package has its own error types (LZ4BlockError, ZstdError, zlib.error, ...)
        raise CorruptPayloadError(f"{api.CompressionType.Name(kind)} decompression failed: {exc}") from exc
    if len(out) != uncompressed_size:
        raise CorruptPayloadError(f"{api.CompressionType.Name(kind)} payload decompressed to {len(out)} bytes, "
                                  f"the metadata says {uncompressed_size}")
    return out
