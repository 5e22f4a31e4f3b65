"""The per-subscription cache of completed snapshots (PIP-33).

As a replicated subscription's dispatcher reads past SNAPSHOT markers it adds them here, keyed by
the snapshot's local_message_id (a position in this topic). When the mark-delete position moves,
advanced_mark_delete(md) removes every snapshot at or below md and returns the newest of them:
that snapshot's cluster positions are what the other clusters may safely acknowledge up to.

At most max_snapshots are kept. A snapshot below the newest one resets the cache (the subscription
was rewound). When full, the entry whose removal leaves the smallest hole (the sum of its
distances to both neighbours, in entries) is evicted, never the oldest or the newest, so the
snapshots stay spread over the backlog. Source: Pulsar ReplicatedSubscriptionSnapshotCache
(the newest, linked-list version); PIP-33.
"""
from __future__ import annotations

import logging
from typing import Callable

from minipulsar.proto import PulsarMarkers_pb2 as markers
from minipulsar.storage import Position

log = logging.getLogger(__name__)


class SnapshotCache:
    """distance(a, b): entries between positions a < b (the ledger's count_entries_between)."""

    def __init__(self, subscription_name: str, max_snapshots: int,
                 distance: Callable[[Position, Position], int] | None = None):
        self.subscription_name = subscription_name
        self.max_snapshots = max(1, max_snapshots)
        self._distance = distance or (lambda a, b: 1)
        self._items: list[tuple[Position, markers.ReplicatedSubscriptionsSnapshot]] = []

    def __len__(self) -> int:
        return len(self._items)

    def positions(self) -> list[Position]:
        return [position for position, _ in self._items]

    def add(self, position: Position, snapshot: markers.ReplicatedSubscriptionsSnapshot) -> None:
        """Add a snapshot completed at local position `position`."""
        if self._items and position <= self._items[-1][0]:
            if position == self._items[-1][0]:
                return  # the same snapshot read again
            log.debug("%s: snapshot at %s is older than the newest cached; resetting the cache",
                      self.subscription_name, position)
            self._items.clear()
        self._items.append((position, snapshot))
        if len(self._items) > self.max_snapshots:
            self._evict_one()

    def _evict_one(self) -> None:
        if self.max_snapshots < 3 or len(self._items) < 3:
            del self._items[0]
            return
        best, best_gap = 1, None
        for i in range(1, len(self._items) - 1):
            gap = (self._distance(self._items[i - 1][0], self._items[i][0])
                   + self._distance(self._items[i][0], self._items[i + 1][0]))
            if best_gap is None or gap < best_gap:
                best, best_gap = i, gap
        del self._items[best]

    def advanced_mark_delete(self, mark_delete: Position) -> markers.ReplicatedSubscriptionsSnapshot | None:
        """Remove snapshots at or below mark_delete; return the newest removed (None if none)."""
        found = None
        while self._items and self._items[0][0] <= mark_delete:
            found = self._items.pop(0)[1]
        return found
