"""The WebSocket reader (from earliest, latest, an id) and partitioned and non-persistent topics."""
from __future__ import annotations

import base64

import pulsar

from minipulsar.client import HashingScheme
from minipulsar.client.hashing import java_string_hash, key_hash
from tests.helpers import wait_for
from tests.integration.websocket.wsclient import b64, ws_session


def _path(kind: str, topic: str, rest: str = "") -> str:
    return f"{kind}/{topic.replace('://', '/')}{rest}"


def _payloads(ws, count: int) -> list[bytes]:
    return [base64.b64decode(ws.recv_json()["payload"]) for _ in range(count)]


def test_reader_from_earliest_latest_and_an_id(broker, official, topic):
    producer = official.create_producer(topic)
    ids = [producer.send(f"m{i}".encode()) for i in range(4)]
    with ws_session(broker, _path("reader", topic, "?messageId=earliest")) as ws:
        assert _payloads(ws, 4) == [b"m0", b"m1", b"m2", b"m3"]
    start = b64(ids[1].serialize())
    with ws_session(broker, _path("reader", topic, f"?messageId={start}&readerName=ws-reader")) as ws:
        assert _payloads(ws, 2) == [b"m2", b"m3"]  # after the id, as a Java reader starts
        consumers = broker.topic_stats(topic)["subscriptions"]
        assert any(c["consumerName"] == "ws-reader" for s in consumers.values() for c in s["consumers"])
    with ws_session(broker, _path("reader", topic)) as ws:  # latest: only what comes next
        assert ws.nothing_within(0.3)
        producer.send(b"m4")
        assert _payloads(ws, 1) == [b"m4"]
    wait_for(lambda: not broker.topic_stats(topic)["subscriptions"], "the readers' subscriptions gone")


def test_reader_holds_at_its_queue_until_answered(broker, official, topic):
    producer = official.create_producer(topic)
    for i in range(4):
        producer.send(f"m{i}".encode())
    with ws_session(broker, _path("reader", topic, "?messageId=earliest&receiverQueueSize=2")) as ws:
        first = ws.recv_json()
        ws.recv_json()
        assert ws.nothing_within(0.4)
        ws.send_json({"messageId": first["messageId"]})
        assert _payloads(ws, 1) == [b"m2"]
        ws.send_json({"type": "isEndOfTopic"})
        assert ws.recv_json() == {"endOfTopic": False}


def test_partitioned_topic_through_websocket(broker, official, topic, admin):
    assert admin.put(f"/admin/v2/persistent/{topic.split('://')[1]}/partitions", json=3).status_code == 204
    keys = [f"key-{i}" for i in range(12)]
    with ws_session(broker, _path("consumer", topic, "/sub?subscriptionType=Shared")) as consumer_ws, \
            ws_session(broker, _path("producer", topic)) as producer_ws:
        for key in keys:
            producer_ws.send_json({"payload": b64(key.encode()), "key": key, "context": key})
        answers = {a["context"]: a for a in (producer_ws.recv_json() for _ in keys)}
        for key in keys:  # JavaStringHash, the Java client's default and so Pulsar's WebSocket producer's
            message_id = pulsar.MessageId.deserialize(base64.b64decode(answers[key]["messageId"]))
            assert message_id.partition() == (java_string_hash(key) & 0x7FFFFFFF) % 3
        received = [consumer_ws.recv_json() for _ in keys]
        assert sorted(base64.b64decode(m["payload"]).decode() for m in received) == sorted(keys)
        for message in received:
            consumer_ws.send_json({"messageId": message["messageId"]})
        wait_for(lambda: all(broker.subscription_stats(f"{topic}-partition-{i}", "sub")["msgBacklog"] == 0
                             for i in range(3)), "every partition acknowledged")
    with ws_session(broker, _path("reader", topic, "?messageId=earliest")) as reader_ws:  # every partition
        assert sorted(payload.decode() for payload in _payloads(reader_ws, len(keys))) == sorted(keys)


def test_partitioned_routing_modes(broker, official, topic, admin):
    assert admin.put(f"/admin/v2/persistent/{topic.split('://')[1]}/partitions", json=3).status_code == 204

    def partitions(query: str) -> set[int]:
        with ws_session(broker, _path("producer", topic, query)) as ws:
            for i in range(6):
                ws.send_json({"payload": b64(b"x")})
            return {pulsar.MessageId.deserialize(base64.b64decode(ws.recv_json()["messageId"])).partition()
                    for _ in range(6)}

    assert len(partitions("")) == 1  # SinglePartition, Pulsar's WebSocket default
    assert partitions("?messageRoutingMode=RoundRobinPartition") == {0, 1, 2}
    keyed = "?hashingScheme=Murmur3_32Hash"
    with ws_session(broker, _path("producer", topic, keyed)) as ws:
        ws.send_json({"payload": b64(b"x"), "key": "orders-1"})
        message_id = pulsar.MessageId.deserialize(base64.b64decode(ws.recv_json()["messageId"]))
    assert message_id.partition() == key_hash("orders-1", HashingScheme.Murmur3_32Hash) % 3


def test_non_persistent_topic(broker):
    topic = "non-persistent://public/default/ws-np"
    with ws_session(broker, _path("consumer", topic, "/sub")) as consumer_ws, \
            ws_session(broker, _path("producer", topic)) as producer_ws:
        producer_ws.send_json({"payload": b64(b"fleeting")})
        assert producer_ws.recv_json()["result"] == "ok"
        assert _payloads(consumer_ws, 1) == [b"fleeting"]
