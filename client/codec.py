"""Payload compression, as Pulsar frames it: the codec output is the raw payload, and
MessageMetadata.uncompressed_size says how big it decompresses.

LZ4 = LZ4 *block* format (no frame, no stored size); ZLib = zlib stream (Java Deflater); ZSTD =
zstd frame; SNAPPY = raw snappy. Each library is imported only when used, so a missing package
fails only that compression type, with InvalidConfiguration naming the package to install.
Source: Pulsar's C++ CompressionCodecLZ4 / CompressionCodecZLib / CompressionCodecZstd /
CompressionCodecSnappy.
"""
from __future__ import annotations

import zlib

from minipulsar.client.exceptions import InvalidConfiguration, InvalidMessage
from minipulsar.client.options import CompressionType

_PACKAGES = {CompressionType.LZ4: "lz4", CompressionType.ZSTD: "zstandard", CompressionType.SNAPPY: "python-snappy"}


def _module(kind: CompressionType):
    try:
        if kind == CompressionType.LZ4:
            import lz4.block
            return lz4.block
        if kind == CompressionType.ZSTD:
            import zstandard
            return zstandard
        if kind == CompressionType.SNAPPY:
            import snappy
            return snappy
    except ImportError as exc:
        raise InvalidConfiguration(f"{kind.name} compression needs the {_PACKAGES[kind]} package") from exc
    return None


def check_available(kind: CompressionType) -> None:
    """Raise InvalidConfiguration now (at create_producer) if kind's package is missing."""
    _module(CompressionType(kind))


def compress(kind: CompressionType, data: bytes) -> bytes:
    """data compressed with kind (NONE returns data unchanged)."""
    if kind == CompressionType.NONE:
        return data
    if kind == CompressionType.ZLib:
        return zlib.compress(data)
    module = _module(kind)
    if kind == CompressionType.LZ4:
        return module.compress(data, store_size=False)
    if kind == CompressionType.ZSTD:
        return module.ZstdCompressor(level=3).compress(data)
    return module.compress(data)


def decompress(kind: int, data: bytes, uncompressed_size: int) -> bytes:
    """data decompressed; raises InvalidMessage when it does not decode to uncompressed_size bytes."""
    if kind == CompressionType.NONE:
        return data
    try:
        kind = CompressionType(kind)
        if kind == CompressionType.ZLib:
            out = zlib.decompress(data)
        elif kind == CompressionType.LZ4:
            out = _module(kind).decompress(data, uncompressed_size=uncompressed_size)
        elif kind == CompressionType.ZSTD:
            out = _module(kind).ZstdDecompressor().decompress(data, max_output_size=uncompressed_size)
        else:
            out = _module(kind).decompress(data)
    except InvalidConfiguration:
        raise
    except Exception as exc:
        raise InvalidMessage(f"{kind!r} decompression failed: {exc}") from exc
    if len(out) != uncompressed_size:
        raise InvalidMessage(f"decompressed to {len(out)} bytes, metadata says {uncompressed_size}")
    return out
