"""The Key_Shared look-ahead bound: how many entries may wait for redelivery before the dispatcher
stops reading new ones (keySharedLookAheadMsgInReplayThresholdPerConsumer / ...PerSubscription,
PersistentStickyKeyDispatcherMultipleConsumers.getEffectiveLookAheadLimit). A real topic, ledger,
cursor and selector (tests/unit/broker/dispatch_harness.py)."""
import sys

import pytest

from minipulsar.broker.dispatchers.sticky_key import LookAhead
from minipulsar.broker.sticky_key import murmur3_31
from minipulsar.proto import PulsarApi_pb2 as api
from tests.unit.broker.dispatch_harness import Harness, settle

KEY_SHARED = api.CommandSubscribe.Key_Shared


@pytest.mark.parametrize("per_consumer, per_subscription, max_unacked, consumers, bound", [
    (5, 100, 0, 5, 25),  # per consumer x consumers, below the subscription's bound
    (5, 100, 0, 100, 100),  # the subscription's bound, below per consumer x consumers
    (5, 0, 0, 100, 500),  # no subscription bound
    (0, 6000, 0, 100, 6000),  # no per-consumer bound
    (0, 0, 50000, 3, 150000),  # both off: maxUnackedMessagesPerConsumer x consumers
    (0, 0, 0, 3, sys.maxsize),  # nothing bounds it
])
def test_the_bound_follows_pulsars_formula(per_consumer, per_subscription, max_unacked, consumers, bound):
    assert LookAhead(per_consumer, per_subscription, max_unacked).limit(consumers) == bound


def owned_key(dispatcher, consumer) -> str:
    """A key whose hash the dispatcher's selector gives to consumer."""
    selector = dispatcher.selector
    return next(key for key in (f"key-{i}" for i in range(1000))
                if selector.select(selector.slot(murmur3_31(key.encode()))) is consumer)


async def blocked_then_freed(tmp_path, **settings) -> tuple:
    """c1 owns key 1 and has one permit, c2 owns key 2 and has plenty; 10 entries of key 1 come
    first, then 10 of key 2. Returns (entries waiting, what c2 got) once the dispatcher is idle,
    and checks both consumers get everything once c1 grants permits."""
    h = await Harness(tmp_path, **settings).open()
    try:
        subscription = await h.subscription()
        c1 = h.consumer(subscription, "c1", KEY_SHARED, permits=1)
        c2 = h.consumer(subscription, "c2", KEY_SHARED, permits=1000)
        subscription.add_consumer(c1)
        subscription.add_consumer(c2)
        dispatcher = subscription.dispatcher
        key_1, key_2 = owned_key(dispatcher, c1), owned_key(dispatcher, c2)
        for key in [key_1] * 10 + [key_2] * 10:
            await h.publish(key)
        await settle(dispatcher)
        waiting, c2_got = len(dispatcher.redelivery), len(c2.connection.received)
        c1.flow(100)
        await settle(dispatcher)
        assert (len(c1.connection.received), len(c2.connection.received)) == (10, 10)
        return waiting, c2_got
    finally:
        await h.close()


async def test_new_reads_stop_at_the_per_consumer_bound_and_resume_when_entries_drain(tmp_path):
    # 2 per consumer x 2 consumers: 4 entries of key 1 wait, and c2's entries behind them are not read
    assert await blocked_then_freed(tmp_path / "bounded", keySharedLookAheadMsgInReplayThresholdPerConsumer=2,
                                    keySharedLookAheadMsgInReplayThresholdPerSubscription=0) == (4, 0)
    # the defaults (2000 per consumer, 20000 per subscription) let c2 have its 10 meanwhile
    assert await blocked_then_freed(tmp_path / "default") == (9, 10)
