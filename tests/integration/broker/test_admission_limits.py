"""Admission limits and the publish buffer (broker/limits.py, broker/publish_buffer.py) with the
official client, raw sockets and the admin REST API: each refusal carries Pulsar's error, and
what was admitted keeps working."""
import uuid

import pulsar
import pytest
import requests

from minipulsar.proto import BROKER_INITIATED_REQUEST_ID
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import encode_command
from tests.helpers import RawConnection, wait_for

Type = api.BaseCommand.Type


def _client(broker) -> pulsar.Client:
    return pulsar.Client(broker.url, operation_timeout_seconds=5, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def _namespace_topic(namespace: str, name: str) -> str:
    return f"persistent://{namespace}/{name}"


@pytest.fixture
def namespace(broker_factory):
    """A fresh namespace on a broker started by the test (created through the admin API)."""
    def create(broker) -> str:
        name = f"public/limits-{uuid.uuid4().hex[:8]}"
        response = requests.put(f"{broker.broker.web_service_url}/admin/v2/namespaces/{name}", timeout=10)
        assert response.status_code == 204, response.text
        return name
    return create


def test_connections_past_the_per_address_limit_get_not_allowed_then_close(broker_factory):
    broker = broker_factory(brokerMaxConnectionsPerIp=2)
    first, second = RawConnection(broker.url), RawConnection(broker.url)
    assert first.connect().type == Type.CONNECTED and second.connect().type == Type.CONNECTED

    refused = RawConnection(broker.url)
    reply = refused.receive()  # before any CONNECT, as Pulsar's ServerCnx.channelActive answers
    assert reply.type == Type.ERROR and reply.error.error == api.NotAllowedError
    assert reply.error.request_id == BROKER_INITIATED_REQUEST_ID
    assert "maximum number of connections on address 127.0.0.1" in reply.error.message
    assert refused.is_closed_by_peer()
    refused.close()
    assert broker.run(lambda: len(broker.broker.connections)) == 2

    first.close()
    wait_for(lambda: broker.run(lambda: len(broker.broker.connections)) == 1, "the closed connection to be released")
    again = RawConnection(broker.url)
    assert again.connect().type == Type.CONNECTED
    for conn in (second, again):
        conn.close()


def test_the_broker_wide_connection_limit_refuses_the_official_client_too(broker_factory, topic):
    broker = broker_factory(brokerMaxConnections=1)
    holder = RawConnection(broker.url)
    assert holder.connect().type == Type.CONNECTED
    client = _client(broker)
    with pytest.raises(pulsar.PulsarException):
        client.create_producer(topic, send_timeout_millis=2000)
    client.close()
    holder.close()
    wait_for(lambda: broker.run(lambda: len(broker.broker.connections)) == 0, "the holder to be released")
    client = _client(broker)
    client.create_producer(topic).send(b"admitted")
    client.close()


def test_topics_past_max_topics_per_namespace_are_refused_by_both_doors(broker_factory, namespace):
    broker = broker_factory(maxTopicsPerNamespace=2)
    ns = namespace(broker)
    web = broker.broker.web_service_url
    client = _client(broker)
    for name in ("a", "b"):
        client.create_producer(_namespace_topic(ns, name))
    with pytest.raises(pulsar.NotAllowedError):
        client.create_producer(_namespace_topic(ns, "c"))
    response = requests.put(f"{web}/admin/v2/persistent/{ns}/c", timeout=10)
    assert response.status_code == 412 and response.json()["reason"] == "Exceed maximum number of topics in namespace."
    client.create_producer(_namespace_topic(ns, "a")).send(b"an existing topic is not a new one")

    # The namespace's own policy overrides the setting; a partitioned topic counts its partitions.
    assert requests.post(f"{web}/admin/v2/namespaces/{ns}/maxTopicsPerNamespace", json=4, timeout=10).status_code == 204
    assert requests.get(f"{web}/admin/v2/namespaces/{ns}/maxTopicsPerNamespace", timeout=10).json() == 4
    response = requests.put(f"{web}/admin/v2/persistent/{ns}/wide/partitions", json=3, timeout=10)
    assert response.status_code == 412
    assert requests.put(f"{web}/admin/v2/persistent/{ns}/pair/partitions", json=2, timeout=10).status_code == 204
    producer = client.create_producer(_namespace_topic(ns, "pair"))  # its partitions were counted already
    producer.send(b"to a partition")
    client.close()


def test_producers_past_max_producers_per_topic_get_producer_busy(broker_factory, namespace):
    broker = broker_factory(maxProducersPerTopic=1)
    ns = namespace(broker)
    topic = _namespace_topic(ns, "t")
    client = _client(broker)
    first = client.create_producer(topic)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    first.close()
    second = client.create_producer(topic)  # the room the first left

    web = broker.broker.web_service_url
    assert requests.post(f"{web}/admin/v2/namespaces/{ns}/maxProducersPerTopic", json=2, timeout=10).status_code == 204
    third = client.create_producer(topic)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    assert requests.delete(f"{web}/admin/v2/namespaces/{ns}/maxProducersPerTopic", timeout=10).status_code == 204
    with pytest.raises(pulsar.ProducerBusy):  # back to the broker's setting, 1: two are attached
        client.create_producer(topic)
    for producer in (second, third):
        producer.send(b"still publishing")
    client.close()


def test_consumers_past_max_consumers_per_subscription_get_consumer_busy(broker_factory, topic):
    broker = broker_factory(maxConsumersPerSubscription=2)
    client = _client(broker)
    consumers = [client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared) for _ in range(2)]
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    other = client.subscribe(topic, "other", consumer_type=pulsar.ConsumerType.Shared)  # per subscription
    producer = client.create_producer(topic)
    producer.send(b"m")
    assert other.receive(5000).data() == b"m"
    consumers[0].close()
    client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    client.close()


def test_a_full_publish_buffer_pauses_reads_and_loses_nothing(broker_factory, topic):
    """1 MB of publish buffer against bursts of 256 KB messages: the buffer fills (reads pause on
    every connection), drains, and every message is stored once, in order."""
    broker = broker_factory(maxMessagePublishBufferSizeInMB=1)
    client = _client(broker)
    consumer = client.subscribe(topic, "all")
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True, max_pending_messages=64)
    payloads = [i.to_bytes(4, "big") * (64 * 1024) for i in range(60)]
    for payload in payloads:
        producer.send_async(payload, None)
    producer.flush()
    assert broker.run(lambda: broker.broker.publish_buffer.times_full) >= 1
    assert broker.run(lambda: (broker.broker.publish_buffer.pending_bytes, broker.broker.publish_buffer.full)) == (0, False)
    received = []
    for _ in payloads:
        message = consumer.receive(10000)
        received.append(message.data())
        consumer.acknowledge(message)
    assert received == payloads
    client.close()


def test_partitioned_metadata_past_max_concurrent_lookups_gets_too_many_requests(broker_factory, topic):
    """Two PARTITIONED_METADATA in one write, each creating partitioned metadata (a write to disk):
    with one lookup allowed in flight the second is answered TooManyRequests, which clients retry;
    a third, sent after the first was answered, succeeds."""
    broker = broker_factory(maxConcurrentLookupRequest=1, allowAutoTopicCreationType="partitioned")
    conn = RawConnection(broker.url)
    assert conn.connect().type == Type.CONNECTED

    def metadata(request_id: int, name: str) -> bytes:
        return encode_command(api.BaseCommand(type=Type.PARTITIONED_METADATA, partitionMetadata=api.CommandPartitionedTopicMetadata(
            topic=name, request_id=request_id)))

    conn.send_raw(metadata(1, topic + "-a") + metadata(2, topic + "-b"))
    replies = {reply.partitionMetadataResponse.request_id: reply.partitionMetadataResponse
               for reply in (conn.receive(), conn.receive())}
    assert replies[1].response == api.CommandPartitionedTopicMetadataResponse.Success
    assert replies[2].response == api.CommandPartitionedTopicMetadataResponse.Failed
    assert replies[2].error == api.TooManyRequests
    conn.send_raw(metadata(3, topic + "-b"))
    assert conn.receive().partitionMetadataResponse.partitions == 1
    conn.close()
