"""The redelivery set: entries waiting to be (re)sent, ordered by position, indexed by sticky key hash.

Key_Shared needs to know whether an earlier entry of the same hash still waits here, so that a
later entry of that hash never overtakes it. Source: Pulsar MessageRedeliveryController.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from sortedcontainers import SortedDict, SortedList

from minipulsar.storage import Position


class RedeliverySet:
    """Positions with their sticky key hash (0 for dispatchers that do not use hashes)."""

    def __init__(self) -> None:
        self._hash_of: SortedDict = SortedDict()  # Position -> hash
        self._by_hash: dict[int, SortedList] = {}

    def __len__(self) -> int:
        return len(self._hash_of)

    def __bool__(self) -> bool:
        return bool(self._hash_of)

    def __contains__(self, position: Position) -> bool:
        return position in self._hash_of

    def __iter__(self) -> Iterator[tuple[Position, int]]:
        return iter(self._hash_of.items())

    def add(self, position: Position, key_hash: int = 0) -> None:
        if position in self._hash_of:
            return
        self._hash_of[position] = key_hash
        self._by_hash.setdefault(key_hash, SortedList()).add(position)

    def update(self, items: Iterable[tuple[Position, int]]) -> None:
        for position, key_hash in items:
            self.add(position, key_hash)

    def discard(self, position: Position) -> None:
        key_hash = self._hash_of.pop(position, None)
        if key_hash is None:
            return
        positions = self._by_hash[key_hash]
        positions.remove(position)
        if not positions:
            del self._by_hash[key_hash]

    def pop_first(self, n: int) -> list[Position]:
        """Remove and return the n lowest positions."""
        taken = list(self._hash_of.keys()[:n])
        for position in taken:
            self.discard(position)
        return taken

    def hashes(self) -> list[tuple[int, SortedList]]:
        """(hash, its waiting positions ascending) for every hash, in the order hashes started
        waiting (a hash that empties and comes back goes to the end)."""
        return list(self._by_hash.items())

    def has_hash_below(self, key_hash: int, position: Position) -> bool:
        """True when an entry of key_hash at a position lower than `position` waits here."""
        positions = self._by_hash.get(key_hash)
        return positions is not None and positions[0] < position

    def clear(self) -> None:
        self._hash_of.clear()
        self._by_hash.clear()
