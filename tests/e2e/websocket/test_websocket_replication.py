"""A WebSocket producer's replicationClusters between two clusters (broker processes a and b that
replicate public/default to each other). Pulsar's ProducerMessage.replicationClusters sets the
message's replicate_to: a replicator sends a message on only when the list is empty or names its
remote cluster (GeoPersistentReplicator), while the local cluster delivers it in any case."""
from __future__ import annotations

import pulsar
import websocket

from tests.e2e.replication.geo import client, start_clusters
from tests.integration.websocket.wsclient import WsSession, b64

TOPIC = "persistent://public/default/ws-replication"
# payload -> replicationClusters; the last, unrestricted, is replicated after all the others
SENT = [(b"to-b", ["b"]), (b"local-only", ["a"]), (b"unknown-cluster", ["elsewhere"]), (b"everywhere", None)]


def _produce_over_websocket(proc) -> None:
    url = f"ws://127.0.0.1:{proc.web_port}/ws/v2/producer/{TOPIC.replace('://', '/')}"
    ws = WsSession(websocket.create_connection(url, timeout=10))
    try:
        for payload, clusters in SENT:
            message = {"payload": b64(payload)}
            if clusters is not None:
                message["replicationClusters"] = clusters
            ws.send_json(message)
            assert ws.recv_json()["result"] == "ok"
    finally:
        ws.close()


def test_replication_clusters_choose_where_a_message_goes(broker_process, tmp_path):
    procs = start_clusters(broker_process, tmp_path, 2)
    local, remote = client(procs["a"]), client(procs["b"])
    try:
        here = local.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        there = remote.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        _produce_over_websocket(procs["a"])
        # replication keeps the order: once "everywhere" is in b, nothing else is on its way
        arrived = []
        while not arrived or arrived[-1] != b"everywhere":
            arrived.append(there.receive(30000).data())
        assert arrived == [b"to-b", b"everywhere"]
        assert [here.receive(10000).data() for _ in SENT] == [payload for payload, _ in SENT]
    finally:
        local.close()
        remote.close()
