"""Exclusive and Failover: one active consumer gets everything.

Failover picks the active consumer by priority level, then consumer name; on a partitioned topic
partition i goes to the i-th consumer of that order (mod the count), which spreads partitions.
When the active consumer changes, what the old one had not acknowledged is redelivered to the new
one, and every consumer is told with ACTIVE_CONSUMER_CHANGE.
Source: Pulsar PersistentDispatcherSingleActiveConsumer / AbstractDispatcherSingleActiveConsumer.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from minipulsar.broker.dispatchers.base import Dispatcher
from minipulsar.broker.entry_info import EntryInfo
from minipulsar.storage import Entry

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer


class SingleActiveConsumerDispatcher(Dispatcher):
    """failover: False for Exclusive (one consumer only), True for Failover. Redeliveries are not
    counted (redelivery_count stays 0), as Pulsar's PersistentDispatcherSingleActiveConsumer."""

    counts_redeliveries = False
    __slots__ = ("active", "failover")

    def __init__(self, subscription, max_read_entries: int, max_read_bytes: int, failover: bool):
        super().__init__(subscription, max_read_entries, max_read_bytes)
        self.failover = failover
        self.active: Consumer | None = None

    def add_consumer(self, consumer: "Consumer") -> None:
        self._append_consumer(consumer)
        if not self._elect() and self.failover:
            # The active consumer stayed: only the newcomer needs to hear who it is.
            asyncio.get_running_loop().call_soon(self._notify_active, [consumer])
        self.wake()

    def remove_consumer(self, consumer: "Consumer") -> None:
        super().remove_consumer(consumer)
        self._elect()
        self.wake()

    def redeliver(self, consumer: "Consumer", positions) -> None:
        """Exclusive and Failover redeliver everything unacknowledged, in order, whatever ids the
        client lists (Pulsar rewinds the cursor)."""
        super().redeliver(consumer, None)

    def _elect(self) -> bool:
        """Pick the active consumer; on a change (returns True), move the old one's pending entries
        to redelivery and tell every consumer."""
        chosen = None
        if self.consumers:
            ordered = sorted(self.consumers, key=lambda c: (c.priority_level, c.name, c.consumer_id))
            index = max(self.subscription.topic.partition_index, 0) % len(ordered)
            chosen = ordered[index]
        if chosen is self.active:
            return False
        previous, self.active = self.active, chosen
        if previous is not None and not previous.closed:
            self.redelivery.update(previous.take_pending())
        if self.failover:
            # Next loop turn: a joining consumer's SUBSCRIBE success goes out before the notice.
            asyncio.get_running_loop().call_soon(self._notify_active, None)
        return True

    def _notify_active(self, consumers: list["Consumer"] | None) -> None:
        for consumer in self.consumers if consumers is None else consumers:
            consumer.notify_active_consumer_change(consumer is self.active)

    def _reads_compacted(self) -> bool:
        """The active consumer asked for read_compacted (only Exclusive and Failover may)."""
        return self.active is not None and self.active.read_compacted

    def _has_new_entries(self) -> bool:
        """A read_compacted consumer may have compacted entries to read that lie before the cursor
        (in ledgers trimmed since they were compacted)."""
        return super()._has_new_entries() or (self._reads_compacted() and self.subscription.compacted_view_pending())

    def _read_limit(self) -> int:
        active = self.active
        if active is None or not active.can_receive():
            return 0
        return self._max_entries_for(active.permits)

    def _dispatch(self, entries: list[tuple[Entry, EntryInfo]]) -> None:
        active = self.active
        if active is None or active.closed:
            self.put_back(entries)
            return
        active.send_messages(((entry, info.num_messages, 0) for entry, info in entries), self.redelivery_tracker)

    def stats(self) -> dict:
        stats = super().stats()
        stats["activeConsumerName"] = self.active.name if self.active else None
        return stats
