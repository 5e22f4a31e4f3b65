"""Compacted ledger files (storage/compacted_ledger.py) and the batch rebuild of compaction
(broker/compaction/messages.py), on real files and real encoded entries."""
import os

import pytest

from minipulsar.broker.compaction.messages import keep_batch_indexes, keyed_messages, surviving_ack_set
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload
from minipulsar.storage import CompactedLedger, CompactedLedgerWriter, LedgerCorruptionError, Position
from minipulsar.storage.compacted_ledger import compacted_path, delete_compacted_ledgers


def write(folder, ledger_id, entries):
    writer = CompactedLedgerWriter(str(folder), ledger_id, sync=True)
    writer.append(entries)
    return writer.finish()


def test_written_ledger_reads_back_with_original_positions(tmp_path):
    entries = [(Position(3, i * 2), f"entry-{i}".encode() * (i + 1)) for i in range(50)]
    ledger = write(tmp_path, 7, entries)
    assert len(ledger) == 50 and ledger.last_position == Position(3, 98)
    assert CompactedLedger.open(str(tmp_path), 7).positions == [p for p, _ in entries]
    assert ledger.read(0, 100, 10**9) == entries
    assert ledger.read(ledger.index_at_or_after(Position(3, 11)), 2, 10**9) == entries[6:8]
    assert len(ledger.read(0, 100, 1)) == 1, "at least one entry even past the byte budget"


def test_aborted_write_leaves_no_file(tmp_path):
    writer = CompactedLedgerWriter(str(tmp_path), 1, sync=False)
    writer.append([(Position(0, 0), b"x")])
    writer.abort()
    assert os.listdir(tmp_path) == []


def test_a_flipped_byte_is_reported(tmp_path):
    write(tmp_path, 2, [(Position(0, i), b"payload-%d" % i) for i in range(3)])
    path = compacted_path(str(tmp_path), 2)
    data = bytearray(open(path, "rb").read())
    data[-2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(LedgerCorruptionError):
        CompactedLedger.open(str(tmp_path), 2).read(0, 3, 10**9)


def test_truncated_file_is_reported_at_open(tmp_path):
    write(tmp_path, 4, [(Position(0, 0), b"a" * 100)])
    path = compacted_path(str(tmp_path), 4)
    os.truncate(path, os.path.getsize(path) - 10)
    with pytest.raises(LedgerCorruptionError):
        CompactedLedger.open(str(tmp_path), 4)


def test_delete_keeps_only_the_named_ledger_and_drops_tmp_files(tmp_path):
    for ledger_id in (1, 2):
        write(tmp_path, ledger_id, [(Position(0, 0), b"x")])
    open(compacted_path(str(tmp_path), 3) + ".tmp", "wb").close()
    assert sorted(delete_compacted_ledgers(str(tmp_path), keep=2)) == [1, 3]
    assert os.listdir(tmp_path) == [os.path.basename(compacted_path(str(tmp_path), 2))]


def batch_entry(messages: list[tuple[str | None, bytes]]) -> bytes:
    parts = []
    for key, payload in messages:
        single = api.SingleMessageMetadata(payload_size=len(payload))
        if key is not None:
            single.partition_key = key
        raw = single.SerializeToString()
        parts += [len(raw).to_bytes(4, "big"), raw, payload]
    metadata = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                   num_messages_in_batch=len(messages))
    return build_headers_and_payload(metadata, b"".join(parts))


def test_batch_messages_are_keyed_one_by_one():
    entry = batch_entry([("a", b"1"), (None, b"2"), ("b", b"")])
    assert [(m.batch_index, m.key, m.deletes) for m in keyed_messages(entry)] == [
        (0, "a", False), (1, None, False), (2, "b", True)]


def test_losers_are_compacted_out_and_indexes_kept():
    entry = batch_entry([("a", b"1"), ("b", b"2"), ("c", b"3")])
    rebuilt = keep_batch_indexes(entry, {1})
    assert [(m.batch_index, m.key) for m in keyed_messages(rebuilt)] == [(1, "b")]
    assert surviving_ack_set(rebuilt) == [0b010], "only index 1 is left for clients"
    assert surviving_ack_set(entry) is None


def test_markers_never_enter_the_view():
    marker = build_headers_and_payload(api.MessageMetadata(
        producer_name="p", sequence_id=0, publish_time=1, marker_type=10, partition_key="k"), b"snapshot")
    assert keyed_messages(marker) == []
