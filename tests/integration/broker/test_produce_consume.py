"""Round trips through a real broker with the official client: keys, properties, event time,
batching with every compression type, many topics, large messages."""
import time

import pulsar
import pytest

COMPRESSIONS = [
    pulsar.CompressionType.NONE,
    pulsar.CompressionType.LZ4,
    pulsar.CompressionType.ZLib,
    pulsar.CompressionType.ZSTD,
    pulsar.CompressionType.SNAPPY,
]


def test_keys_properties_event_time(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, producer_name="p1")
    now = int(time.time() * 1000)
    producer.send(b"hello", properties={"a": "1", "b": "2"}, partition_key="pk", ordering_key="ok",
                  event_timestamp=now - 5000)
    msg = consumer.receive(5000)
    assert msg.data() == b"hello"
    assert msg.properties() == {"a": "1", "b": "2"}
    assert msg.partition_key() == "pk"
    assert msg.ordering_key() == "ok"
    assert msg.event_timestamp() == now - 5000
    assert abs(msg.publish_timestamp() - now) < 10_000
    assert msg.topic_name() == topic
    assert msg.redelivery_count() == 0
    consumer.acknowledge(msg)


@pytest.mark.parametrize("compression", COMPRESSIONS, ids=lambda c: str(c).split(".")[-1])
def test_batching_with_compression(client, topic, compression):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=50, batching_max_publish_delay_ms=5,
        compression_type=compression)
    n = 500
    for i in range(n):
        producer.send_async(f"message-{i}".encode() * 3, None, properties={"i": str(i)})
    producer.flush()
    got = []
    while len(got) < n:
        msg = consumer.receive(5000)
        got.append(int(msg.properties()["i"]))
        assert msg.data() == f"message-{got[-1]}".encode() * 3
        consumer.acknowledge(msg)
    assert got == list(range(n))


def test_batches_are_split_with_batch_indexes(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=1000)
    for i in range(10):
        producer.send_async(str(i).encode(), None)
    producer.flush()
    ids = []
    for i in range(10):
        msg = consumer.receive(5000)
        assert msg.data() == str(i).encode()
        ids.append(msg.message_id())
        consumer.acknowledge(msg)
    assert len({(m.ledger_id(), m.entry_id()) for m in ids}) == 1
    assert [m.batch_index() for m in ids] == list(range(10))


def test_one_hundred_topics_at_once(client, topic):
    topics = [f"{topic}-{i}" for i in range(100)]
    consumers = [client.subscribe(t, "sub") for t in topics]
    producers = [client.create_producer(t) for t in topics]
    for i, p in enumerate(producers):
        p.send_async(f"to-{i}".encode(), None)
    for p in producers:
        p.flush()
    for i, c in enumerate(consumers):
        assert c.receive(5000).data() == f"to-{i}".encode()


def test_four_mib_message_passes_and_six_mib_is_rejected(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, chunking_enabled=False)
    big = bytes(range(256)) * (4 * 1024 * 1024 // 256)
    producer.send(big)
    assert consumer.receive(10000).data() == big
    with pytest.raises(pulsar.MessageTooBig):
        producer.send(b"x" * (6 * 1024 * 1024))
    producer.send(b"still fine")
    assert consumer.receive(5000).data() == b"still fine"
