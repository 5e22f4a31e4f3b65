"""A non-persistent topic: no ledger, no cursor; a message reaches the consumers that can take it now.

A published message is handed at once to every subscription, whose dispatcher writes it to the
consumer its type picks or drops it (counted as msgDropRate) when that consumer has no permits or a
backed-up socket; the producer's receipt follows at once, with message id (0, 0) as Pulsar answers.
Acknowledgements, redelivery requests and seeks have nothing to act on. A subscription lives while
it has consumers, and the topic only in memory: a broker restart forgets both, by design.
Source: PIP-2, Pulsar NonPersistentTopic and NonPersistentSubscription.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from minipulsar.broker.abstract_topic import AbstractTopic
from minipulsar.broker.access_modes import ProducerAccess
from minipulsar.broker.batch_acks import BatchAckSets
from minipulsar.broker.consumer import DecayingRate
from minipulsar.broker.dispatchers.non_persistent import NonPersistentDispatcher
from minipulsar.broker.entry_info import entry_info
from minipulsar.broker.errors import (NotAllowedError, SubscriptionNotFoundError)
from minipulsar.broker.specs import SubscriptionSpec
from minipulsar.broker.stats_shapes import SUBSCRIPTION_ZERO, TOPIC_ZERO
from minipulsar.broker.consumer_counters import ConsumerCounters
from minipulsar.broker.subscription import (SUB_TYPE_NAMES, LastMessageId, SubType,
                                            check_admission, key_shared_selector, leave_for_unsubscribe)
from minipulsar.broker.topic_name import TopicName
from minipulsar.storage import EARLIEST, Durability, Entry, Position

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer
    from minipulsar.broker.topic_context import TopicContext

log = logging.getLogger(__name__)

RECEIPT_POSITION = Position(0, 0)  # every message's id on a non-persistent topic, as in Pulsar


class NonPersistentSubscription(ConsumerCounters):
    """A named group of consumers on a NonPersistentTopic; gone with its last consumer."""

    durable = False
    replicated = False
    __slots__ = ("topic", "name", "sub_type", "dispatcher", "batch_acks", "msg_drop_counter", "drop_rate")

    def __init__(self, topic: "NonPersistentTopic", name: str):
        super().__init__()
        self.topic = topic
        self.name = name
        self.sub_type: int | None = None
        self.dispatcher: NonPersistentDispatcher | None = None
        self.batch_acks = BatchAckSets()  # stays empty: nothing is acknowledged here
        self.msg_drop_counter = 0
        self.drop_rate = DecayingRate()

    def __repr__(self) -> str:
        return f"NonPersistentSubscription({self.topic.name}, {self.name!r})"

    @property
    def consumers(self) -> list["Consumer"]:
        return self.dispatcher.consumers if self.dispatcher else []

    @property
    def type_name(self) -> str:
        return SUB_TYPE_NAMES.get(self.sub_type, "None")

    @property
    def backlog(self) -> int:
        return 0

    def add_consumer(self, consumer: "Consumer") -> None:
        """Raises NotAllowedError, ConsumerBusyError (subscription.check_admission) and
        ConsumerAssignError (overlapping Key_Shared STICKY ranges)."""
        check_admission(self, consumer)
        if self.dispatcher is None or not self.consumers:
            selector = None
            if consumer.sub_type == SubType.Key_Shared:
                selector = key_shared_selector(self.topic.context.config, consumer)
            self.dispatcher = NonPersistentDispatcher(consumer.sub_type, self.topic.partition_index, selector)
            self.sub_type = consumer.sub_type
        self.dispatcher.add_consumer(consumer)

    def remove_consumer(self, consumer: "Consumer") -> None:
        self._keep_counters_of(consumer)
        if self.dispatcher is not None:
            self.dispatcher.remove_consumer(consumer)
        self.topic.last_active = time.monotonic()  # broker/inactive_topics.py
        if not self.consumers:
            self.topic.forget_subscription(self)

    def send(self, entry: Entry, info) -> None:
        """A message was published: out now, or dropped and counted."""
        dropped = self.dispatcher.send(entry, info) if self.dispatcher is not None else info.num_messages
        if dropped:
            self.msg_drop_counter += dropped
            self.drop_rate.record(dropped)

    # ---- what a persistent subscription acts on, and a non-persistent one cannot ----------
    def consumer_flow(self, consumer: "Consumer") -> None:
        """Permits only matter when the next message arrives."""

    def redeliver_unacknowledged(self, consumer: "Consumer", positions) -> None:
        """Nothing is kept to redeliver (Pulsar ignores the request on non-persistent topics)."""

    def acknowledge_message_ids(self, consumer: "Consumer", acks, cumulative: bool) -> None:
        """Nothing is kept to acknowledge."""

    def reset_cursor(self, position: Position) -> None:
        raise NotAllowedError(f"seek is not supported on non-persistent topic {self.topic.name}")

    async def reset_cursor_by_timestamp(self, timestamp: int) -> Position:
        raise NotAllowedError(f"seek is not supported on non-persistent topic {self.topic.name}")

    async def get_last_message_id(self, read_compacted: bool = False) -> LastMessageId:
        """Nothing is stored: earliest, which promises no message to a reader."""
        return LastMessageId(EARLIEST, None, EARLIEST)

    async def unsubscribe(self, consumer: "Consumer", force: bool) -> None:
        """Raises ConsumerBusyError (subscription.leave_for_unsubscribe)."""
        leave_for_unsubscribe(self, consumer, force)

    def disconnect_consumers(self) -> None:
        for consumer in list(self.consumers):
            consumer.disconnect()

    def stop(self) -> None:
        """Nothing runs in the background."""

    def update_rates(self, now: float) -> None:
        """The stats timer's tick (broker/stats_rates.py)."""
        self.update_consumer_rates(now)

    def stats(self) -> dict:
        """Pulsar NonPersistentSubscriptionStats; msgDropCount is ours (a counter beside the rate)."""
        return {
            **SUBSCRIPTION_ZERO,
            **self.consumer_totals(),
            "type": self.type_name,
            "msgDropRate": self.drop_rate.rate(),
            "msgDropCount": self.msg_drop_counter,
            "consumers": [c.stats() for c in self.consumers],
        }


class NonPersistentTopic(AbstractTopic):
    """name: a non-persistent:// TopicName; context: what it sees of its broker."""

    persistent = False
    __slots__ = ("name", "subscriptions", "partition_index", "deduplication", "terminated_at", "_receipt")

    def __init__(self, context: "TopicContext", name: TopicName):
        super().__init__(context)
        self.name = name
        self.subscriptions: dict[str, NonPersistentSubscription] = {}
        self.partition_index = name.partition_index
        self.access = ProducerAccess(self)
        self.deduplication = None
        self.terminated_at = None
        self._receipt = Durability()
        self._receipt.settle()

    def __repr__(self) -> str:
        return f"NonPersistentTopic({self.name})"

    # ---- publishing (producers by name: broker/abstract_topic.py) ----------------------------
    def check_not_terminated(self) -> None:
        """A non-persistent topic cannot be terminated."""

    def append(self, data: bytes, producer_name: str | None = None, sequence_id: int = 0,
               highest_sequence_id: int = 0) -> tuple[Position, Durability]:
        """Hand the message to every subscription now; returns (0, 0) and a settled Durability: the
        receipt does not wait for consumers (Pulsar NonPersistentTopic.publishMessage)."""
        entry = Entry(RECEIPT_POSITION, data)
        info = entry_info(data)
        for subscription in list(self.subscriptions.values()):
            subscription.send(entry, info)
        return RECEIPT_POSITION, self._receipt

    def is_idle(self) -> bool:
        return not self.producers and not any(s.consumers for s in self.subscriptions.values())

    # ---- subscriptions ---------------------------------------------------------------------
    async def subscribe(self, spec: SubscriptionSpec, sub_type: int = SubType.Exclusive,
                        read_compacted: bool = False) -> NonPersistentSubscription:
        """The subscription spec names, created when missing; durability, the initial position and
        the start are meaningless without storage. Raises NotAllowedError for read_compacted."""
        if read_compacted:
            raise NotAllowedError("readCompacted only valid on persistent topics")
        subscription = self.subscriptions.get(spec.name)
        if subscription is None:
            subscription = self.subscriptions[spec.name] = NonPersistentSubscription(self, spec.name)
        return subscription

    def forget_subscription(self, subscription: NonPersistentSubscription) -> None:
        """The subscription's last consumer left: it is gone (Pulsar removes it too)."""
        if self.subscriptions.get(subscription.name) is subscription:
            del self.subscriptions[subscription.name]
            self.keep_counters_of(subscription)

    async def remove_subscription(self, name: str) -> None:
        """Raises SubscriptionNotFoundError."""
        subscription = self.subscriptions.pop(name, None)
        if subscription is None:
            raise SubscriptionNotFoundError(f"subscription {name} not found on {self.name}")
        self.keep_counters_of(subscription)
        subscription.disconnect_consumers()

    async def consumer_closed(self, subscription: NonPersistentSubscription) -> None:
        if not subscription.consumers:
            self.forget_subscription(subscription)

    async def close(self) -> None:
        """Nothing to persist."""
        self.subscriptions.clear()

    def stats(self) -> dict:
        """Pulsar NonPersistentTopicStats (broker/stats_shapes.py, plus msgDropRate)."""
        stats = {**TOPIC_ZERO, **self.traffic_stats({})}
        stats["msgDropRate"] = sum((s["msgDropRate"] for s in stats["subscriptions"].values()), 0.0)
        return stats
