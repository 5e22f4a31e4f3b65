"""Key_Failover: every consumer serves one contiguous hash range; together they cover [0, 65535].

A new consumer takes the upper half of the range of the busiest consumer (highest recent dispatch
rate) whose range still has two slots or more; a leaving consumer's range goes to the adjacent consumer with the lower recent rate (the
only neighbour when there is one). Timeline of the proposal: C1 [0,1); C2 joins: C1 [0,.5),
C2 [.5,1); C3 joins while C2 is busier: C2 [.5,.75), C3 [.75,1); C1 leaves: C2 [0,.75); C2
leaves: C3 [0,1). Source: the 2019 Key_Failover subscription proposal for Pulsar.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from minipulsar.broker.errors import ConsumerAssignError
from minipulsar.broker.selectors.base import StickyKeyConsumerSelector
from minipulsar.broker.sticky_key import RANGE_SIZE

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer


class KeyFailoverSelector(StickyKeyConsumerSelector):
    def __init__(self) -> None:
        self._ranges: list[list] = []  # [start, end, consumer], ascending, contiguous

    def add_consumer(self, consumer: "Consumer") -> None:
        if not self._ranges:
            self._ranges.append([0, RANGE_SIZE - 1, consumer])
            return
        # Busiest first; among equally busy, the widest range, so halving keeps things balanced.
        # Only ranges of two or more slots can be split (a busy consumer halved down to one slot
        # must not block every later join).
        splittable = [i for i, r in enumerate(self._ranges) if r[1] > r[0]]
        if not splittable:
            raise ConsumerAssignError("no hash range is left to split for a new consumer")
        index = max(splittable,
                    key=lambda i: (self._ranges[i][2].dispatch_rate.rate(), self._ranges[i][1] - self._ranges[i][0]))
        start, end, holder = self._ranges[index]
        middle = start + (end - start + 1) // 2
        self._ranges[index] = [start, middle - 1, holder]
        self._ranges.insert(index + 1, [middle, end, consumer])

    def remove_consumer(self, consumer: "Consumer") -> None:
        index = next((i for i, r in enumerate(self._ranges) if r[2] is consumer), None)
        if index is None:
            return
        start, end, _ = self._ranges.pop(index)
        if not self._ranges:
            return
        left = self._ranges[index - 1] if index > 0 else None
        right = self._ranges[index] if index < len(self._ranges) else None
        if left is not None and (right is None or left[2].dispatch_rate.rate() <= right[2].dispatch_rate.rate()):
            left[1] = end
        else:
            right[0] = start

    def select(self, slot: int) -> "Consumer | None":
        for start, end, consumer in self._ranges:
            if start <= slot <= end:
                return consumer
        return None

    def consumer_ranges(self) -> dict["Consumer", list[tuple[int, int]]]:
        return {consumer: [(start, end)] for start, end, consumer in self._ranges}
