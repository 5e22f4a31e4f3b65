"""proto.compression: every codec round trip, the raw formats Pulsar's codecs write, and proto's
own errors for corrupt payloads and missing packages."""
import sys
import zlib

import pytest

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto import compression
from minipulsar.proto.errors import CodecUnavailableError, CorruptPayloadError

KINDS = [value for _, value in api.CompressionType.items()]
COMPRESSED = [kind for kind in KINDS if kind != api.NONE]
DATA = b"minipulsar " * 500


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip(kind):
    packed = compression.compress(kind, DATA)
    if kind != api.NONE:
        assert len(packed) < len(DATA)
    assert compression.decompress(kind, packed, len(DATA)) == DATA
    compression.check_available(kind)


def test_none_returns_the_data_itself():
    assert compression.compress(api.NONE, DATA) is DATA
    assert compression.decompress(api.NONE, DATA, 0) is DATA  # uncompressed_size means nothing then


def test_formats_are_the_raw_ones_pulsar_writes():
    import lz4.block
    import snappy
    import zstandard
    assert lz4.block.decompress(compression.compress(api.LZ4, DATA), uncompressed_size=len(DATA)) == DATA
    assert zlib.decompress(compression.compress(api.ZLIB, DATA)) == DATA
    assert zstandard.ZstdDecompressor().decompress(compression.compress(api.ZSTD, DATA)) == DATA
    assert snappy.decompress(compression.compress(api.SNAPPY, DATA)) == DATA


@pytest.mark.parametrize("kind", COMPRESSED)
def test_garbage_raises_corrupt_payload(kind):
    with pytest.raises(CorruptPayloadError):
        compression.decompress(kind, b"\xff" * 40, 1000)


@pytest.mark.parametrize("kind", COMPRESSED)
def test_wrong_uncompressed_size_raises_corrupt_payload(kind):
    packed = compression.compress(kind, DATA)
    with pytest.raises(CorruptPayloadError):
        compression.decompress(kind, packed, len(DATA) + 1)


def test_unknown_kind():
    with pytest.raises(CorruptPayloadError, match="unknown compression type 9"):
        compression.decompress(9, b"x", 1)
    with pytest.raises(ValueError):
        compression.compress(9, b"x")
    with pytest.raises(ValueError):
        compression.check_available(9)


@pytest.mark.parametrize("kind,module,package", [(api.LZ4, "lz4.block", "lz4"), (api.ZSTD, "zstandard", "zstandard"),
                                                 (api.SNAPPY, "snappy", "python-snappy")])
def test_missing_package_names_what_to_install(monkeypatch, kind, module, package):
    monkeypatch.setattr(compression, "_loaded", {})
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now raises ImportError
    for call in (lambda: compression.check_available(kind), lambda: compression.compress(kind, DATA),
                 lambda: compression.decompress(kind, b"x", 1)):
        with pytest.raises(CodecUnavailableError, match=package) as info:
            call()
        assert info.value.package == package
    assert compression.compress(api.ZLIB, DATA)  # the other kinds still work
