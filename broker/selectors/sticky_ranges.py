"""STICKY: each consumer declares the hash ranges it serves in KeySharedMeta.hashRanges.

Ranges are inclusive [start, end] within [0, 65535]; a consumer must declare at least one, and no
two consumers may overlap (the error names the consumer already holding the range). A slot no
range covers has no consumer: its entries wait. Source: Pulsar
HashRangeExclusiveStickyKeyConsumerSelector.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from sortedcontainers import SortedDict

from minipulsar.broker.errors import ConsumerAssignError
from minipulsar.broker.selectors.base import StickyKeyConsumerSelector
from minipulsar.broker.sticky_key import RANGE_SIZE

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer


class StickyRangesSelector(StickyKeyConsumerSelector):
    def __init__(self) -> None:
        self._by_start: SortedDict = SortedDict()  # start -> (end, consumer)

    def add_consumer(self, consumer: "Consumer") -> None:
        ranges = sorted(consumer.hash_ranges)
        if not ranges:
            raise ConsumerAssignError("Ranges for KeyShared policy must not be empty.")
        for index, (start, end) in enumerate(ranges):
            if not 0 <= start <= end < RANGE_SIZE:
                raise ConsumerAssignError(f"Invalid range [{start}, {end}]: must lie within [0, {RANGE_SIZE - 1}]")
            if index and start <= ranges[index - 1][1]:
                raise ConsumerAssignError(f"Ranges of consumer {consumer.name} overlap each other")
            holder = self._overlapping(start, end)
            if holder is not None:
                raise ConsumerAssignError(
                    f"Range conflict with consumer {holder.name} (consumerId={holder.consumer_id}): "
                    f"[{start}, {end}] overlaps its ranges")
        for start, end in ranges:
            self._by_start[start] = (end, consumer)

    def _overlapping(self, start: int, end: int) -> "Consumer | None":
        index = self._by_start.bisect_right(end)
        if index == 0:
            return None
        other_start = self._by_start.keys()[index - 1]
        other_end, holder = self._by_start[other_start]
        return holder if other_end >= start else None

    def remove_consumer(self, consumer: "Consumer") -> None:
        for start in [s for s, (_, c) in self._by_start.items() if c is consumer]:
            del self._by_start[start]

    def select(self, slot: int) -> "Consumer | None":
        index = self._by_start.bisect_right(slot)
        if index == 0:
            return None
        end, consumer = self._by_start.values()[index - 1]
        return consumer if slot <= end else None

    def consumer_ranges(self) -> dict["Consumer", list[tuple[int, int]]]:
        ranges: dict = {}
        for start, (end, consumer) in self._by_start.items():
            ranges.setdefault(consumer, []).append((start, end))
        return ranges
