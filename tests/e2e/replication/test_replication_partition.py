"""A network partition between two clusters (simulated with a TCP proxy that stops forwarding
without closing): the replicator's dead connection is found by the keep-alive within two
intervals and dropped at once although megabytes wait unsent in it, reconnection attempts follow
the back-off capped at replicationMaxBackoffIntervalSeconds, and after the heal the remote gets
the whole backlog, in order, with catch-up starting within one back-off step."""
from __future__ import annotations

import logging
import re
import time

import pulsar
import requests

from minipulsar.launcher import free_port
from tests.blackhole_proxy import BlackholeProxy
from tests.e2e.replication.geo import cluster_env, receive_all
from tests.helpers import wait_for

log = logging.getLogger(__name__)

KEEPALIVE = 1  # keepAliveIntervalSeconds: a dead connection is dropped within two intervals
BACKOFF_CAP = 1  # replicationMaxBackoffIntervalSeconds
PADDING = bytes(20 * 1024)  # 1000 entries of 20 KB: more than the socket buffers hold


def _replication(web_port: int, topic: str) -> dict:
    """a's replicator toward b, from the topic stats (Pulsar's ReplicatorStats fields)."""
    name = topic.removeprefix("persistent://")
    stats = requests.get(f"http://127.0.0.1:{web_port}/admin/v2/persistent/{name}/stats", timeout=5).json()
    return stats["replication"]["b"]


def test_partition_dead_connection_dropped_and_catch_up_within_one_backoff_step(broker_process, tmp_path):
    port_a, port_b, web_a = free_port(), free_port(), free_port()
    # b advertises 127.0.0.2, where the proxy listens: every lookup on b leads through the proxy.
    proxy = BlackholeProxy(("127.0.0.2", port_b), ("127.0.0.1", port_b)).start()
    peers = f"a=pulsar://127.0.0.1:{port_a},b={proxy.url}"
    settings = {"keepAliveIntervalSeconds": KEEPALIVE, "replicationMaxBackoffIntervalSeconds": BACKOFF_CAP}
    a = broker_process(data_dir=tmp_path / "a", port=port_a, env=cluster_env(peers, 1000, **settings),
                       web_port=web_a, args=("--cluster-name", "a"))
    broker_process(data_dir=tmp_path / "b", port=port_b, env=cluster_env(peers, 1000, **settings),
                   args=("--cluster-name", "b", "--advertised-address", "127.0.0.2"))
    topic = "persistent://public/default/partition"
    ca, cb = pulsar.Client(a.url), pulsar.Client(proxy.url)
    try:
        cb.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest).close()  # b keeps what arrives
        cb.close()
        producer = ca.create_producer(topic, batching_enabled=False)
        for i in range(10):
            producer.send(f"{i:06d}".encode())
        wait_for(lambda: (r := _replication(web_a, topic))["connected"] and r["replicationBacklog"] == 0,
                 "a's replicator to have sent the first 10 entries to b")

        proxy.blackhole()
        cut = time.monotonic()
        for i in range(10, 1010):
            producer.send_async(f"{i:06d}".encode() + PADDING, None)
        producer.flush()
        wait_for(lambda: not _replication(web_a, topic)["connected"], "a's replicator to drop its dead connection",
                 timeout=2 * KEEPALIVE + 10)
        detected = time.monotonic() - cut
        assert detected <= 2 * KEEPALIVE + 5, f"dead connection dropped after {detected:.1f} s"

        proxy.heal()
        healed = time.monotonic()
        wait_for(lambda: _replication(web_a, topic)["connected"], "a's replicator to reconnect after the heal",
                 timeout=30)
        reconnected = time.monotonic() - healed
        cb = pulsar.Client(proxy.url)
        consumer = cb.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        got = [int(m.data()[:6]) for m in receive_all(consumer, idle_ms=3000)]
        caught_up = time.monotonic() - healed
    finally:
        ca.close()
        cb.close()
        proxy.stop()
    first_seen = list(dict.fromkeys(got))
    assert first_seen == list(range(1010)), "b got the whole backlog, in order"
    # One back-off step (at most BACKOFF_CAP) plus the new connection's handshake.
    assert reconnected <= BACKOFF_CAP + 3, f"reconnected {reconnected:.1f} s after the heal"
    waits = [float(w) for w in re.findall(r"pulsar\.repl\.a-->b, id=\d+\): reconnecting in ([\d.]+) s",
                                          a.log_path.read_text())]
    assert waits and max(waits) <= BACKOFF_CAP, f"reconnection waits {waits} exceed the cap"
    log.info("partition: dead connection dropped after %.1f s, reconnected %.1f s and whole backlog (%d entries, "
             "%d duplicates) in b %.1f s after the heal", detected, reconnected, len(first_seen),
             len(got) - len(first_seen), caught_up)
