"""AUTO_SPLIT by range splitting (used when subscriptionKeySharedUseConsistentHashing is false).

The range [0, 65536] is cut at upper bounds, each owned by one consumer. A new consumer halves the
biggest range (ties go to the lower one) and takes its lower half; a leaving consumer's range goes
to the next higher bound, except the top range, which the consumer below moves up to take.
Source: Pulsar HashRangeAutoSplitStickyKeyConsumerSelector.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from sortedcontainers import SortedDict

from minipulsar.broker.errors import ConsumerAssignError
from minipulsar.broker.selectors.base import StickyKeyConsumerSelector
from minipulsar.broker.sticky_key import RANGE_SIZE

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer


class AutoSplitSelector(StickyKeyConsumerSelector):
    def __init__(self) -> None:
        self._bounds: SortedDict = SortedDict()  # inclusive upper bound -> consumer
        self._bound_of: dict = {}

    def add_consumer(self, consumer: "Consumer") -> None:
        if not self._bounds:
            self._set(RANGE_SIZE, consumer)
            return
        previous, best, best_size = 0, None, 0
        for bound in self._bounds:
            if bound - previous > best_size:
                best, best_size = bound, bound - previous
            previous = bound
        if best_size <= 1:
            raise ConsumerAssignError("no hash range is left to split for a new consumer")
        self._set(best - (best_size >> 1), consumer)

    def _set(self, bound: int, consumer: "Consumer") -> None:
        self._bounds[bound] = consumer
        self._bound_of[consumer] = bound

    def remove_consumer(self, consumer: "Consumer") -> None:
        bound = self._bound_of.pop(consumer, None)
        if bound is None:
            return
        del self._bounds[bound]
        if bound == RANGE_SIZE and self._bounds:
            below, heir = self._bounds.popitem(-1)
            self._set(RANGE_SIZE, heir)

    def select(self, slot: int) -> "Consumer | None":
        index = self._bounds.bisect_left(slot)
        return self._bounds.values()[index] if index < len(self._bounds) else None

    def consumer_ranges(self) -> dict["Consumer", list[tuple[int, int]]]:
        ranges, start = {}, 0
        for bound, consumer in self._bounds.items():
            ranges[consumer] = [(start, min(bound, RANGE_SIZE - 1))]
            start = bound + 1
        return ranges
