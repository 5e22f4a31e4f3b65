"""Entries a dispatcher read but could not send yet, kept parsed until their replay.

An entry that finds no consumer able to take it (no permits, or a Key_Shared ordering rule) goes to
the redelivery set and is replayed later. Re-reading it then costs a ledger read per scattered
position (often from disk once the tail cache has moved on) and a second parse of its metadata;
keeping the entry and its EntryInfo here avoids both. The memory is bounded broker-wide, by half of
managedLedgerCacheSizeMB for all dispatchers together, counting each entry's data plus an estimate for
its parsed metadata: past it, entries are held back as before and replayed from the ledger. Pulsar
keeps only positions in its replay set and re-reads (MessageRedeliveryController); this is a cache
in front of that re-read, never the only copy.
"""
from __future__ import annotations

from typing import Callable

from minipulsar.broker.entry_info import EntryInfo
from minipulsar.storage import Entry, Position

# Bytes charged per held entry besides its data: the parsed MessageMetadata and the dict slot.
PARSED_OVERHEAD_BYTES = 512


class HeldBudget:
    """The bytes all dispatchers' HeldEntries may hold together; limit() is read at every keep, so
    a changed managedLedgerCacheSizeMB applies at once."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: Callable[[], int]) -> None:
        self.limit = limit
        self.used = 0


class HeldEntries:
    """position -> (Entry, EntryInfo) for one dispatcher; each costs its data + PARSED_OVERHEAD_BYTES
    of the shared budget."""

    __slots__ = ("_budget", "_held")

    def __init__(self, budget: HeldBudget) -> None:
        self._budget = budget
        self._held: dict[Position, tuple[Entry, EntryInfo]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def __bool__(self) -> bool:
        return bool(self._held)

    def keep(self, entry: Entry, info: EntryInfo) -> None:
        """Hold entry for its replay, unless that would pass the byte bound."""
        size = len(entry.data) + PARSED_OVERHEAD_BYTES
        budget = self._budget
        if budget.used + size <= budget.limit() and entry.position not in self._held:
            self._held[entry.position] = (entry, info)
            budget.used += size

    def entry(self, position: Position) -> Entry | None:
        """The held entry at position (it stays held until take_info or discard), or None."""
        held = self._held.get(position)
        return held[0] if held is not None else None

    def take_info(self, position: Position) -> EntryInfo | None:
        """Release the entry at position for dispatch and return its parsed metadata, or None."""
        held = self._held.pop(position, None)
        if held is None:
            return None
        self._budget.used -= len(held[0].data) + PARSED_OVERHEAD_BYTES
        return held[1]

    def discard(self, position: Position) -> None:
        """Forget position (acknowledged, or no longer waiting)."""
        self.take_info(position)

    def clear(self) -> None:
        self._budget.used -= sum(len(entry.data) + PARSED_OVERHEAD_BYTES for entry, _ in self._held.values())
        self._held.clear()
