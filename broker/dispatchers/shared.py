"""Shared: entries go round robin to the consumers that have permits.

Consumers of the best (lowest) priority level with permits are served first, as in Pulsar; within
a level the turn rotates entry by entry. Entries of a consumer that closes are redelivered to the
others. Source: Pulsar PersistentDispatcherMultipleConsumers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from minipulsar.broker.dispatchers.base import Dispatcher
from minipulsar.broker.entry_info import EntryInfo
from minipulsar.storage import Entry

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer


class SharedDispatcher(Dispatcher):
    pauses_on_ack_state = True
    __slots__ = ("_turn",)

    def __init__(self, subscription, max_read_entries: int, max_read_bytes: int):
        super().__init__(subscription, max_read_entries, max_read_bytes)
        self._turn = 0

    def _read_limit(self) -> int:
        permits = sum(c.permits for c in self.consumers if c.can_receive())
        return self._max_entries_for(permits) if permits > 0 else 0

    def _next_consumer(self) -> "Consumer | None":
        ready = [c for c in self.consumers if c.can_receive()]
        if not ready:
            return None
        best = min(c.priority_level for c in ready)
        level = [c for c in ready if c.priority_level == best]
        self._turn = (self._turn + 1) % len(level)
        return level[self._turn]

    def _dispatch(self, entries: list[tuple[Entry, EntryInfo]]) -> None:
        for index, (entry, info) in enumerate(entries):
            consumer = self._next_consumer()
            if consumer is None:
                self.put_back(entries[index:])
                return
            consumer.send_messages(((entry, info.num_messages, 0),), self.redelivery_tracker)
