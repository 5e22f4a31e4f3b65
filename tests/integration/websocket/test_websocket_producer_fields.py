"""The WebSocket producer's ProducerMessage fields and query parameters seen from the other side:
deliverAt, replicationClusters, compression with batching, sendTimeoutMillis (Pulsar's
ProducerMessage and ProducerHandler docs: each maps onto the Java client's TypedMessageBuilder /
ProducerBuilder setting of that name)."""
from __future__ import annotations

import base64

import pulsar
import pytest
import requests

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import parse_metadata, split_headers_and_payload
from tests.helpers import RawConnection, now_ms, wait_for
from tests.integration.websocket.wsclient import b64, ws_session

Type = api.BaseCommand.Type
QUOTA = "/admin/v2/namespaces/public/default/backlogQuota"


def _producer(topic: str, query: str = "") -> str:
    return f"producer/{topic.replace('://', '/')}{query}"


def _send_all(ws, payloads: list[bytes], **fields) -> list[dict]:
    """Send each payload (with fields) and return the ProducerAcks, all of which must be "ok"."""
    for payload in payloads:
        ws.send_json({"payload": b64(payload), **fields})
    answers = [ws.recv_json() for _ in payloads]
    assert [a["result"] for a in answers] == ["ok"] * len(payloads), answers
    return answers


def _stored_metadata(url: str, topic: str, count: int) -> list[api.MessageMetadata]:
    """The MessageMetadata of the first `count` entries of topic as the broker hands them to a
    consumer (a bare binary-protocol consumer: the official client does not show replicate_to or
    the compression codec)."""
    raw = RawConnection(url)
    raw.sock.settimeout(10)
    frames = []
    try:
        raw.connect()
        raw.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription="raw-reader", subType=api.CommandSubscribe.Exclusive, consumer_id=1,
            request_id=1, initialPosition=api.CommandSubscribe.Earliest)))
        assert raw.receive().type == Type.SUCCESS
        raw.send(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(consumer_id=1, messagePermits=1000)))
        while len(frames) < count:
            chunk = raw.sock.recv(1 << 20)
            assert chunk, "the broker closed the raw consumer"
            frames += [f for f in raw.decoder.feed(chunk) if f.command.type == Type.MESSAGE]
    finally:
        raw.close()
    return [parse_metadata(f.headers_and_payload, split_headers_and_payload(f.headers_and_payload))
            for f in frames]


def test_deliver_at_holds_the_message_until_its_time(broker_factory, topic):
    # strict: Pulsar's tracker may otherwise deliver up to one delayedDeliveryTickTimeMillis early
    broker = broker_factory(isDelayedDeliveryDeliverAtTimeStrict="true")
    client = pulsar.Client(broker.url, operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        deliver_at = now_ms() + 1500
        with ws_session(broker, _producer(topic)) as ws:
            _send_all(ws, [b"at"], deliverAt=deliver_at)
            _send_all(ws, [b"now"])
        assert consumer.receive(10000).data() == b"now"  # the later message is not held
        held = consumer.receive(10000)
        received_at = now_ms()
        assert held.data() == b"at"
        assert received_at >= deliver_at
    finally:
        client.close()


def test_deliver_at_in_the_past_is_delivered_at_once(broker, official, topic):
    consumer = official.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    with ws_session(broker, _producer(topic)) as ws:
        _send_all(ws, [b"overdue"], deliverAt=now_ms() - 60_000)
    assert consumer.receive(10000).data() == b"overdue"


def test_replication_clusters_are_stored_in_the_metadata(broker, official, topic):
    """replicationClusters becomes the message's replicate_to, as the Java client's
    TypedMessageBuilder.replicationClusters sets it; the broker keeps it for its replicators and
    still delivers locally (a cluster this one does not replicate to is no error: Pulsar's
    replicators only skip the messages that do not name them)."""
    consumer = official.subscribe(topic, "sub")
    with ws_session(broker, _producer(topic)) as ws:
        _send_all(ws, [b"restricted"], replicationClusters=["standalone", "elsewhere"])
        _send_all(ws, [b"anywhere"])
    assert [consumer.receive(10000).data() for _ in range(2)] == [b"restricted", b"anywhere"]
    restricted, anywhere = _stored_metadata(broker.url, topic, 2)
    assert list(restricted.replicate_to) == ["standalone", "elsewhere"]
    assert list(anywhere.replicate_to) == []


@pytest.mark.parametrize("name", ["ZLIB", "ZSTD", "SNAPPY", "NONE"])
def test_compressed_batches_read_by_the_official_client(broker, official, topic, name):
    query = f"?compressionType={name}&batchingEnabled=true&batchingMaxMessages=3&batchingMaxPublishDelay=60000"
    consumer = official.subscribe(topic, "sub")
    payloads = [f"message {i} ".encode() * 50 for i in range(6)]
    with ws_session(broker, _producer(topic, query)) as ws:
        answers = _send_all(ws, payloads)
    ids = [pulsar.MessageId.deserialize(base64.b64decode(a["messageId"])) for a in answers]
    assert [i.batch_index() for i in ids] == [0, 1, 2, 0, 1, 2]  # batchingMaxMessages closes each batch
    assert [consumer.receive(10000).data() for _ in payloads] == payloads
    for metadata in _stored_metadata(broker.url, topic, 2):
        assert metadata.compression == api.CompressionType.Value(name) and metadata.num_messages_in_batch == 3


def test_send_timeout_fails_a_send_the_broker_holds(broker_factory, topic):
    """A backlog over its quota (producer_request_hold) disconnects the producer and refuses it
    until the backlog shrinks; with sendTimeoutMillis=1000 a send made meanwhile fails within about
    a second (send-error:8) instead of after the default 30 s."""
    broker = broker_factory(backlogQuotaCheckIntervalInSeconds="1")
    client = pulsar.Client(broker.url, operation_timeout_seconds=10)
    try:
        client.subscribe(topic, "lagging")  # never acknowledges: its backlog grows
        with ws_session(broker, _producer(topic, "?sendTimeoutMillis=1000")) as ws:
            _send_all(ws, [b"x" * 1000])
            quota = {"limitSize": 100, "limitTime": -1, "policy": "producer_request_hold"}
            assert requests.post(broker.broker.web_service_url + QUOTA, json=quota, timeout=10).status_code == 204
            wait_for(lambda: not broker.topic_stats(topic)["publishers"], "the producer disconnected by the quota")
            ws.send_json({"payload": b64(b"held"), "context": "held"})
            answer = ws.recv_json(timeout=10)
        assert (answer["result"], answer["context"]) == ("send-error:8", "held")
        assert "timeout" in answer["errorMsg"], answer
    finally:
        client.close()

