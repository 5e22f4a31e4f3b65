"""PIP-33 replicated subscriptions across real broker processes: a consumer acknowledges half of
the messages in cluster a, moves to another cluster and resumes near a's position (at most about
one snapshot interval of duplicates), skipping nothing; with three clusters (two snapshot rounds)."""
from __future__ import annotations

import logging
import time

import pulsar

from tests.e2e.replication.geo import client, receive_all, replicated_everything, start_clusters

log = logging.getLogger(__name__)

RATE = 100  # messages per second while producing
SNAPSHOT_MILLIS = 1000


def _produce_paced(producer, count: int) -> list[bytes]:
    sent = []
    start = time.monotonic()
    for i in range(count):
        payload = f"{i}".encode()
        producer.send_async(payload, None)
        sent.append(payload)
        delay = start + (i + 1) / RATE - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # pacing at RATE, not synchronisation: the duplicate bound is in its terms
    producer.flush()
    return sent


def _failover(procs, target: str, total: int = 400, acked: int = 200) -> int:
    """Produce in a, ack `acked` in a, move the consumer to target; returns the duplicate count."""
    topic = f"persistent://public/default/failover-{target}-{len(procs)}"
    clients = {n: client(p) for n, p in procs.items()}
    consumer_a = clients["a"].subscribe(topic, "orders", consumer_type=pulsar.ConsumerType.Failover,
                                        initial_position=pulsar.InitialPosition.Earliest,
                                        replicate_subscription_state_enabled=True)
    producer = clients["a"].create_producer(topic)
    # Consume while producing, so a's dispatcher reads past snapshot markers as they are written.
    sent = []
    start = time.monotonic()
    received = []
    for i in range(total):
        payload = f"{i}".encode()
        producer.send_async(payload, None)
        sent.append(payload)
        while len(received) < min(acked, i):
            msg = consumer_a.receive(5000)
            received.append(int(msg.data()))
            consumer_a.acknowledge(msg)
        delay = start + (i + 1) / RATE - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # pacing at RATE, not synchronisation: the duplicate bound is in its terms
    producer.flush()
    assert received == list(range(acked))
    # The last update marker is written when the last ack passes a completed snapshot, about
    # (total - acked) / RATE seconds before the last message; markers travel in order with the data,
    # so once the target holds every message it has had the update too.
    replicated_everything(clients[target], topic, total)
    consumer_a.close()

    consumer_t = clients[target].subscribe(topic, "orders", consumer_type=pulsar.ConsumerType.Failover,
                                           initial_position=pulsar.InitialPosition.Earliest,
                                           replicate_subscription_state_enabled=True)
    got = [int(m.data()) for m in receive_all(consumer_t)]
    for c in clients.values():
        c.close()
    assert got, "nothing received after failover"
    assert got == list(range(got[0], total)), "the resumed consumer skipped or reordered messages"
    duplicates = acked - got[0]
    assert duplicates >= 0
    log.info("failover a -> %s with %d clusters: %d duplicates (%d msg/s, snapshots every %d ms)",
             target, len(procs), duplicates, RATE, SNAPSHOT_MILLIS)
    return duplicates


def test_failover_between_two_clusters_resumes_near_the_acked_position(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 2, snapshot_millis=SNAPSHOT_MILLIS)
    duplicates = _failover(procs, "b")
    # about one snapshot interval's worth of messages, plus the round trip
    assert duplicates <= RATE * 2 * SNAPSHOT_MILLIS / 1000, duplicates


def test_failover_across_three_clusters_two_rounds(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 3, snapshot_millis=SNAPSHOT_MILLIS)
    duplicates = _failover(procs, "c")
    assert duplicates <= RATE * 2 * SNAPSHOT_MILLIS / 1000, duplicates


def test_without_replicated_state_the_remote_subscription_starts_over(broker_process, tmp_path):
    """Control: a non-replicated subscription does not move in the other cluster."""
    procs = start_clusters(broker_process, tmp_path, 2, snapshot_millis=SNAPSHOT_MILLIS)
    topic = "persistent://public/default/not-replicated-sub"
    ca, cb = client(procs["a"]), client(procs["b"])
    consumer_a = ca.subscribe(topic, "plain", initial_position=pulsar.InitialPosition.Earliest)
    producer = ca.create_producer(topic)
    _produce_paced(producer, 150)
    assert len(receive_all(consumer_a, idle_ms=1500)) == 150
    # Not synchronisation: a negative check, time for a wrongly sent update to arrive (no event marks "none was sent").
    time.sleep(2)
    consumer_b = cb.subscribe(topic, "plain", initial_position=pulsar.InitialPosition.Earliest)
    assert [int(m.data()) for m in receive_all(consumer_b, idle_ms=2000)] == list(range(150))
    ca.close()
    cb.close()
