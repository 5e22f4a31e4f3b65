"""Markers stay inside the brokers: never delivered to consumers of any type or to readers,
get_last_message_id never points at one, and none is written while a topic is idle or when no
subscription is replicated. Marker counts are read from the stopped brokers' own ledgers."""
from __future__ import annotations

import signal
import time

import pulsar

from minipulsar.broker.replication.markers import SNAPSHOT, SNAPSHOT_REQUEST, SNAPSHOT_RESPONSE, UPDATE
from tests.e2e.replication.geo import client, receive_all, restart, start_clusters, stored_markers

SUB_TYPES = {
    "exclusive": pulsar.ConsumerType.Exclusive,
    "shared": pulsar.ConsumerType.Shared,
    "failover": pulsar.ConsumerType.Failover,
    "key-shared": pulsar.ConsumerType.KeyShared,
}


def _paced(producer, prefix: str, count: int, rate: int = 100) -> list[bytes]:
    sent = []
    for i in range(count):
        payload = f"{prefix}-{i}".encode()
        producer.send_async(payload, None, partition_key=f"k{i % 7}")
        sent.append(payload)
        time.sleep(1 / rate)  # pacing, not synchronisation: data keeps flowing across several snapshot rounds
    producer.flush()
    return sent


def test_markers_never_reach_consumers_or_readers(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 2, snapshot_millis=200, defaultRetentionTimeInMinutes=-1, defaultRetentionSizeInMB=-1)
    topic = "persistent://public/default/markers-hidden"
    ca, cb = client(procs["a"]), client(procs["b"])
    consumers = {}
    for cluster, c in (("a", ca), ("b", cb)):
        for name, kind in SUB_TYPES.items():
            consumers[cluster, name] = c.subscribe(topic, f"sub-{name}", consumer_type=kind,
                                                   initial_position=pulsar.InitialPosition.Earliest,
                                                   replicate_subscription_state_enabled=True)
    sent = _paced(ca.create_producer(topic), "a", 300)  # 3 s at 100/s: ~15 snapshots of 200 ms
    for key, consumer in consumers.items():
        got = [m.data() for m in receive_all(consumer, idle_ms=2000)]
        assert sorted(got) == sorted(sent), key  # every message, nothing else (no marker)
        last = consumer.get_last_message_id()
        assert (last.ledger_id(), last.entry_id()) >= (0, 0)
    for cluster, c in (("a", ca), ("b", cb)):
        reader = c.create_reader(topic, pulsar.MessageId.earliest)
        got = []
        while reader.has_message_available():  # would hang or overrun if the last id were a marker
            got.append(reader.read_next(5000).data())
        assert got == sent, cluster
        reader.close()
        # get_last_message_id of a consumer = the last data entry, even with markers after it
        probe = c.subscribe(topic, "probe", initial_position=pulsar.InitialPosition.Earliest)
        messages = receive_all(probe, idle_ms=1000)
        assert messages[-1].data() == sent[-1]
        last_data = messages[-1].message_id()
        last = probe.get_last_message_id()
        assert (last.ledger_id(), last.entry_id()) == (last_data.ledger_id(), last_data.entry_id()), cluster
    ca.close()
    cb.close()
    for proc in procs.values():
        assert proc.stop(signal.SIGTERM) == 0
    kinds_a = {kind for _, kind, _ in stored_markers(procs["a"].data_dir, topic)}
    kinds_b = {kind for _, kind, _ in stored_markers(procs["b"].data_dir, topic)}
    # the snapshot protocol really ran inline in the topic while the clients read it
    assert {SNAPSHOT_REQUEST, SNAPSHOT_RESPONSE, SNAPSHOT, UPDATE} <= kinds_a, kinds_a
    assert {SNAPSHOT_REQUEST, SNAPSHOT_RESPONSE} <= kinds_b, kinds_b


def test_no_markers_when_idle_or_without_replicated_subscriptions(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 2, snapshot_millis=200, defaultRetentionTimeInMinutes=-1, defaultRetentionSizeInMB=-1)
    replicated = "persistent://public/default/idle-replicated"
    plain = "persistent://public/default/idle-plain"
    ca = client(procs["a"])
    ca.subscribe(replicated, "r", replicate_subscription_state_enabled=True)
    ca.subscribe(plain, "p")  # not replicated (the official client sends false)
    _paced(ca.create_producer(replicated), "r", 100)
    _paced(ca.create_producer(plain), "p", 100)
    # Kept: no stat marks the end of the last snapshot round (its markers replicate after the data), so
    # quiescence is an idle period here, not synchronisation on a state.
    time.sleep(1.5)
    ca.close()
    for proc in procs.values():
        assert proc.stop(signal.SIGTERM) == 0
    before = {n: stored_markers(p.data_dir, replicated) for n, p in procs.items()}
    assert any(kind == SNAPSHOT for _, kind, _ in before["a"])
    for n, p in procs.items():
        assert stored_markers(p.data_dir, plain) == [], n

    # Idle: brokers up for 10 snapshot periods, replicators connected, nothing published.
    procs = {n: restart(p) for n, p in procs.items()}
    ca = client(procs["a"])
    ca.subscribe(replicated, "r", replicate_subscription_state_enabled=True).close()
    time.sleep(2.0)  # not synchronisation: the idle period is the thing under test (no marker while idle)
    ca.close()
    for proc in procs.values():
        assert proc.stop(signal.SIGTERM) == 0
    after = {n: stored_markers(p.data_dir, replicated) for n, p in procs.items()}
    assert after == before
