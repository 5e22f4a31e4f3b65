"""Subscription types, acknowledgement, redelivery, dead letters and seek with the bundled client."""
import asyncio
import time

import pytest

from minipulsar import client as mp
from minipulsar.client.exceptions import CumulativeAcknowledgementNotAllowedError, Timeout
from tests.helpers import wait_for_async


async def _produce(c, topic, n, **kw):
    producer = await c.create_producer(topic, **kw)
    futures = [await producer.send_async(str(i).encode(), partition_key=f"key-{i % 7}") for i in range(n)]
    ids = await asyncio.gather(*futures)
    return producer, ids


async def _drain(consumer, timeout_ms=300, ack=True):
    got = []
    while True:
        try:
            msg = await consumer.receive(timeout_ms)
        except Timeout:
            return got
        got.append(msg)
        if ack:
            await consumer.acknowledge(msg)


async def test_shared_consumers_split_the_work(bundled, topic):
    c1 = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.Shared, receiver_queue_size=10)
    c2 = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.Shared, receiver_queue_size=10)
    await _produce(bundled, topic, 100)
    got1, got2 = await asyncio.gather(_drain(c1), _drain(c2))
    assert got1 and got2
    assert sorted(int(m.data()) for m in got1 + got2) == list(range(100))


async def test_failover_switches_to_the_standby(bundled, topic):
    c1 = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.Failover, consumer_name="a")
    c2 = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.Failover, consumer_name="b")
    producer, _ = await _produce(bundled, topic, 10)
    first = await _drain(c1) + await _drain(c2)
    assert sorted(int(m.data()) for m in first) == list(range(10))
    active, standby = (c1, c2) if any(m._owner is c1._impls[0] for m in first) else (c2, c1)
    await active.close()
    await producer.send(b"after")
    assert (await standby.receive(3000)).data() == b"after"


async def _key_consumers(c, topic, sub_type, **kw):
    consumers = [await c.subscribe(topic, "sub", consumer_type=sub_type, consumer_name=f"c{i}", **kw)
                 for i in range(2)]
    await _produce(c, topic, 140)
    results = await asyncio.gather(*(_drain(x) for x in consumers))
    keys = [{m.partition_key() for m in got} for got in results]
    assert sum(len(got) for got in results) == 140 and all(results), "both consumers serve keys"
    assert not keys[0] & keys[1], "a key must go to one consumer only"
    for got in results:  # per-key order holds
        by_key = {}
        for m in got:
            by_key.setdefault(m.partition_key(), []).append(int(m.data()))
        assert all(v == sorted(v) for v in by_key.values())


async def test_key_shared(bundled, topic):
    await _key_consumers(bundled, topic, mp.ConsumerType.KeyShared)


async def test_key_shared_sticky_ranges_encoded(bundled, topic):
    policy = mp.ConsumerKeySharedPolicy(mp.KeySharedMode.Sticky, sticky_ranges=[(0, 65535)])
    consumer = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.KeyShared,
                                       key_shared_policy=policy)
    await _produce(bundled, topic, 5)
    assert len(await _drain(consumer)) == 5


async def test_key_failover_end_to_end(bundled, topic):
    await _key_consumers(bundled, topic, mp.ConsumerType.KeyFailover)


async def test_cumulative_ack(bundled, topic, broker):
    consumer = await bundled.subscribe(topic, "sub")
    await _produce(bundled, topic, 10)
    msgs = [await consumer.receive(2000) for _ in range(10)]
    await consumer.acknowledge_cumulative(msgs[-1])
    await wait_for_async(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 0,
                         "the cumulative ack to empty the backlog")
    stats = broker.run(lambda: broker.broker.stats())[topic]["subscriptions"]["sub"]
    assert stats["msgBacklog"] == 0


async def test_cumulative_ack_refused_on_shared(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.Shared)
    await _produce(bundled, topic, 1)
    msg = await consumer.receive(2000)
    with pytest.raises(CumulativeAcknowledgementNotAllowedError):
        await consumer.acknowledge_cumulative(msg)


async def test_acks_survive_reconnect_of_consumer(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub")
    await _produce(bundled, topic, 6)
    for _ in range(3):
        await consumer.acknowledge(await consumer.receive(2000))
    await consumer.close()
    again = await bundled.subscribe(topic, "sub")
    assert [int(m.data()) for m in await _drain(again)] == [3, 4, 5]


@pytest.mark.parametrize("sub_type", [mp.ConsumerType.Shared, mp.ConsumerType.Exclusive], ids=lambda t: t.name)
async def test_negative_ack_redelivers_with_count(bundled, topic, sub_type):
    consumer = await bundled.subscribe(topic, "sub", consumer_type=sub_type, negative_ack_redelivery_delay_ms=100)
    await _produce(bundled, topic, 1)
    msg = await consumer.receive(2000)
    assert msg.redelivery_count() == 0
    await consumer.negative_acknowledge(msg)
    again = await consumer.receive(3000)
    # Pulsar counts redeliveries on Shared and Key_Shared only (Exclusive's tracker is disabled).
    expected = 1 if sub_type == mp.ConsumerType.Shared else 0
    assert again.data() == msg.data() and again.redelivery_count() == expected


async def test_unacked_timeout_redelivers(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.Shared,
                                       unacked_messages_timeout_ms=1000)
    await _produce(bundled, topic, 1)
    first = await consumer.receive(2000)
    started = time.monotonic()
    again = await consumer.receive(5000)
    assert again.data() == first.data() and time.monotonic() - started >= 0.8
    await consumer.acknowledge(again)
    with pytest.raises(Timeout):
        await consumer.receive(1800)


async def test_redeliver_unacknowledged_messages(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub")
    await _produce(bundled, topic, 5)
    first = [int((await consumer.receive(2000)).data()) for _ in range(2)]
    await consumer.redeliver_unacknowledged_messages()
    got = [int(m.data()) for m in await _drain(consumer)]
    assert first == [0, 1] and got == [0, 1, 2, 3, 4]


async def test_dead_letter_topic_after_max_redeliveries(bundled, topic):
    dlq_topic = topic + "-sub-DLQ"
    dlq = await bundled.subscribe(dlq_topic, "dlq-sub")
    policy = mp.ConsumerDeadLetterPolicy(max_redeliver_count=2)
    consumer = await bundled.subscribe(topic, "sub", consumer_type=mp.ConsumerType.Shared,
                                       negative_ack_redelivery_delay_ms=100, dead_letter_policy=policy)
    _, ids = await _produce(bundled, topic, 1)
    counts = []
    for _ in range(3):
        msg = await consumer.receive(3000)
        counts.append(msg.redelivery_count())
        await consumer.negative_acknowledge(msg)
    assert counts == [0, 1, 2]
    dead = await dlq.receive(5000)
    assert dead.data() == b"0" and dead.partition_key() == "key-0"
    assert dead.properties()["REAL_TOPIC"] == topic
    assert dead.properties()["ORIGIN_MESSAGE_ID"].startswith(f"{ids[0].ledger_id()}:{ids[0].entry_id()}")
    with pytest.raises(Timeout):
        await consumer.receive(800)


async def test_seek_to_message_id_and_time(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub")
    _, ids = await _produce(bundled, topic, 10)
    await _drain(consumer)
    await consumer.seek(ids[4])
    assert [int(m.data()) for m in await _drain(consumer, 1000)] == list(range(4, 10))
    await consumer.seek(0)
    assert len(await _drain(consumer, 1000)) == 10
    await consumer.seek(mp.MessageId.earliest)
    assert int((await consumer.receive(3000)).data()) == 0


async def test_batch_index_ack(bundled, topic, broker):
    consumer = await bundled.subscribe(topic, "sub", batch_index_ack_enabled=True)
    await _produce(bundled, topic, 4, batching_enabled=True, batching_max_publish_delay_ms=50)
    msgs = [await consumer.receive(2000) for _ in range(4)]
    assert len({m.message_id().entry_key() for m in msgs}) == 1
    for m in msgs[:3]:
        await consumer.acknowledge(m)
    # With acknowledgmentAtBatchIndexLevelEnabled off (the default) the broker keeps no state for
    # index acks to wait on, so make their arrival an event: send the grouped acks now, then one
    # round trip on the same connection (the broker handles a connection's commands in order).
    consumer._impls[0].acks.flush()
    await consumer.get_last_message_id()
    stats = broker.run(lambda: broker.broker.stats())[topic]["subscriptions"]["sub"]
    assert stats["msgBacklog"] == 1  # the entry waits for its last index
    await consumer.acknowledge(msgs[3])
    await wait_for_async(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 0,
                         "the last index's ack to acknowledge the entry")
    stats = broker.run(lambda: broker.broker.stats())[topic]["subscriptions"]["sub"]
    assert stats["msgBacklog"] == 0


async def test_key_failover_with_key_based_batches(bundled, topic):
    consumers = [await bundled.subscribe(topic, "kf", consumer_type=mp.ConsumerType.KeyFailover,
                                         consumer_name=f"c{i}") for i in range(2)]
    producer = await bundled.create_producer(topic, batching_enabled=True, batching_type=mp.BatchingType.KeyBased,
                                             batching_max_publish_delay_ms=5)
    futures = [await producer.send_async(f"{i}".encode(), ordering_key=f"ok-{i % 9}") for i in range(270)]
    ids = await asyncio.gather(*futures)
    assert len({i.entry_key() for i in ids}) < 270  # batched
    results = await asyncio.gather(*(_drain(c) for c in consumers))
    keys = [{m.ordering_key() for m in got} for got in results]
    assert sum(map(len, results)) == 270 and all(results) and not keys[0] & keys[1]
    for got in results:
        by_key = {}
        for m in got:
            by_key.setdefault(m.ordering_key(), []).append(int(m.data()))
        assert all(v == sorted(v) for v in by_key.values())
