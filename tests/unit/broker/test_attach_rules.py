"""Producer and consumer attach rules and the produce path, on a real topic with no broker and no socket.

PRODUCER and SUBSCRIBE handlers translate their command into a spec and make one call on the topic
(attach_producer / attach_consumer); the rules live there: access modes and topic epochs (PIP-68),
producer names, maxProducersPerTopic, subscription types, exclusivity, maxConsumersPerSubscription.
A producer answers its own sends through its connection, in send order, and counts them itself.
"""
from __future__ import annotations

import asyncio

import pytest

from minipulsar.broker.errors import ConsumerBusyError, NotAllowedError, ProducerBusyError, ProducerFencedError
from minipulsar.broker.specs import ConsumerSpec, ProducerSpec, SubscriptionSpec
from minipulsar.proto import PulsarApi_pb2 as api
from tests.unit.broker.dispatch_harness import Harness, RecordingConnection, entry_bytes

SubType = api.CommandSubscribe.SubType


@pytest.fixture
async def harness(tmp_path):
    made = []

    async def make(**settings):
        made.append(await Harness(tmp_path / f"h{len(made)}", **settings).open())
        return made[-1]

    yield make
    for h in made:
        await h.close()


async def attach(topic, producer_id: int, mode: int = api.Shared, name: str | None = None, epoch: int | None = None):
    connection = RecordingConnection(f"p{producer_id}")
    producer = await topic.attach_producer(
        connection, ProducerSpec(producer_id, name, access_mode=mode, topic_epoch=epoch),
        registered=lambda p: None, queued=lambda p: None)
    return producer, connection


async def test_exclusive_producers_fence_others_and_move_the_topic_epoch(harness):
    topic = (await harness()).topic
    first, _ = await attach(topic, 1, api.Exclusive)
    assert first.topic_epoch == 0 and topic.access.exclusive is first
    with pytest.raises(ProducerFencedError):
        await attach(topic, 2, api.Exclusive)
    with pytest.raises(ProducerBusyError):
        await attach(topic, 3, api.Shared)
    first.close()
    second, _ = await attach(topic, 4, api.Exclusive)
    assert second.topic_epoch == 1
    with pytest.raises(ProducerFencedError):  # a reconnect bringing an older epoch
        await attach(topic, 5, api.ExclusiveWithFencing, epoch=0)


async def test_producer_names_and_the_producer_limit(harness):
    topic = (await harness(maxProducersPerTopic=2)).topic
    named, _ = await attach(topic, 1, name="orders")
    assert named.name == "orders"
    with pytest.raises(ProducerBusyError, match="already connected"):
        await attach(topic, 2, name="orders")
    generated, _ = await attach(topic, 3)
    assert generated.name.startswith("harness-")
    with pytest.raises(ProducerBusyError, match="max producers"):
        await attach(topic, 4)
    assert set(topic.producers) == {"orders", generated.name}


async def test_a_producer_answers_its_sends_in_order_and_counts_them(harness):
    h = await harness()
    producer, connection = await attach(h.topic, 7)
    data = [entry_bytes("k", i) for i in range(5)]
    for i, payload in enumerate(data):
        producer.publish(i, i, 1, payload)
    assert connection.pending_publishes == 5
    await h.topic.ledger.add_entry(entry_bytes("k", 99))  # durable after every earlier append
    assert [(pid, seq) for pid, seq, _ in connection.receipts] == [(7, i) for i in range(5)]
    assert [p.entry_id for _, _, p in connection.receipts] == [0, 1, 2, 3, 4]
    assert connection.pending_publishes == 0 and not connection.send_errors
    assert (producer.msg_in, producer.bytes_in) == (5, sum(map(len, data)))
    producer.close()
    assert (h.topic.msg_in_counter, h.topic.bytes_in_counter) == (5, sum(map(len, data)))


async def consumer(topic, consumer_id: int, sub_type: int, subscription: str = "sub"):
    connection = RecordingConnection(f"c{consumer_id}")
    attached = await topic.attach_consumer(
        connection, SubscriptionSpec(subscription, initial_position="earliest"),
        ConsumerSpec(consumer_id, f"c{consumer_id}", sub_type))
    connection.consumer = attached
    return attached


async def test_subscription_types_exclusivity_and_the_consumer_limit(harness):
    topic = (await harness(maxConsumersPerSubscription=2, subscriptionTypesEnabled="Exclusive,Shared")).topic
    await consumer(topic, 1, SubType.Exclusive, "excl")
    with pytest.raises(ConsumerBusyError, match="Exclusive consumer is already connected"):
        await consumer(topic, 2, SubType.Exclusive, "excl")
    await consumer(topic, 3, SubType.Shared)
    with pytest.raises(ConsumerBusyError, match="is of type Shared"):
        await consumer(topic, 4, SubType.Exclusive)
    await consumer(topic, 5, SubType.Shared)
    with pytest.raises(ConsumerBusyError, match="max consumers"):
        await consumer(topic, 6, SubType.Shared)
    with pytest.raises(NotAllowedError, match="doesn't support Failover"):
        await consumer(topic, 7, SubType.Failover, "other")
    assert [c.consumer_id for c in topic.subscriptions["sub"].consumers] == [3, 5]


async def test_two_subscribes_of_a_new_name_at_once_share_one_subscription(harness):
    """Two consumers joining a subscription that does not exist yet (two function instances starting
    together): both must end in the one subscription the topic keeps, not one of them in an orphan."""
    h = await harness()
    first, second = await asyncio.gather(h.topic.subscribe(SubscriptionSpec("together")),
                                         h.topic.subscribe(SubscriptionSpec("together")))
    assert first is second is h.topic.subscriptions["together"]


async def test_new_entries_wake_only_the_dispatchers_with_consumers(harness):
    """PersistentTopic.entry_waiters: a dispatcher joins with its first consumer, leaves with its last
    one, and a closed one is never woken (Pulsar notifies only the cursors waiting for entries)."""
    topic = (await harness()).topic
    (await consumer(topic, 9, SubType.Shared, "idle")).close()  # a subscription whose consumer left
    idle = topic.subscriptions["idle"].dispatcher
    assert idle is not None and not idle.closed and topic.entry_waiters == ()
    first = await consumer(topic, 1, SubType.Shared, "busy")
    busy = topic.subscriptions["busy"].dispatcher
    assert topic.entry_waiters == (busy,)
    second = await consumer(topic, 2, SubType.Shared, "busy")
    first.close()
    assert topic.entry_waiters == (busy,), "one consumer is left"
    second.close()
    assert topic.entry_waiters == ()
    await consumer(topic, 3, SubType.Failover, "other")
    assert topic.entry_waiters == (topic.subscriptions["other"].dispatcher,)
    await topic.remove_subscription("other")  # its consumer still attached
    assert topic.entry_waiters == (), "a stopped subscription's dispatcher is closed and leaves"
