"""The bundled client against a real minipulsar broker: producing and consuming."""
import asyncio
import time

import pytest

from minipulsar import client as mp
from minipulsar.client.exceptions import (AlreadyClosed, ConsumerBusy, MessageTooBig, ProducerBusy, ProducerQueueIsFull,
                               Timeout)
from tests.helpers import wait_for_async


async def test_send_receive_with_all_message_fields(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub")
    producer = await bundled.create_producer(topic, producer_name="p1")
    now = int(time.time() * 1000)
    message_id = await producer.send(b"hello", properties={"a": "1", "b": "2"}, partition_key="pk",
                                     ordering_key="ok", event_timestamp=now - 5000)
    msg = await consumer.receive(5000)
    assert msg.data() == b"hello" and msg.value() == b"hello"
    assert msg.properties() == {"a": "1", "b": "2"}
    assert msg.partition_key() == "pk" and msg.ordering_key() == "ok"
    assert msg.event_timestamp() == now - 5000
    assert abs(msg.publish_timestamp() - now) < 10_000
    assert msg.topic_name() == topic and msg.redelivery_count() == 0
    assert msg.message_id() == message_id and msg.producer_name() == "p1"
    assert producer.producer_name() == "p1" and producer.topic() == topic
    await consumer.acknowledge(msg)


async def test_broker_assigns_a_producer_name(bundled, topic):
    producer = await bundled.create_producer(topic)
    assert producer.producer_name().startswith("standalone-")


@pytest.mark.parametrize("compression", list(mp.CompressionType), ids=lambda c: c.name)
async def test_batching_with_compression_keeps_order(bundled, topic, compression):
    consumer = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.Shared)
    producer = await bundled.create_producer(topic, batching_enabled=True, batching_max_messages=50,
                                             batching_max_publish_delay_ms=5, compression_type=compression,
                                             block_if_queue_full=True)
    n = 500
    futures = [await producer.send_async(f"message-{i}".encode() * 3, properties={"i": str(i)}) for i in range(n)]
    ids = await asyncio.gather(*futures)
    assert len({i.entry_key() for i in ids}) >= n // 50
    assert all(i.batch_index() >= 0 for i in ids)
    got = []
    while len(got) < n:
        msg = await consumer.receive(5000)
        got.append(int(msg.properties()["i"]))
        assert msg.data() == f"message-{got[-1]}".encode() * 3
        await consumer.acknowledge(msg)
    assert got == list(range(n))


async def test_send_async_pipelines_and_calls_back(bundled, topic):
    producer = await bundled.create_producer(topic)
    seen = []
    futures = [await producer.send_async(str(i).encode(), lambda exc, mid: seen.append((exc, mid))) for i in range(100)]
    ids = await asyncio.gather(*futures)
    assert ids == sorted(ids) and len(set(ids)) == 100
    assert [mid for _, mid in seen] == ids and all(exc is None for exc, _ in seen)


async def test_flush_sends_the_open_batch(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub")
    producer = await bundled.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=60_000)
    futures = [await producer.send_async(b"x") for _ in range(3)]
    assert not any(f.done() for f in futures)
    await producer.flush()
    assert all(f.done() for f in futures)
    assert (await consumer.receive(2000)).data() == b"x"


async def test_key_based_batching_groups_by_key(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub")
    producer = await bundled.create_producer(topic, batching_enabled=True, batching_type=mp.BatchingType.KeyBased,
                                             batching_max_publish_delay_ms=50)
    futures = [await producer.send_async(f"{k}{i}".encode(), partition_key=k) for i in range(3) for k in "ab"]
    ids = await asyncio.gather(*futures)
    by_entry = {}
    for fut_id, key in zip(ids, [k for _ in range(3) for k in "ab"]):
        by_entry.setdefault(fut_id.entry_key(), set()).add(key)
    assert len(by_entry) == 2 and all(len(keys) == 1 for keys in by_entry.values())
    got = [await consumer.receive(2000) for _ in range(6)]
    for msg in got:
        assert msg.data().decode().startswith(msg.partition_key())


async def test_queue_full_raises_or_blocks(bundled, topic):
    producer = await bundled.create_producer(topic, max_pending_messages=2, batching_enabled=True,
                                             batching_max_publish_delay_ms=200)
    await producer.send_async(b"1")
    await producer.send_async(b"2")
    with pytest.raises(ProducerQueueIsFull):
        await producer.send_async(b"3")
    blocking = await bundled.create_producer(topic, max_pending_messages=2, block_if_queue_full=True,
                                             batching_enabled=True, batching_max_publish_delay_ms=50)
    futures = [await blocking.send_async(str(i).encode()) for i in range(6)]
    assert len(await asyncio.gather(*futures)) == 6


async def test_message_too_big(broker_factory, topic):
    broker = broker_factory(maxMessageSize=64 * 1024)
    async with mp.Client(broker.url, operation_timeout_seconds=10) as c:
        producer = await c.create_producer(topic)
        with pytest.raises(MessageTooBig):
            await producer.send(b"x" * (65 * 1024))
        assert (await producer.send(b"x" * 1000)).entry_id() == 0


async def test_string_schema_and_async_iteration(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub", schema=mp.StringSchema())
    producer = await bundled.create_producer(topic, schema=mp.StringSchema())
    for word in ("α", "β", "γ"):
        await producer.send(word)
    got = []
    async for msg in consumer:
        got.append(msg.value())
        if len(got) == 3:
            break
    assert got == ["α", "β", "γ"]


async def test_receive_timeout_and_closed(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub")
    started = time.monotonic()
    with pytest.raises(Timeout):
        await consumer.receive(200)
    assert 0.15 < time.monotonic() - started < 2
    await consumer.close()
    with pytest.raises(AlreadyClosed):
        await consumer.receive(10)


async def test_producer_busy_and_consumer_busy(bundled, topic):
    await bundled.create_producer(topic, producer_name="same")
    with pytest.raises(ProducerBusy):
        await bundled.create_producer(topic, producer_name="same")
    await bundled.subscribe(topic, "excl")
    with pytest.raises(ConsumerBusy):
        await bundled.subscribe(topic, "excl")


async def test_closed_producer_refuses(bundled, topic):
    producer = await bundled.create_producer(topic)
    await producer.close()
    with pytest.raises(AlreadyClosed):
        await producer.send(b"x")


async def test_subscribe_to_a_topic_list(bundled, topic):
    topics = [topic + "-a", topic + "-b"]
    consumer = await bundled.subscribe(topics, "sub")
    for t in topics:
        producer = await bundled.create_producer(t)
        await producer.send(t.encode())
    got = {(await consumer.receive(3000)).topic_name() for _ in range(2)}
    assert got == set(topics)


async def test_flow_control_grants_half_queue_refills(bundled, topic, broker):
    consumer = await bundled.subscribe(topic, "sub", receiver_queue_size=10)
    producer = await bundled.create_producer(topic)
    for i in range(30):
        await producer.send_async(str(i).encode())
    await producer.flush()
    await wait_for_async(lambda: broker.subscription_stats(topic, "sub")["consumers"][0]["msgOutCounter"] >= 10,
                         "the broker to spend the first FLOW's 10 permits")
    stats = broker.run(lambda: broker.broker.stats())[topic]["subscriptions"]["sub"]
    assert stats["consumers"][0]["msgOutCounter"] == 10  # only the first FLOW's worth
    got = [int((await consumer.receive(2000)).data()) for _ in range(30)]
    assert got == list(range(30))


async def test_get_last_message_id_and_unsubscribe(bundled, topic, broker):
    consumer = await bundled.subscribe(topic, "sub")
    producer = await bundled.create_producer(topic)
    last = None
    for i in range(3):
        last = await producer.send(b"x")
    assert await consumer.get_last_message_id() == last
    await consumer.unsubscribe()
    subs = broker.run(lambda: broker.broker.stats())[topic]["subscriptions"]
    assert "sub" not in subs


async def test_message_listener(bundled, topic):
    got = asyncio.Queue()

    async def listener(consumer, msg):
        await consumer.acknowledge(msg)
        await got.put(msg.data())

    await bundled.subscribe(topic, "sub", message_listener=listener)
    producer = await bundled.create_producer(topic)
    await producer.send(b"via listener")
    assert await asyncio.wait_for(got.get(), 3) == b"via listener"


async def test_sequence_ids_user_given_and_initial(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub")
    producer = await bundled.create_producer(topic, initial_sequence_id=99)
    await producer.send(b"a")
    await producer.send(b"b", sequence_id=500)
    await producer.send(b"c")
    got = [(await consumer.receive(2000)).sequence_id() for _ in range(3)]
    assert got == [100, 500, 101]
    assert producer.last_sequence_id() == 500
