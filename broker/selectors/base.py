"""The interface every sticky-key consumer selector implements. Source: Pulsar StickyKeyConsumerSelector."""
from __future__ import annotations

from typing import TYPE_CHECKING

from minipulsar.broker.sticky_key import range_slot

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer


class StickyKeyConsumerSelector:
    """Maps a sticky key slot to the consumer that owns it."""

    def slot(self, hash31: int) -> int:
        """The slot of a 31-bit key hash in this selector's range (Pulsar StickyKeyConsumerSelector.DEFAULT_RANGE_SIZE = 2^16)."""
        return range_slot(hash31)

    def add_consumer(self, consumer: "Consumer") -> None:
        """Give consumer its share; raises ConsumerAssignError when it cannot be placed."""
        raise NotImplementedError

    def remove_consumer(self, consumer: "Consumer") -> None:
        """Take consumer's share away and hand it to the others."""
        raise NotImplementedError

    def select(self, slot: int) -> "Consumer | None":
        """The consumer owning slot, or None when nobody covers it."""
        raise NotImplementedError

    def consumer_ranges(self) -> dict["Consumer", list[tuple[int, int]]]:
        """Inclusive slot ranges per consumer (stats keyHashRanges)."""
        raise NotImplementedError
