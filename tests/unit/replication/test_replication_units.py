"""Replication building blocks without sockets: settings parsing, marker round trips, the snapshot
builder's rounds and the per-subscription snapshot cache."""
from __future__ import annotations

import pytest

from minipulsar.broker.config import BrokerConfig, ConfigError
from minipulsar.broker.entry_info import entry_info
from minipulsar.broker.replication import markers as mk
from minipulsar.broker.replication.clusters import ClusterSettings, parse_peer_clusters
from minipulsar.broker.replication.snapshot_cache import SnapshotCache
from minipulsar.broker.replication.snapshot_controller import SnapshotBuilder
from minipulsar.proto import PulsarMarkers_pb2 as pm
from minipulsar.storage import Position


def test_cluster_settings_parse_peers_and_namespaces():
    config = BrokerConfig(cluster_name="a", replication_clusters="a=pulsar://h:1, b=pulsar://h:2,c=pulsar://h:3",
                          namespace_replication_clusters="public/default=*;t/ns=b,a")
    settings = ClusterSettings.from_config(config)
    assert settings.peers == {"b": "pulsar://h:2", "c": "pulsar://h:3"}
    assert settings.remotes_for("public/default") == ["b", "c"]
    assert settings.remotes_for("t/ns") == ["b"]
    assert settings.remotes_for("other/ns") == []


@pytest.mark.parametrize("peers, namespaces", [
    ("b=http://h:1", ""), ("b", ""), ("b=pulsar://h:1", "public/default=zz"), ("b=pulsar://h:1", "nonamespace=b"),
])
def test_cluster_settings_reject_malformed_values(peers, namespaces):
    with pytest.raises(ConfigError):
        ClusterSettings.from_config(BrokerConfig(cluster_name="a", replication_clusters=peers,
                                                 namespace_replication_clusters=namespaces))


def test_no_peers_means_no_replication():
    assert parse_peer_clusters("", "a") == {}
    assert ClusterSettings.from_config(BrokerConfig()).remotes_for("public/default") == []


def test_marker_entry_round_trip_and_is_seen_as_marker():
    request = pm.ReplicatedSubscriptionsSnapshotRequest(snapshot_id="id-1", source_cluster="a")
    data = mk.new_marker(mk.SNAPSHOT_REQUEST, request, replicate_to=["b"])
    info = entry_info(data)
    assert info.is_marker and info.marker_type == 10
    assert info.metadata.producer_name == "pulsar.marker" and list(info.metadata.replicate_to) == ["b"]
    assert info.metadata.publish_time > 0 and info.metadata.sequence_id == 0
    kind, parsed = mk.parse_marker(data)
    assert kind == mk.SNAPSHOT_REQUEST and parsed == request
    assert mk.is_marker_entry(data)


def test_builder_needs_one_round_with_one_remote_and_two_with_more():
    one = SnapshotBuilder("s", ["b"], 0.0)
    assert one.on_response("b", Position(1, 5)) == "complete"
    two = SnapshotBuilder("s", ["b", "c"], 0.0)
    assert two.on_response("b", Position(1, 5)) == "wait"
    assert two.on_response("b", Position(1, 9)) == "wait"  # first answer per cluster wins
    assert two.on_response("x", Position(1, 9)) == "wait"  # not a remote of this snapshot
    assert two.on_response("c", Position(2, 7)) == "next-round"
    assert two.on_response("c", Position(2, 20)) == "wait"
    assert two.on_response("b", Position(1, 30)) == "complete"
    assert two.positions == {"b": Position(1, 5), "c": Position(2, 7)}  # round-1 positions kept


def _snapshot(n: int) -> pm.ReplicatedSubscriptionsSnapshot:
    return pm.ReplicatedSubscriptionsSnapshot(snapshot_id=str(n))


def test_cache_returns_the_newest_snapshot_passed_by_the_mark_delete():
    cache = SnapshotCache("sub", 10)
    for n in (10, 20, 30):
        cache.add(Position(1, n), _snapshot(n))
    assert cache.advanced_mark_delete(Position(1, 5)) is None
    assert cache.advanced_mark_delete(Position(1, 25)).snapshot_id == "20"
    assert cache.positions() == [Position(1, 30)]
    cache.add(Position(1, 30), _snapshot(30))  # read again: ignored
    assert len(cache) == 1
    cache.add(Position(1, 3), _snapshot(3))  # older than the newest: the subscription was rewound
    assert cache.positions() == [Position(1, 3)]


def test_cache_eviction_keeps_head_and_tail_and_spreads_the_rest():
    cache = SnapshotCache("sub", 3, distance=lambda a, b: b.entry_id - a.entry_id)
    for n in (0, 100, 110, 200):
        cache.add(Position(1, n), _snapshot(n))
    assert cache.positions() == [Position(1, 0), Position(1, 100), Position(1, 200)]  # 110 leaves the smallest hole
    cache.add(Position(1, 210), _snapshot(210))
    assert cache.positions()[0] == Position(1, 0) and cache.positions()[-1] == Position(1, 210)
    assert len(cache) == 3
