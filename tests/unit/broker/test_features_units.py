"""Socket-free checks of the feature modules: topics_hash byte order, pattern filtering, schema
compatibility strategies, listener parsing and batch ack-set merging."""
from __future__ import annotations

import json

import pytest

from minipulsar.broker.batch_acks import BatchAckSets
from minipulsar.broker.namespaces import filter_topics, remove_domain_scheme, topics_hash
from minipulsar.broker.schema_registry import check_compatible
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Position

AVRO = api.Schema.Type.Value("Avro")


def test_topics_hash_is_guava_crc32c_little_endian_hex():
    # CRC-32C("123456789") = 0xE3069283; Guava's HashCode.toString prints the bytes little-endian.
    assert topics_hash(["123456789"]) == "839206e3"
    assert topics_hash(["b", "a"]) == topics_hash(["a", "b"])  # sorted, joined by ','


def test_pattern_filter_matches_the_whole_name_without_scheme():
    topics = ["persistent://public/default/orders-partition-0", "persistent://public/default/orders-eu",
              "persistent://public/default/xorders"]
    assert filter_topics(topics, "persistent://public/default/orders.*") == topics[:2]
    assert filter_topics(topics, "public/default/orders") == topics[:1]  # the partition's parent matches
    assert remove_domain_scheme("non-persistent://a/b/c") == "a/b/c"
    with pytest.raises(ValueError):
        remove_domain_scheme("http://a/b/c")


def _record(*fields) -> dict:
    definition = {"type": "record", "name": "User", "fields": list(fields)}
    import base64
    return {"type": AVRO, "data": base64.b64encode(json.dumps(definition).encode()).decode(), "properties": {}}


V1 = _record({"name": "name", "type": "string"})
V2 = _record({"name": "name", "type": "string"}, {"name": "age", "type": ["null", "int"], "default": None})
V_NO_NAME = _record({"name": "age", "type": ["null", "int"], "default": None})
V_INT_NAME = _record({"name": "name", "type": "int"})


@pytest.mark.parametrize("strategy, existing, new, ok", [
    ("FULL", [V1], V2, True),
    ("FULL", [V2], V_NO_NAME, False),  # v2 readers need `name`
    ("BACKWARD", [V2], V_NO_NAME, True),
    ("FORWARD", [V2], V_NO_NAME, False),
    ("FORWARD", [V_NO_NAME], V2, True),  # old readers ignore the new field
    ("FULL", [V1], V_INT_NAME, False),
    ("ALWAYS_COMPATIBLE", [V1], V_INT_NAME, True),
    ("ALWAYS_INCOMPATIBLE", [V1], V2, False),
    ("BACKWARD", [V_INT_NAME, V1], V2, True),  # only the latest counts
    ("BACKWARD_TRANSITIVE", [V_INT_NAME, V1], V2, False),  # every version counts
    ("FULL", [], V_INT_NAME, True),
    ("FULL", [{**V1, "type": api.Schema.Type.Value("String")}], V1, False),  # type change
])
def test_compatibility_strategies(strategy, existing, new, ok):
    assert (check_compatible(existing, new, strategy) is None) is ok


def test_batch_ack_sets_merge_until_fully_acked():
    sets = BatchAckSets()
    position = Position(3, 7)
    assert sets.record(position, [0b1110]) is False  # index 0 acked of 4
    assert sets.record(position, [0b1011]) is False  # index 2 acked; index 0 stays acked
    assert sets.ack_set(position) == [0b1010] and sets.unacked_count(position, 4) == 2
    assert sets.record(position, [0b0101]) is True  # the rest: whole entry acknowledged
    assert sets.ack_set(position) is None
    sets.record(position, [-1 & ~1])  # signed words on the wire round-trip
    assert sets.ack_set(position) == [-2]
