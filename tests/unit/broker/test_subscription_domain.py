"""What handlers delegate to the subscription, reached without sockets: acknowledgements with
batch-index ack sets, seek by message id and by publish time, the last message id, and the
dispatcher's redelivery counts. A real topic, ledger and cursor (tests/unit/broker/dispatch_harness.py)."""
import asyncio

import pytest

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload
from minipulsar.storage import EARLIEST, Position
from tests.unit.broker.dispatch_harness import Harness, settle

EXCLUSIVE = api.CommandSubscribe.Exclusive
SHARED = api.CommandSubscribe.Shared
ALL_BUT_INDEX_0 = [0b1110]  # a 4-message batch, index 0 acknowledged (a set bit = not yet acked)


@pytest.fixture
async def make_harness(tmp_path):
    made = []

    async def make(**settings) -> Harness:
        harness = await Harness(tmp_path / f"h{len(made)}", **settings).open()
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.close()


async def publish(harness, publish_time: int = 1, batch: int = 0) -> Position:
    metadata = api.MessageMetadata(producer_name="test", sequence_id=0, publish_time=publish_time)
    if batch:
        metadata.num_messages_in_batch = batch
    return await harness.topic.publish(build_headers_and_payload(metadata, b"payload"))


async def consume(harness, sub_type=EXCLUSIVE):
    subscription = await harness.subscription()
    consumer = harness.consumer(subscription, "c1", sub_type)
    subscription.add_consumer(consumer)
    await settle(subscription.dispatcher)
    return subscription, consumer


async def test_partial_batch_ack_leaves_the_entry_pending_without_batch_index_acks(make_harness):
    harness = await make_harness()
    first = await publish(harness, batch=4)
    subscription, consumer = await consume(harness)
    subscription.acknowledge_message_ids(consumer, [(first, ALL_BUT_INDEX_0)], cumulative=False)
    assert not subscription.cursor.is_deleted(first)
    subscription.acknowledge_message_ids(consumer, [(first, [])], cumulative=False)
    assert subscription.cursor.is_deleted(first)


async def test_batch_index_acks_merge_until_no_index_is_left(make_harness):
    harness = await make_harness(acknowledgmentAtBatchIndexLevelEnabled="true")
    first = await publish(harness, batch=4)
    subscription, consumer = await consume(harness)
    subscription.acknowledge_message_ids(consumer, [(first, ALL_BUT_INDEX_0)], cumulative=False)
    assert not subscription.cursor.is_deleted(first)
    assert subscription.batch_acks.unacked_count(first, 4) == 3
    subscription.acknowledge_message_ids(consumer, [(first, [0b0001])], cumulative=False)
    assert subscription.cursor.is_deleted(first) and len(subscription.batch_acks) == 0


async def test_cumulative_ack_inside_a_batch_acknowledges_the_entries_before_it(make_harness):
    harness = await make_harness(acknowledgmentAtBatchIndexLevelEnabled="true")
    before = await publish(harness)
    batch = await publish(harness, batch=4)
    subscription, consumer = await consume(harness)
    subscription.acknowledge_message_ids(consumer, [(batch, ALL_BUT_INDEX_0)], cumulative=True)
    assert subscription.cursor.mark_delete_position == before
    assert subscription.batch_acks.unacked_count(batch, 4) == 3


async def test_seek_by_message_id_clamps_and_disconnects(make_harness):
    harness = await make_harness()
    positions = [await publish(harness) for _ in range(3)]
    subscription, consumer = await consume(harness)
    subscription.reset_cursor(positions[1])
    assert consumer.closed and subscription.consumers == []
    assert subscription.cursor.read_position == positions[1]
    subscription.reset_cursor(EARLIEST)
    assert subscription.cursor.read_position == positions[0]


async def test_seek_by_publish_time_goes_to_the_first_entry_at_or_after_it(make_harness):
    harness = await make_harness()
    positions = [await publish(harness, publish_time=t) for t in (100, 200, 300)]
    subscription, _ = await consume(harness)
    assert await subscription.reset_cursor_by_timestamp(250) == positions[2]
    assert await subscription.reset_cursor_by_timestamp(200) == positions[1]  # published at that very ms
    assert await subscription.reset_cursor_by_timestamp(50) == positions[0]


async def test_last_message_id_carries_the_batch_index_and_the_mark_delete(make_harness):
    harness = await make_harness()
    first = await publish(harness)
    last = await publish(harness, batch=5)
    subscription, consumer = await consume(harness)
    subscription.acknowledge(consumer, [first])
    answer = await subscription.get_last_message_id()
    assert answer == (last, 4, first)


async def test_redelivery_counts_grow_on_redelivery_and_go_with_the_ack(make_harness):
    harness = await make_harness()
    position = await publish(harness)
    subscription, consumer = await consume(harness, SHARED)
    tracker = subscription.dispatcher.redelivery_tracker
    assert consumer.connection.received == [position] and tracker.count(position) == 0
    consumer.redeliver([position])
    await settle(subscription.dispatcher)
    consumer.redeliver(None)
    await settle(subscription.dispatcher)
    assert consumer.connection.received == [position] * 3 and tracker.count(position) == 2
    subscription.acknowledge(consumer, [position])
    assert tracker.count(position) == 0 and len(tracker) == 0


async def test_reads_served_from_the_entry_cache_let_the_event_loop_run_between_them(make_harness):
    """A read the tail cache serves never suspends; the read loop yields after each one, so FLOWs,
    acks and other topics are handled between reads, not once every permit is spent. The consumer
    is attached (its cursor active) before the entries come, so the cache holds them."""
    harness = await make_harness()
    subscription = await harness.subscription()
    consumer = harness.consumer(subscription, "c1", EXCLUSIVE, permits=0)
    subscription.add_consumer(consumer)
    for _ in range(300):
        await publish(harness)
    assert harness.topic.ledger.cache_size > 0
    consumer.flow(1000)  # starts the read loop: its first step runs before ours
    received_when_we_ran = []
    asyncio.get_running_loop().call_soon(lambda: received_when_we_ran.append(len(consumer.connection.received)))
    await settle(subscription.dispatcher)
    assert received_when_we_ran == [100]  # one read of dispatcherMaxReadBatchSize, then our turn
    assert len(consumer.connection.received) == 300


async def test_a_cancelled_marker_write_does_not_fail_the_producers_sharing_its_group_commit(make_harness):
    """topic.publish (markers) awaits the durable future it shares with producers' appends."""
    harness = await make_harness()
    marker = asyncio.ensure_future(publish(harness))
    await asyncio.sleep(0)
    position, durable = harness.topic.append(b"from a producer")
    marker.cancel()
    await asyncio.wait_for(asyncio.wait([durable]), 5)
    assert not durable.cancelled() and durable.exception() is None
    assert await asyncio.wait_for(publish(harness), 5) == Position(position.ledger_id, position.entry_id + 1)
