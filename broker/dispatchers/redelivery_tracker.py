"""Redelivery counts: how often each entry went back to a consumer, as CommandMessage.redelivery_count.

As Pulsar's InMemoryRedeliveryTracker: an entry's count grows when its consumer asks for its
redelivery (negative ack, ack timeout, redeliver_unacknowledged_messages), not when a consumer
disconnects with entries unacknowledged, and is forgotten once the entry is acknowledged or the
cursor is reset. Kept in memory by the dispatcher. A disabled tracker counts nothing (always 0), as
Pulsar's RedeliveryTrackerDisabled on Exclusive and Failover subscriptions and everywhere with
subscriptionRedeliveryTrackerEnabled=false.
"""
from __future__ import annotations

from typing import Iterable

from minipulsar.storage import Position


class RedeliveryTracker:
    """Position -> redelivery count (0 for positions never redelivered); enabled False: always 0."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._counts: dict[Position, int] = {}

    def __len__(self) -> int:
        return len(self._counts)

    def increment(self, position: Position) -> None:
        if self.enabled:
            self._counts[position] = self._counts.get(position, 0) + 1

    def count(self, position: Position) -> int:
        return self._counts.get(position, 0)

    def remove(self, positions: Iterable[Position]) -> None:
        for position in positions:
            self._counts.pop(position, None)

    def at_most(self, position: Position) -> list[Position]:
        """Tracked positions at or below position (a cumulative acknowledgement's reach)."""
        return [p for p in self._counts if p <= position]

    def clear(self) -> None:
        self._counts.clear()
