"""PIP-282's worked example and its two out-of-order flows, step by step, at the dispatcher level
with the exact positions of PIP-282's text. The selector is a fixed table, as the
PIP assumes ("the selector will return c1 if key-a and c2 if key-b")."""
import pytest

from minipulsar.broker.dispatchers.last_sent import LastSentTracker
from minipulsar.broker.dispatchers.sticky_key import StickyKeyDispatcher
from minipulsar.broker.selectors.base import StickyKeyConsumerSelector
from minipulsar.broker.sticky_key import murmur3_31
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Position
from tests.unit.broker.dispatch_harness import Harness, settle

P = Position
KEY_SHARED = api.CommandSubscribe.Key_Shared


def test_last_sent_position_worked_example():
    tracker = LastSentTracker(P(3, 0), lambda p: P(p.ledger_id, p.entry_id + 1), lambda p: False)
    for entry in (1, 2, 3, 5, 8, 9, 10):
        tracker.mark_sent(P(3, entry))
    assert tracker.last_sent == P(3, 3)
    assert tracker.individually_sent.ranges() == [(P(3, 4), P(3, 5)), (P(3, 7), P(3, 10))]
    tracker.mark_sent(P(3, 7))
    assert tracker.last_sent == P(3, 3)
    assert tracker.individually_sent.ranges() == [(P(3, 4), P(3, 5)), (P(3, 6), P(3, 10))]
    tracker.mark_sent(P(3, 6))
    assert tracker.last_sent == P(3, 3)
    assert tracker.individually_sent.ranges() == [(P(3, 4), P(3, 10))]
    tracker.mark_sent(P(3, 4))
    assert tracker.last_sent == P(3, 10)
    assert tracker.individually_sent.ranges() == []


class TableSelector(StickyKeyConsumerSelector):
    """Owner per key, set by the test."""

    def __init__(self):
        self.owner: dict[int, object] = {}

    def assign(self, key: str, consumer) -> None:
        self.owner[self.slot(murmur3_31(key.encode()))] = consumer

    def add_consumer(self, consumer) -> None:
        pass

    def remove_consumer(self, consumer) -> None:
        self.owner = {slot: c for slot, c in self.owner.items() if c is not consumer}

    def select(self, slot):
        return self.owner.get(slot)

    def consumer_ranges(self):
        return {c: [(slot, slot)] for slot, c in self.owner.items()}


@pytest.fixture
async def harness(tmp_path):
    made = []

    async def make(rollovers: int) -> Harness:
        h = await Harness(tmp_path).open(rollovers=rollovers)
        made.append(h)
        return h

    yield make
    for h in made:
        await h.close()


async def key_shared(h: Harness, selector):
    subscription = await h.subscription()
    dispatcher = StickyKeyDispatcher(subscription, 100, 5 << 20, selector, allow_out_of_order=False, gainers_join=False)
    subscription.dispatcher, subscription.sub_type = dispatcher, KEY_SHARED
    return subscription, dispatcher


async def test_issue_1_recently_joined_uses_the_last_sent_position(harness):
    h = await harness(rollovers=1)
    keys = ["key-z"] * 6 + ["key-a"] * 3 + ["key-b"] * 3  # 1:0-1:5 already consumed
    assert [await h.publish(k) for k in keys][6] == P(1, 6)
    selector = TableSelector()
    subscription, dispatcher = await key_shared(h, selector)
    subscription.cursor.mark_delete(P(1, 5))  # "the current read position is 1:6"
    dispatcher.sent.catch_up(P(1, 5))

    c1 = h.consumer(subscription, "c1", KEY_SHARED, permits=1)
    c2 = h.consumer(subscription, "c2", KEY_SHARED, permits=1000)
    selector.assign("key-a", c1)
    selector.assign("key-b", c2)
    subscription.add_consumer(c1)
    subscription.add_consumer(c2)
    await settle(dispatcher)
    # step 2: 1:6 to c1, 1:9-1:11 to c2; c1 never acknowledges 1:6
    assert c1.connection.received == [P(1, 6)]
    assert c2.connection.received == [P(1, 9), P(1, 10), P(1, 11)]
    assert dispatcher.sent.last_sent == P(1, 6)
    assert dispatcher.sent.individually_sent.ranges() == [(P(1, 8), P(1, 11))]
    assert list(p for p, _ in dispatcher.redelivery) == [P(1, 7), P(1, 8)]

    # step 3: c3 joins and takes key-a; it is recorded with the last sent position 1:6, not 1:12
    c3 = h.consumer(subscription, "c3", KEY_SHARED, permits=1000)
    selector.assign("key-a", c3)
    subscription.add_consumer(c3)
    assert dispatcher.recently_joined == {c3: P(1, 6)}
    assert c3.last_sent_position_when_joining == P(1, 6)
    await settle(dispatcher)
    # step 4: 1:7 and 1:8 are above 1:6, so c3 does not get them (before PIP-282 it did)
    assert c3.connection.received == []

    # steps 5-6: c1 leaves; 1:6 comes back first, and key-a stays in order on c3
    c1.close()
    await settle(dispatcher)
    assert c3.connection.received == [P(1, 6)]
    subscription.acknowledge(c3, [P(1, 6)])
    await settle(dispatcher)
    assert dispatcher.recently_joined == {}
    assert c3.connection.received == [P(1, 6), P(1, 7), P(1, 8)]
    stats = subscription.stats()
    assert stats["consumersAfterMarkDeletePosition"] == {}


async def test_issue_2_replayed_entries_wait_for_the_joined_position(harness):
    h = await harness(rollovers=2)
    positions = [await h.publish(k) for k in ("key-z", "key-a", "key-a")]
    assert positions == [P(2, 0), P(2, 1), P(2, 2)]
    selector = TableSelector()
    subscription, dispatcher = await key_shared(h, selector)
    subscription.cursor.mark_delete(P(2, 0))  # "readPosition: 2:1"
    dispatcher.sent.catch_up(P(2, 0))

    c1 = h.consumer(subscription, "c1", KEY_SHARED, permits=1)
    c2 = h.consumer(subscription, "c2", KEY_SHARED, permits=1000)
    selector.assign("key-a", c1)
    subscription.add_consumer(c1)
    subscription.add_consumer(c2)
    await settle(dispatcher)
    # steps 2-3: 2:1 to c1; 2:2 cannot go (c1 has no permits) and waits for redelivery
    assert c1.connection.received == [P(2, 1)]
    assert list(p for p, _ in dispatcher.redelivery) == [P(2, 2)]
    assert subscription.cursor.read_position == P(2, 3)
    assert dispatcher.sent.last_sent == P(2, 1)

    # step 4: c3 joins and takes key-a; its joined position is the last sent 2:1, not the read position 2:3
    c3 = h.consumer(subscription, "c3", KEY_SHARED, permits=1000)
    selector.assign("key-a", c3)
    subscription.add_consumer(c3)
    assert dispatcher.recently_joined == {c3: P(2, 1)}
    assert subscription.stats()["consumersAfterMarkDeletePosition"] == {
        f"consumerName=c3, consumerId={c3.consumer_id}, address=test:c3": "2:1"}
    # step 5: the replay of 2:2 is above 2:1, so it does not go to c3 (before PIP-282 it did)
    await settle(dispatcher)
    assert c3.connection.received == []

    # step 6: c1 leaves and 2:1 is redelivered: c3 gets 2:1 first, 2:2 only after 2:1 is acknowledged
    c1.close()
    await settle(dispatcher)
    assert c3.connection.received == [P(2, 1)]
    subscription.acknowledge(c3, [P(2, 1)])
    await settle(dispatcher)
    assert c3.connection.received == [P(2, 1), P(2, 2)]
    assert c2.connection.received == []


async def test_allow_out_of_order_delivery_holds_nothing_back(harness):
    h = await harness(rollovers=0)
    for key in ("key-a", "key-a", "key-a"):
        await h.publish(key)
    selector = TableSelector()
    subscription = await h.subscription()
    dispatcher = StickyKeyDispatcher(subscription, 100, 5 << 20, selector, allow_out_of_order=True, gainers_join=False)
    subscription.dispatcher, subscription.sub_type = dispatcher, KEY_SHARED
    c1 = h.consumer(subscription, "c1", KEY_SHARED, permits=1, allow_out_of_order=True)
    selector.assign("key-a", c1)
    subscription.add_consumer(c1)
    await settle(dispatcher)
    c3 = h.consumer(subscription, "c3", KEY_SHARED, permits=1000, allow_out_of_order=True)
    selector.assign("key-a", c3)
    subscription.add_consumer(c3)
    await settle(dispatcher)
    assert dispatcher.recently_joined == {}
    assert c1.connection.received == [P(0, 0)]
    assert c3.connection.received == [P(0, 1), P(0, 2)]
