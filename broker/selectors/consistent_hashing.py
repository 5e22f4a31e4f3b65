"""AUTO_SPLIT by consistent hashing (the default, subscriptionKeySharedUseConsistentHashing=true).

Each consumer puts `replica_points` points on a ring of slots [1, 65535]; point i of a consumer is
the ring slot of Murmur3("<name>\\0<index>\\0<i>"), where index tells apart consumers sharing a name
(the lowest free one, kept while the consumer lives). A slot belongs to the first point at or after
it, wrapping around. A point already taken stays with its holder; the newcomer waits behind it
and takes over if the holder leaves. Source: Pulsar 4.x ConsistentHashingStickyKeyConsumerSelector
and ConsumerNameIndexTracker.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from sortedcontainers import SortedDict

from minipulsar.broker.selectors.base import StickyKeyConsumerSelector
from minipulsar.broker.sticky_key import murmur3_31, ring_slot

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer


class ConsistentHashingSelector(StickyKeyConsumerSelector):
    """replica_points: subscriptionKeySharedConsistentHashingReplicaPoints (100)."""

    def __init__(self, replica_points: int = 100) -> None:
        self.replica_points = replica_points
        self._ring: SortedDict = SortedDict()  # slot -> [holder, waiting consumers...]
        self._points: dict = {}  # consumer -> its slots
        self._name_indexes: dict[str, dict] = {}  # consumer name -> {consumer: index}

    def slot(self, hash31: int) -> int:
        return ring_slot(hash31)

    def _name_index(self, consumer: "Consumer") -> int:
        taken = self._name_indexes.setdefault(consumer.name, {})
        used = set(taken.values())
        index = next(i for i in range(len(used) + 1) if i not in used)
        taken[consumer] = index
        return index

    def add_consumer(self, consumer: "Consumer") -> None:
        index = self._name_index(consumer)
        points = []
        for i in range(self.replica_points):
            point = ring_slot(murmur3_31(f"{consumer.name}\0{index}\0{i}".encode()))
            self._ring.setdefault(point, []).append(consumer)
            points.append(point)
        self._points[consumer] = points

    def remove_consumer(self, consumer: "Consumer") -> None:
        for point in self._points.pop(consumer, ()):
            holders = self._ring.get(point)
            if holders is not None and consumer in holders:
                holders.remove(consumer)
                if not holders:
                    del self._ring[point]
        taken = self._name_indexes.get(consumer.name, {})
        taken.pop(consumer, None)
        if not taken:
            self._name_indexes.pop(consumer.name, None)

    def select(self, slot: int) -> "Consumer | None":
        if not self._ring:
            return None
        index = self._ring.bisect_left(slot)
        holders = self._ring.values()[index if index < len(self._ring) else 0]
        return holders[0]

    def consumer_ranges(self) -> dict["Consumer", list[tuple[int, int]]]:
        ranges: dict = {}
        previous = 0
        points = list(self._ring.items())
        for point, holders in points:
            if point > previous:
                owned = ranges.setdefault(holders[0], [])
                if owned and owned[-1][1] == previous:  # neighbouring points of one consumer: one range
                    owned[-1] = (owned[-1][0], point)
                else:
                    owned.append((previous + 1, point))
            previous = point
        if points and previous < 65535:  # the tail wraps to the first point's holder
            ranges.setdefault(points[0][1][0], []).append((previous + 1, 65535))
        return ranges
