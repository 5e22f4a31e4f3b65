"""Messages cross between the WebSocket API and the official client both ways, with Pulsar's fields."""
from __future__ import annotations

import asyncio
import base64
import datetime

import pulsar
import pytest

from minipulsar.client import Client, MessageId

from tests.helpers import wait_for
from tests.integration.websocket.wsclient import b64, ws_session


def _path(kind: str, topic: str) -> str:
    return f"{kind}/{topic.replace('://', '/')}"


def test_websocket_producer_to_official_consumer(broker, official, topic):
    consumer = official.subscribe(topic, "sub")
    event_time = "2024-05-06T07:08:09.123+02:00"
    with ws_session(broker, _path("producer", topic)) as ws:
        ws.send_json({"payload": b64(b"hello"), "properties": {"a": "1", "n": 2}, "context": "c-1", "key": "k1",
                      "eventTime": event_time})
        answer = ws.recv_json()
    assert answer["result"] == "ok" and answer["context"] == "c-1"
    assert set(answer) == {"result", "messageId", "context"}
    message = consumer.receive(10000)
    assert message.data() == b"hello"
    assert message.properties() == {"a": "1", "n": "2"}
    assert message.partition_key() == "k1"
    assert message.event_timestamp() == int(datetime.datetime.fromisoformat(event_time).timestamp() * 1000)
    # the answer's messageId is the stored message's id, as the official client serializes it
    assert pulsar.MessageId.deserialize(base64.b64decode(answer["messageId"])) == message.message_id()


def test_official_producer_to_websocket_consumer(broker, official, topic):
    with ws_session(broker, _path("consumer", topic) + "/sub") as ws:
        producer = official.create_producer(topic, batching_enabled=False)
        sent = producer.send(b"\x00\xffbinary", properties={"p": "v"}, partition_key="key-7", event_timestamp=1700000000123)
        producer.send(b"plain")
        first, second = ws.recv_json(), ws.recv_json()
    assert list(first) == ["messageId", "payload", "properties", "publishTime", "redeliveryCount", "eventTime", "key"]
    assert base64.b64decode(first["payload"]) == b"\x00\xffbinary"
    assert first["properties"] == {"p": "v"} and first["key"] == "key-7" and first["redeliveryCount"] == 0
    assert datetime.datetime.fromisoformat(first["eventTime"]).timestamp() == 1700000000.123
    assert datetime.datetime.fromisoformat(first["publishTime"]).tzinfo is not None
    assert pulsar.MessageId.deserialize(base64.b64decode(first["messageId"])) == sent
    assert "eventTime" not in second and "key" not in second and second["properties"] == {}


def test_websocket_acks_clear_the_backlog_and_unacked_come_back(broker, official, topic):
    producer = official.create_producer(topic)
    with ws_session(broker, _path("consumer", topic) + "/sub?subscriptionType=Shared") as ws:
        for i in range(4):
            producer.send(f"m{i}".encode())
        messages = [ws.recv_json() for _ in range(4)]
        for message in messages[:2]:
            ws.send_json({"messageId": message["messageId"]})
        wait_for(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 2, "two acknowledged")
    # the session is gone: the two it did not acknowledge go to the next consumer
    consumer = official.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    assert sorted(consumer.receive(10000).data() for _ in range(2)) == [b"m2", b"m3"]


def test_batched_messages_are_acknowledged_one_by_one(broker, official, topic):
    producer = official.create_producer(topic, batching_enabled=True, batching_max_messages=5,
                                        batching_max_publish_delay_ms=1000)
    with ws_session(broker, _path("consumer", topic) + "/sub") as ws:
        for i in range(5):
            producer.send_async(f"b{i}".encode(), None)
        producer.flush()
        messages = [ws.recv_json() for _ in range(5)]
        ids = [pulsar.MessageId.deserialize(base64.b64decode(m["messageId"])) for m in messages]
        assert [i.batch_index() for i in ids] == [0, 1, 2, 3, 4] and len({i.entry_id() for i in ids}) == 1
        for message in messages[:4]:
            ws.send_json({"messageId": message["messageId"]})
        assert ws.nothing_within(0.3)
        assert broker.subscription_stats(topic, "sub")["msgBacklog"] == 1  # the entry waits for its last message
        ws.send_json({"messageId": messages[4]["messageId"]})
        wait_for(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 0, "the whole batch acknowledged")


def test_producer_options(broker, topic):
    query = "?producerName=ws-producer&initialSequenceId=41&compressionType=LZ4&batchingEnabled=true&batchingMaxPublishDelay=5"
    with ws_session(broker, _path("producer", topic) + query) as ws:
        assert [p["producerName"] for p in broker.topic_stats(topic)["publishers"]] == ["ws-producer"]
        for i in range(3):
            ws.send_json({"payload": b64(f"m{i}".encode()), "context": str(i)})
        answers = [ws.recv_json() for _ in range(3)]
    assert [a["result"] for a in answers] == ["ok"] * 3
    ids = [pulsar.MessageId.deserialize(base64.b64decode(a["messageId"])) for a in answers]
    assert len({i.entry_id() for i in ids}) == 1 and [i.batch_index() for i in ids] == [0, 1, 2]  # one LZ4 batch

    async def read_back():
        async with Client(broker.url) as client:
            reader = await client.create_reader(topic, MessageId.earliest)
            return [await reader.read_next(10000) for _ in range(3)]

    messages = asyncio.run(read_back())
    assert [(m.data(), m.sequence_id(), m.producer_name()) for m in messages] == [
        (b"m0", 42, "ws-producer"), (b"m1", 43, "ws-producer"), (b"m2", 44, "ws-producer")]


def test_delayed_delivery(broker, official, topic):
    consumer = official.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    with ws_session(broker, _path("producer", topic)) as ws:
        ws.send_json({"payload": b64(b"later"), "deliverAfterMs": 1500, "context": "late"})
        ws.send_json({"payload": b64(b"now"), "context": "now"})
        assert {ws.recv_json()["result"], ws.recv_json()["result"]} == {"ok"}
    assert consumer.receive(10000).data() == b"now"
    with pytest.raises(pulsar.Timeout):
        consumer.receive(300)  # due 1.5 s after publishing (less one delayedDeliveryTickTimeMillis at most)
    assert consumer.receive(10000).data() == b"later"
