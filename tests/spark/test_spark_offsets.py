"""Range arithmetic, option parsing and entry decoding of pipeline/ (no broker, no Spark session)."""
from __future__ import annotations

import json

import pulsar
import pytest

from minipulsar.pipeline.errors import PulsarOptionError
from minipulsar.client import MessageId
from minipulsar.pipeline.balanced_ranges import balance, cut, entry_spans
from minipulsar.pipeline.columns import ColumnBuffer, batch_id_suffixes, entry_id_prefix
from minipulsar.pipeline.entry_decoder import CorruptEntry, add_rows, open_entry
from minipulsar.pipeline.offsets import (EARLIEST, Position, entry_slice, may_hold_messages, offsets_from_json,
                                         offsets_to_json, parse_offsets_option)
from minipulsar.pipeline.options import SourceOptions
from minipulsar.pipeline.planning import _ledger_segments


def test_entry_aware_bounds():
    whole, part = Position(3, 5, -1), Position(3, 5, 2)
    # Start is exclusive: a whole entry excludes all of it, a batch index the messages up to it.
    assert entry_slice((3, 5), 10, whole, Position(9, 0)) == (0, 0)
    assert entry_slice((3, 5), 10, part, Position(9, 0)) == (3, 10)
    assert entry_slice((3, 6), 10, whole, Position(9, 0)) == (0, 10)
    # End is inclusive: a whole entry includes all of it, a batch index the messages up to it.
    assert entry_slice((3, 5), 10, EARLIEST, whole) == (0, 10)
    assert entry_slice((3, 5), 10, EARLIEST, part) == (0, 3)
    assert entry_slice((3, 6), 10, EARLIEST, whole) == (0, 0)
    assert entry_slice((3, 5), 1, Position(3, 4), whole) == (0, 1)  # a message not in a batch
    assert entry_slice((4, 0), 1, EARLIEST, Position(4, -1, -1)) == (0, 0)
    assert not may_hold_messages(whole, whole) and may_hold_messages(part, whole)
    assert not may_hold_messages(EARLIEST, EARLIEST) and may_hold_messages(EARLIEST, Position(0, -1))


def test_message_id_bytes_are_serialize():
    for ledger, entry, partition in ((0, 0, -1), (7, 300, 2), (1 << 40, 5, 130)):
        assert entry_id_prefix(ledger, entry, partition) == MessageId(partition, ledger, entry).serialize()
        for size in (1, 7, 200):
            for index, suffix in enumerate(batch_id_suffixes(size)):
                expected = MessageId(partition, ledger, entry, index, size).serialize()
                assert entry_id_prefix(ledger, entry, partition) + suffix == expected


def test_offsets_option_forms():
    msg_id = pulsar.MessageId(-1, 7, 9, 2)
    parsed = parse_offsets_option("startingOffsets", json.dumps({
        "a": list(msg_id.serialize()), "b": {"ledgerId": 1, "entryId": 2}, "c": -2, "d": "latest"}))
    assert parsed == {"persistent://public/default/a": Position(7, 9, 2),
                      "persistent://public/default/b": Position(1, 2, -1),
                      "persistent://public/default/c": "earliest", "persistent://public/default/d": "latest"}
    assert parse_offsets_option("x", " Earliest ") == "earliest"
    with pytest.raises(PulsarOptionError, match="startingOffsets"):
        parse_offsets_option("startingOffsets", "{bad json")
    positions = {"t-partition-1": Position(1, 2, 3), "t-partition-0": EARLIEST}
    assert offsets_from_json(json.loads(json.dumps(offsets_to_json(positions)))) == positions


def test_ledger_segments_cut_at_ledger_boundaries():
    segments = _ledger_segments(Position(2, 10, -1), Position(4, 3, -1))
    assert segments == [(Position(2, 10, -1), Position(3, -1, -1)), (Position(3, -1, -1), Position(4, -1, -1)),
                        (Position(4, -1, -1), Position(4, 3, -1))]
    assert _ledger_segments(Position(4, 0, -1), Position(4, 3, -1)) == [(Position(4, 0, -1), Position(4, 3, -1))]


def test_source_options():
    opts = SourceOptions.parse({"service.url": "pulsar://h:1", "topics": "a, b", "maxentriespertrigger": "5"})
    assert opts.topics == ("persistent://public/default/a", "persistent://public/default/b")
    assert opts.max_entries_per_trigger == 5 and opts.fail_on_data_loss
    assert SourceOptions.parse({"service.url": "pulsar://h:1", "topicsPattern": "a.*"}).topics_pattern == "a.*"
    with pytest.raises(PulsarOptionError, match="topicsPattern: not a regular expression"):
        SourceOptions.parse({"service.url": "pulsar://h:1", "topicsPattern": "a(("})
    with pytest.raises(PulsarOptionError, match="failOnDataLoss"):
        SourceOptions.parse({"service.url": "pulsar://h:1", "topic": "a", "failOnDataLoss": "maybe"})


def test_balanced_ranges_cut_equal_entry_counts_across_ledgers():
    # Ledgers 3 (10 entries), 4 (empty), 6 (10); 5 is gone. The range starts inside entry (3, 4)'s
    # batch and ends inside entry (6, 7)'s: entries (3,4)..(3,9) and (6,0)..(6,7), 14 in all.
    start, end = Position(3, 4, 2), Position(6, 7, 5)
    ledgers = {3: 10, 4: 0, 6: 10}
    spans = entry_spans(start, end, ledgers)
    assert spans == [(3, 4, 9), (6, 0, 7)]
    pieces = cut(start, end, spans, 4)
    assert pieces[0][0] == start and pieces[-1][1] == end
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))  # contiguous
    sizes = [sum(1 for ledger, first, last in spans for e in range(first, last + 1)
                 if (a.ledger_id, a.entry_id) < (ledger, e) <= (b.ledger_id, b.entry_id)
                 or (a.batch_index >= 0 and (ledger, e) == a.entry)) for a, b in pieces]
    assert sum(sizes) == 14 and max(sizes) - min(sizes) <= 1
    assert cut(start, end, spans, 100)[-1][1] == end and len(cut(start, end, spans, 100)) == 14
    # Partitions share the pieces in proportion to their entries, each keeps at least one.
    ranges = balance([("a", start, end), ("b", Position(0, 0), Position(0, 2))], {"a": ledgers, "b": {0: 3}}, 4)
    assert [p for p, _, _ in ranges].count("b") == 1 and [p for p, _, _ in ranges].count("a") == 4


def _batch_entry(messages, count=None):
    """A stored batch entry of (payload, key, properties) messages, as a producer frames it."""
    from minipulsar.proto import PulsarApi_pb2 as api
    from minipulsar.proto.frames import build_headers_and_payload

    body = b""
    for payload, key, properties in messages:
        single = api.SingleMessageMetadata(payload_size=len(payload), partition_key=key, event_time=7)
        for k, v in properties:
            single.properties.add(key=k, value=v)
        meta = single.SerializeToString()
        body += len(meta).to_bytes(4, "big") + meta + payload
    metadata = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1_700_000_000_000,
                                   num_messages_in_batch=count or len(messages))
    return build_headers_and_payload(metadata, body)


def test_entry_decoding_into_columns():
    buffer = ColumnBuffer("t")
    entry = _batch_entry([(b"a", "k", [("x", "1"), ("x", "2")]), (b"b", "", []), (b"c", "k", [])])
    metadata, payload = open_entry(entry)
    add_rows(buffer, metadata, payload, 4, 9, -1, 1, 3)  # messages 1 and 2 of the batch
    add_rows(buffer, *open_entry(entry), 4, 10, -1, 0, 1)
    with pytest.raises(CorruptEntry):  # says 5 messages, holds 3: the rows already added are dropped
        add_rows(buffer, *open_entry(_batch_entry([(b"d", "", [])] * 3, count=5)), 4, 11, -1, 0, 5)
    with pytest.raises(CorruptEntry, match="checksum"):
        open_entry(entry[:-1] + b"!")
    rows = buffer.take().to_pylist()
    assert [(r["value"], r["key"], r["properties"]) for r in rows] == [
        (b"b", None, []), (b"c", "k", []), (b"a", "k", [("x", "2")])]
    assert [MessageId.deserialize(r["messageId"])._key() for r in rows] == [(4, 9, 1), (4, 9, 2), (4, 10, 0)]
    assert rows[0]["publishTime"].timestamp() == 1_700_000_000 and rows[0]["eventTime"].timestamp() == 0.007
