"""atheris harness over the entry opener and batch splitter (proto/entries.py open_entry,
split_batch, and the codecs of proto/compression.py behind them).

Input: the bytes of one stored entry ([0x0e01][crc32c][metadataSize][MessageMetadata][payload]).
Property (tests/fuzz/oracles.py check_entry): only FrameError or EntryError is raised, with and
without the checksum check, and a batch that splits holds num_messages_in_batch messages of their
payload_size each.

    python bench/atheris/fuzz_entries.py --minutes 5
"""
from __future__ import annotations

import atheris
from common import run

with atheris.instrument_imports(include=["minipulsar"]):
    from minipulsar.proto import PulsarApi_pb2 as api
    from minipulsar.proto.entries import build_entry, join_batch

    from tests.fuzz import oracles


def test_one_input(data: bytes) -> None:
    oracles.check_entry(data)


def seeds() -> list[bytes]:
    out = []
    for kind in (api.NONE, api.LZ4, api.ZLIB, api.ZSTD, api.SNAPPY):
        singles = [api.SingleMessageMetadata(partition_key=f"k{i}", sequence_id=i) for i in range(3)]
        metadata = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=3,
                                       compression=kind)
        out.append(build_entry(metadata, join_batch(singles, [b"a", b"", b"ccc"])))
    out.append(build_entry(api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), b"single"))
    return out


if __name__ == "__main__":
    run("entries", test_one_input, seeds())
