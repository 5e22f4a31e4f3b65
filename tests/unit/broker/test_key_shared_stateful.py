"""A hypothesis state machine over a real Key_Shared / Key_Failover dispatcher, cursor and ledger.

Random publishes, joins, leaves, permits, acknowledgements and redelivery requests. After every
step, for every entry a consumer received:
  * it lies in that consumer's hash range (the selector's owner of its slot);
  * every earlier entry of the same key is acknowledged or still held by that same consumer
    (so each consumer sees a key in order, and nothing overtakes a redelivery);
and at all times a key's unacknowledged entries sit on at most one consumer. At the end, with
permits everywhere and consumers acknowledging, every published entry is delivered.
Examples: MINIPULSAR_STATEFUL_EXAMPLES (default 200) for more by hand.
"""
import asyncio
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, rule

from minipulsar.broker.dispatchers.sticky_key import StickyKeyDispatcher
from minipulsar.broker.selectors.auto_split import AutoSplitSelector
from minipulsar.broker.selectors.consistent_hashing import ConsistentHashingSelector
from minipulsar.broker.selectors.key_failover import KeyFailoverSelector
from minipulsar.broker.sticky_key import murmur3_31
from minipulsar.proto import PulsarApi_pb2 as api
from tests.unit.broker.dispatch_harness import Harness, settle

KEYS = ["k0", "k1", "k2", "k3", "k4", "k5"]
SELECTORS = {
    "key_shared_consistent": (api.CommandSubscribe.Key_Shared, lambda: ConsistentHashingSelector(20), False),
    "key_shared_auto_split": (api.CommandSubscribe.Key_Shared, AutoSplitSelector, False),
    "key_failover": (api.CommandSubscribe.Key_Failover, KeyFailoverSelector, True),
}


class KeySharedMachine(RuleBasedStateMachine):
    consumers = Bundle("consumers")

    def __init__(self):
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = Path(tempfile.mkdtemp(prefix="ks-state-"))
        self.h = self.run(Harness(self.folder, journalSyncData="false").open())
        self.key_of = {}      # position -> key
        self.acked = set()
        self.held = {}        # consumer -> set of positions it holds (delivered, not acked or returned)
        self.seen = {}        # consumer -> how many of its deliveries were checked
        self.names = 0

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    def call(self, fn, *args):
        """Run a plain broker call on the loop (dispatchers schedule their reads there)."""
        async def inside():
            return fn(*args)
        return self.run(inside())

    @initialize(kind=st.sampled_from(sorted(SELECTORS)))
    def setup(self, kind):
        self.sub_type, make_selector, gainers_join = SELECTORS[kind]
        self.subscription = self.run(self.h.subscription())
        self.dispatcher = StickyKeyDispatcher(self.subscription, 10, 5 << 20, make_selector(),
                                              allow_out_of_order=False, gainers_join=gainers_join)
        self.subscription.dispatcher, self.subscription.sub_type = self.dispatcher, self.sub_type

    def settle(self):
        self.run(settle(self.dispatcher))
        self.check_deliveries()

    def check_deliveries(self):
        for consumer, held in self.held.items():
            received = consumer.connection.received
            for position in received[self.seen[consumer]:]:
                key = self.key_of[position]
                slot = self.dispatcher.selector.slot(murmur3_31(key.encode()))
                assert self.dispatcher.selector.select(slot) is consumer, f"{position} outside {consumer.name}'s range"
                for earlier, other_key in self.key_of.items():
                    if other_key == key and earlier < position:
                        assert earlier in self.acked or earlier in held, (
                            f"{consumer.name} got {position} ({key}) before {earlier} was acked or held by it")
                held.add(position)
            self.seen[consumer] = len(received)

    @invariant()
    def one_consumer_per_key(self):
        if not hasattr(self, "dispatcher"):
            return
        holders = {}
        for consumer, held in self.held.items():
            for position in held:
                holders.setdefault(self.key_of[position], set()).add(consumer)
        assert all(len(h) <= 1 for h in holders.values()), holders

    @rule(key=st.sampled_from(KEYS), count=st.integers(1, 4))
    def publish(self, key, count):
        for _ in range(count):
            self.key_of[self.run(self.h.publish(key))] = key
        self.settle()

    @rule(target=consumers, permits=st.integers(0, 4))
    def join(self, permits):
        self.names += 1
        consumer = self.h.consumer(self.subscription, f"c{self.names}", self.sub_type, permits=permits)
        self.call(self.subscription.add_consumer, consumer)
        self.held[consumer], self.seen[consumer] = set(), 0
        self.settle()
        return consumer

    @rule(consumer=consumes(consumers))
    def leave(self, consumer):
        self.settle()
        self.call(consumer.close)
        del self.held[consumer]
        self.settle()

    @rule(consumer=consumers, permits=st.integers(1, 5))
    def grant(self, consumer, permits):
        if consumer in self.held:
            self.call(consumer.flow, permits)
            self.settle()

    @rule(consumer=consumers, data=st.data())
    def ack(self, consumer, data):
        held = sorted(self.held.get(consumer, ()))
        if not held:
            return
        chosen = data.draw(st.lists(st.sampled_from(held), min_size=1, unique=True))
        self.call(self.subscription.acknowledge, consumer, chosen)
        self.held[consumer].difference_update(chosen)
        self.acked.update(chosen)
        self.settle()

    @rule(consumer=consumers, data=st.data())
    def redeliver(self, consumer, data):
        held = sorted(self.held.get(consumer, ()))
        if not held:
            return
        chosen = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(held), min_size=1, unique=True)))
        self.call(self.dispatcher.redeliver, consumer, chosen)
        self.held[consumer].difference_update(held if chosen is None else chosen)
        self.settle()

    def teardown(self):
        try:
            if hasattr(self, "dispatcher"):
                self.drain_everything()
        finally:
            self.run(self.h.close())
            self.loop.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    def drain_everything(self):
        """Liveness: with permits everywhere and every delivery acknowledged, all entries arrive."""
        if not self.held:
            self.join(permits=0)
        for _ in range(50):
            for consumer in self.held:
                self.call(consumer.flow, 100)
            self.settle()
            pending = [(c, sorted(h)) for c, h in self.held.items() if h]
            if not pending and len(self.acked) == len(self.key_of):
                return
            for consumer, held in pending:
                self.call(self.subscription.acknowledge, consumer, held)
                self.held[consumer].clear()
                self.acked.update(held)
        missing = sorted(set(self.key_of) - self.acked)
        raise AssertionError(f"never delivered: {missing}")


KeySharedMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MINIPULSAR_STATEFUL_EXAMPLES", "200")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestKeySharedStateMachine = KeySharedMachine.TestCase
