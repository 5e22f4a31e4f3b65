"""Dispatch on a non-persistent topic: each message goes out at once or is dropped.

There is no cursor and nothing to read back: when a producer's message arrives, the subscription's
type picks a consumer (Exclusive and Failover: the active one; Shared: the next one in turn that
has permits; Key_Shared: the owner of the message's sticky key hash) and the message is written to
it if it has permits and a writable socket. Otherwise it is dropped and counted, as Pulsar's
NonPersistentDispatcherSingleActiveConsumer, NonPersistentDispatcherMultipleConsumers and
NonPersistentStickyKeyDispatcherMultipleConsumers do (their msgDrop rate). PIP-2.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from minipulsar.broker.entry_info import EntryInfo
from minipulsar.broker.sticky_key import murmur3_31, sticky_key
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Entry

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer
    from minipulsar.broker.selectors.base import StickyKeyConsumerSelector

SubType = api.CommandSubscribe.SubType


class NonPersistentDispatcher:
    """sub_type: the subscription's CommandSubscribe.SubType; partition_index: the topic's (-1 when
    not a partition); selector: the sticky-key selector of a Key_Shared subscription, else None."""

    def __init__(self, sub_type: int, partition_index: int, selector: "StickyKeyConsumerSelector | None" = None):
        self.sub_type = sub_type
        self.partition_index = partition_index
        self.selector = selector
        self.consumers: list[Consumer] = []
        self.active: Consumer | None = None  # Exclusive / Failover
        self._next = 0  # Shared: round-robin index

    def add_consumer(self, consumer: "Consumer") -> None:
        """Raises ConsumerAssignError when a Key_Shared STICKY consumer's ranges overlap another's."""
        if self.selector is not None:
            self.selector.add_consumer(consumer)
        self.consumers.append(consumer)
        self._elect([consumer])

    def remove_consumer(self, consumer: "Consumer") -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            if self.selector is not None:
                self.selector.remove_consumer(consumer)
            self._elect([])

    def _elect(self, joined: list["Consumer"]) -> None:
        """Exclusive / Failover: the active consumer by priority level, then name (partition i goes
        to the i-th, as for persistent topics); consumers hear of a change (ACTIVE_CONSUMER_CHANGE)."""
        if self.sub_type not in (SubType.Exclusive, SubType.Failover):
            return
        chosen = None
        if self.consumers:
            ordered = sorted(self.consumers, key=lambda c: (c.priority_level, c.name, c.consumer_id))
            chosen = ordered[max(self.partition_index, 0) % len(ordered)]
        told = self.consumers if chosen is not self.active else joined
        self.active = chosen
        if self.sub_type == SubType.Failover and told:
            # Next loop turn: a joining consumer's SUBSCRIBE success goes out before the notice.
            asyncio.get_running_loop().call_soon(self._notify, list(told))

    def _notify(self, consumers: list["Consumer"]) -> None:
        for consumer in consumers:
            consumer.notify_active_consumer_change(consumer is self.active)

    def send(self, entry: Entry, info: EntryInfo) -> int:
        """Deliver entry now to the consumer its type picks; returns the messages dropped (0 or
        info.num_messages) when that consumer cannot take it."""
        consumer = self._pick(info)
        if consumer is None or not consumer.can_receive():
            return info.num_messages
        consumer.send_at_once(entry, info.num_messages)
        return 0

    def _pick(self, info: EntryInfo) -> "Consumer | None":
        if self.sub_type in (SubType.Exclusive, SubType.Failover):
            return self.active
        if self.selector is not None:
            return self.selector.select(self.selector.slot(murmur3_31(sticky_key(info.metadata))))
        return self._next_with_permits()

    def _next_with_permits(self) -> "Consumer | None":
        """Shared: the next consumer in turn that can receive, None when none can."""
        count = len(self.consumers)
        for step in range(count):
            consumer = self.consumers[(self._next + step) % count]
            if consumer.can_receive():
                self._next = (self._next + step + 1) % count
                return consumer
        return None
