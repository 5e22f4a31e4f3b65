"""Geo-replication between real broker processes (each its own cluster), driven by the official
client: one-way and all-ways replication, no loops, and catching up after a remote was down."""
from __future__ import annotations

import signal
import threading

import pulsar

from tests.e2e.replication.geo import client, receive_all, restart, start_clusters


def test_produce_in_a_arrives_in_b_and_c_in_order(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 3)
    topic = "persistent://public/default/one-way"
    clients = {n: client(p) for n, p in procs.items()}
    consumers = {n: clients[n].subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
                 for n in ("b", "c")}
    producer = clients["a"].create_producer(topic)
    sent = [f"m{i}".encode() for i in range(200)]
    for payload in sent:
        producer.send_async(payload, None)
    producer.flush()
    for name, consumer in consumers.items():
        got = receive_all(consumer)
        assert [m.data() for m in got] == sent, name  # in order, exactly once
        assert all(m.publish_timestamp() > 0 for m in got)
    # Nothing loops back to a: its own subscription sees each message once.
    local = clients["a"].subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    assert [m.data() for m in receive_all(local, idle_ms=2000)] == sent
    for c in clients.values():
        c.close()


def test_produce_in_all_clusters_at_once_each_message_once_everywhere(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 3)
    topic = "persistent://public/default/all-ways"
    clients = {n: client(p) for n, p in procs.items()}
    consumers = {n: c.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
                 for n, c in clients.items()}
    producers = {n: c.create_producer(topic) for n, c in clients.items()}
    per_cluster = 150

    def produce(name):
        for i in range(per_cluster):
            producers[name].send_async(f"{name}-{i}".encode(), None)
        producers[name].flush()

    threads = [threading.Thread(target=produce, args=(n,)) for n in producers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, consumer in consumers.items():
        got = [m.data().decode() for m in receive_all(consumer)]
        assert len(got) == 3 * per_cluster, (name, len(got))
        assert len(set(got)) == len(got), f"{name} received duplicates"
        for origin in producers:  # each origin's messages keep their order everywhere
            seq = [int(x.split("-")[1]) for x in got if x.startswith(origin + "-")]
            assert seq == list(range(per_cluster)), (name, origin)
    # No loops, no ping-pong: after a quiet period nothing more arrives anywhere.
    for name, consumer in consumers.items():
        assert receive_all(consumer, idle_ms=1500) == [], name
    for c in clients.values():
        c.close()


def test_remote_down_backlog_grows_then_catches_up_in_order(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 2)
    topic = "persistent://public/default/catch-up"
    ca = client(procs["a"])
    cb = client(procs["b"])
    consumer_b = cb.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    producer = ca.create_producer(topic)
    for i in range(50):
        producer.send(f"{i}".encode())
    assert [int(m.data()) for m in receive_all(consumer_b, idle_ms=2000)] == list(range(50))
    cb.close()
    assert procs["b"].stop(signal.SIGTERM) == 0

    for i in range(50, 450):  # b is down: a keeps accepting, the replicator's backlog grows
        producer.send_async(f"{i}".encode(), None)
    producer.flush()

    procs["b"] = restart(procs["b"])
    cb = client(procs["b"])
    consumer_b = cb.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    got = [int(m.data()) for m in receive_all(consumer_b, idle_ms=4000)]
    first_seen = list(dict.fromkeys(got))
    assert first_seen == list(range(50, 450))  # nothing lost, in order
    assert len(got) == len(first_seen), f"{len(got) - len(first_seen)} duplicates after the restart"
    ca.close()
    cb.close()
