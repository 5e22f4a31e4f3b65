"""Replication that reaches the wrong broker fails loudly, never silently: a broker refuses a
replicator producer that comes from its own cluster (a loop: the replicator dialled itself) or is
meant for another cluster, nothing is written into the wrong topic, and the replicator logs an
ERROR naming the settings to fix while it keeps retrying. A broker that advertises a loopback
address while a peer cluster lives on another host warns at start."""
from __future__ import annotations

import logging

import pulsar

from minipulsar.launcher import free_port
from tests.e2e.replication.geo import cluster_env, receive_all
from tests.helpers import wait_for

TOPIC = "persistent://public/default/misdirected"


def _client(proc) -> pulsar.Client:
    return pulsar.Client(proc.url, operation_timeout_seconds=20, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def _error_naming_the_keys(proc) -> str | None:
    """The replicator's ERROR line in proc's log, once it is there."""
    for line in proc.log_path.read_text().splitlines():
        if " ERROR " in line and "replicator reached the wrong cluster" in line:
            return line
    return None


def _produce(c: pulsar.Client, count: int) -> list[bytes]:
    producer = c.create_producer(TOPIC)
    sent = [f"m{i}".encode() for i in range(count)]
    for payload in sent:
        producer.send(payload)
    producer.close()
    return sent


def test_a_replicator_that_dials_its_own_broker_is_refused_and_reported(broker_process, tmp_path):
    port = free_port()
    # The mistake seen in containers: "b" resolves to this very broker.
    a = broker_process(data_dir=tmp_path / "a", port=port, args=("--cluster-name", "a"),
                       env=cluster_env(f"b=pulsar://127.0.0.1:{port}", 1000))
    c = _client(a)
    try:
        consumer = c.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        sent = _produce(c, 20)
        line = wait_for(lambda: _error_naming_the_keys(a), "the replicator's ERROR about the wrong cluster")
        # Refused, so nothing was copied back into a's own topic.
        assert [m.data() for m in receive_all(consumer, idle_ms=1000)] == sent
    finally:
        c.close()
    assert "this broker is cluster 'a'" in line and "from 'a' to 'b'" in line
    for key in ("replicationClusters", "advertisedListeners", "advertisedAddress"):
        assert key in line, key
    assert "refusing replicator producer pulsar.repl.a-->b" in a.log_path.read_text()


def test_a_replicator_that_reaches_another_cluster_is_refused_and_reported(broker_process, tmp_path):
    port_a, port_c = free_port(), free_port()
    # a believes b lives where c does.
    a = broker_process(data_dir=tmp_path / "a", port=port_a, args=("--cluster-name", "a"),
                       env=cluster_env(f"b=pulsar://127.0.0.1:{port_c}", 1000))
    c_proc = broker_process(data_dir=tmp_path / "c", port=port_c, args=("--cluster-name", "c"),
                            env=cluster_env(f"a=pulsar://127.0.0.1:{port_a}", 1000))
    ca, cc = _client(a), _client(c_proc)
    try:
        consumer_c = cc.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        _produce(ca, 20)
        line = wait_for(lambda: _error_naming_the_keys(a), "the replicator's ERROR about the wrong cluster")
        assert "this broker is cluster 'c'" in line and "from 'a' to 'b'" in line
        # The refusal came before any entry: c's topic holds nothing of a's.
        assert receive_all(consumer_c, idle_ms=1000) == []
    finally:
        ca.close()
        cc.close()
    assert "refusing replicator producer pulsar.repl.a-->b" in c_proc.log_path.read_text()


def _loopback_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "a loopback address" in r.getMessage()]


def test_a_loopback_advertised_address_with_a_peer_on_another_host_warns(broker_factory, caplog):
    caplog.set_level(logging.WARNING, logger="minipulsar.broker.replication.misdirection")
    broker_factory(clusterName="a", replicationClusters="b=pulsar://192.0.2.10:6650")  # bound to 127.0.0.1
    [warning] = _loopback_warnings(caplog)
    assert "advertisedAddress" in warning and "cluster(s) b" in warning

    caplog.clear()
    broker_factory(clusterName="a", replicationClusters="b=pulsar://192.0.2.10:6650",
                   advertisedListeners="internal:pulsar://127.0.0.1:6650,external:pulsar://192.0.2.1:6650")
    [warning] = _loopback_warnings(caplog)
    assert "advertisedListeners" in warning


def test_no_warning_when_peers_share_the_loopback_or_the_address_is_routable(broker_factory, caplog):
    caplog.set_level(logging.WARNING, logger="minipulsar.broker.replication.misdirection")
    broker_factory(clusterName="a", replicationClusters="b=pulsar://127.0.0.1:6651")  # same host: fine
    broker_factory(clusterName="a", replicationClusters="b=pulsar://192.0.2.10:6650", advertisedAddress="192.0.2.1")
    broker_factory(clusterName="a")  # no peers
    assert _loopback_warnings(caplog) == []
