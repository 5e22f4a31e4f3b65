"""Range arithmetic and option parsing of pipeline/ (no broker, no Spark session)."""
from __future__ import annotations

import json

import pulsar
import pytest

from minipulsar.pipeline.errors import PulsarOptionError
from minipulsar.pipeline.offsets import (EARLIEST, Position, completes, is_after, is_within, may_hold_messages,
                              offsets_from_json, offsets_to_json, parse_offsets_option)
from minipulsar.pipeline.options import SourceOptions
from minipulsar.pipeline.planning import _ledger_segments


def test_entry_aware_bounds():
    whole, part = Position(3, 5, -1), Position(3, 5, 2)
    assert not is_after((3, 5, 0), whole) and is_after((3, 6, -1), whole)
    assert not is_after((3, 5, 2), part) and is_after((3, 5, 3), part)
    assert is_within((3, 5, 9), whole) and not is_within((3, 5, 3), part) and is_within((3, 5, 2), part)
    assert completes((3, 5, 9), 10, whole) and not completes((3, 5, 8), 10, whole)
    assert completes((3, 5, -1), 0, whole) and completes((4, 0, -1), 0, Position(4, -1, -1))
    assert not may_hold_messages(whole, whole) and may_hold_messages(part, whole)
    assert not may_hold_messages(EARLIEST, EARLIEST) and may_hold_messages(EARLIEST, Position(0, -1))


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
