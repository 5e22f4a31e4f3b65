"""kill -9 of the origin broker while snapshots are in progress: after the restart replication and
snapshots resume, and nothing acknowledged to the producer is lost in the other cluster."""
from __future__ import annotations

import logging
import signal
import threading
import time

import pulsar

from tests.e2e.replication.geo import client, pending, receive_all, restart, start_clusters
from tests.helpers import wait_for

log = logging.getLogger(__name__)


def test_kill_9_mid_snapshot_then_replication_and_snapshots_resume(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 2, snapshot_millis=200)
    topic = "persistent://public/default/crash-mid-snapshot"
    ca, cb = client(procs["a"]), client(procs["b"])
    cb.subscribe(topic, "audit", initial_position=pulsar.InitialPosition.Earliest).close()
    ca.subscribe(topic, "orders", initial_position=pulsar.InitialPosition.Earliest,
                 replicate_subscription_state_enabled=True).close()
    producer = ca.create_producer(topic, send_timeout_millis=60000)
    confirmed: list[int] = []
    stop = threading.Event()

    def produce():
        i = 0
        while not stop.is_set():
            try:
                producer.send(str(i).encode())  # blocks across the crash and the reconnect
                confirmed.append(i)
            except pulsar.PulsarException as exc:  # a send lost in the crash: not confirmed
                log.info("send %d failed: %s", i, exc)
            i += 1
            time.sleep(0.005)  # pacing, not synchronisation: a steady stream for the snapshots to run in

    thread = threading.Thread(target=produce)
    thread.start()
    # snapshots every 200 ms while data flows: after 200 sends (about a second) one is almost always in flight
    wait_for(lambda: len(confirmed) >= 200, "200 confirmed sends before the kill", timeout=60)
    procs["a"].stop(signal.SIGKILL)
    before_crash = len(confirmed)
    procs["a"] = restart(procs["a"])
    wait_for(lambda: len(confirmed) > before_crash + 200, "the producer to resume after the restart", timeout=60)
    stop.set()
    thread.join(60)
    assert len(confirmed) > before_crash + 50, "the producer did not resume after the restart"

    # Nothing lost in b: every confirmed message arrived (at-least-once: a resend after the crash may
    # duplicate an entry whose receipt was lost).
    consumer_b = cb.subscribe(topic, "audit", initial_position=pulsar.InitialPosition.Earliest)
    got = [int(m.data()) for m in receive_all(consumer_b, idle_ms=3000)]
    assert set(confirmed) <= set(got)
    assert list(dict.fromkeys(got)) == sorted(set(got)), "per-origin order broken"
    log.info("after kill -9: %d confirmed, %d received in b, %d duplicates", len(confirmed), len(got),
             len(got) - len(set(got)))

    # Snapshots resumed: acknowledging everything in a moves b's replicated subscription close to
    # the end (without new snapshots it would stay at the beginning: created by an update, or absent).
    ca.close()
    ca = client(procs["a"])
    consumer_a = ca.subscribe(topic, "orders", initial_position=pulsar.InitialPosition.Earliest,
                              replicate_subscription_state_enabled=True)
    producer = ca.create_producer(topic)
    tail = [producer.send_async(f"tail-{i}".encode(), None) for i in range(100)]
    producer.flush()
    assert len(tail) == 100
    acked = receive_all(consumer_a, idle_ms=2000)
    assert len(acked) >= len(confirmed) + 100
    wait_for(lambda: pending(cb, topic, "orders", initial_position=pulsar.InitialPosition.Earliest,
                             replicate_subscription_state_enabled=True) < 100,
             "a snapshot past a's acks to complete and its update to move b's subscription", timeout=60)
    consumer_a.close()
    consumer_b2 = cb.subscribe(topic, "orders", initial_position=pulsar.InitialPosition.Earliest,
                               replicate_subscription_state_enabled=True)
    rest = receive_all(consumer_b2, idle_ms=2000)
    assert len(rest) < 100, f"b's replicated subscription did not move: {len(rest)} redelivered"
    ca.close()
    cb.close()
