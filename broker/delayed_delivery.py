"""Delayed delivery: entries whose deliver_at_time lies in the future wait here, ordered by time.

Shared and Key_Shared dispatchers ask `should_delay(entry, info)` for every entry they read;
an entry that is not due yet is parked in the tracker instead of being dispatched. A timer fires
when the earliest parked entry becomes due (at most once per `delayedDeliveryTickTimeMillis`)
and moves every due entry into the dispatcher's redelivery set, so it goes out before newer
entries. Nothing is persisted: after a restart the cursor re-reads the backlog from its
mark-delete position and the parked entries are found again.

"Due" follows Pulsar's cut-off: with `isDelayedDeliveryDeliverAtTimeStrict` false (the default)
an entry is due when deliver_at_time <= now + tick: an entry delayed by less than a tick is not
parked at all, and when the timer fires (at the earliest deliver_at_time) it releases everything
due within the next tick too; with it true, the cut-off is now. Exclusive and Failover subscriptions deliver at once (the
dispatcher has no tracker), as in Pulsar.
Times are milliseconds since the epoch (MessageMetadata.deliver_at_time).
Source: Pulsar InMemoryDelayedDeliveryTracker / AbstractDelayedDeliveryTracker.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from sortedcontainers import SortedList

from minipulsar.broker.entry_info import EntryInfo
from minipulsar.storage import Entry, Position

log = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


class DelayedDeliveryTracker:
    """on_due(items): receives [(position, key_hash)] of entries that became due.
    tick_ms: delayedDeliveryTickTimeMillis; strict: isDelayedDeliveryDeliverAtTimeStrict."""

    def __init__(self, on_due: Callable[[list[tuple[Position, int]]], None], tick_ms: int, strict: bool = False):
        self._on_due = on_due
        self.tick_ms = tick_ms
        self.strict = strict
        self._queue: SortedList = SortedList()  # (deliver_at ms, position, key_hash)
        self._parked: set[Position] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0
        self._last_tick = 0.0

    def __len__(self) -> int:
        return len(self._queue)

    def cutoff(self) -> int:
        """Entries with deliver_at_time at or below this (ms) are due."""
        return now_ms() if self.strict else now_ms() + self.tick_ms

    def should_delay(self, entry: Entry, info: EntryInfo, key_hash: int = 0) -> bool:
        """Park entry when its deliver_at_time is after the cut-off; True when parked (or already)."""
        metadata = info.metadata
        if metadata is None or not metadata.HasField("deliver_at_time"):
            return False
        if entry.position in self._parked:
            return True
        deliver_at = metadata.deliver_at_time
        if deliver_at <= self.cutoff():
            return False
        self._queue.add((deliver_at, entry.position, key_hash))
        self._parked.add(entry.position)
        self._schedule()
        return True

    def _schedule(self) -> None:
        if not self._queue:
            return
        first = self._queue[0][0]
        loop = asyncio.get_running_loop()
        delay_ms = max(first - now_ms(), 0)  # fire at the first deliver_at; the cut-off takes the next tick along
        # At most one timer run per tick, as Pulsar's tracker does.
        earliest = self._last_tick + self.tick_ms / 1000.0
        when = max(loop.time() + delay_ms / 1000.0, earliest)
        if self._timer is not None:
            if self._timer_at <= when:
                return
            self._timer.cancel()
        self._timer_at = when
        self._timer = loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._last_tick = asyncio.get_running_loop().time()
        cutoff = self.cutoff()
        due = []
        while self._queue and self._queue[0][0] <= cutoff:
            _, position, key_hash = self._queue.pop(0)
            self._parked.discard(position)
            due.append((position, key_hash))
        if due:
            log.debug("%d delayed entries are due", len(due))
            self._on_due(due)
        self._schedule()

    def clear(self) -> None:
        """Forget everything (seek, cursor reset); the entries are read again from the cursor."""
        self._queue.clear()
        self._parked.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    close = clear
