"""The redelivery set: entries waiting to be (re)sent, ordered by position, indexed by sticky key hash.

Key_Shared needs to know whether an earlier entry of the same hash still waits here, so that a
later entry of that hash never overtakes it. Source: Pulsar MessageRedeliveryController.

Every entry a Key_Shared dispatcher cannot send at once passes through here (with out-of-phase
consumers, most of them), so adding and removing stay in C: a plain dict for membership, a heap
for the lowest positions (pop_first) with lazy deletion, and per hash a plain sorted list.
"""
from __future__ import annotations

import bisect
import heapq
from typing import ItemsView, Iterable, Iterator

from minipulsar.storage import Position


class RedeliverySet:
    """Positions with their sticky key hash (0 for dispatchers that do not use hashes)."""

    def __init__(self) -> None:
        self._hash_of: dict[Position, int] = {}
        # Every waiting position, plus ones removed since (skipped when popped; rebuilt when they
        # outnumber the live ones, so the heap stays within twice the set's size).
        self._heap: list[Position] = []
        # hash -> its positions ascending. Plain lists: a hash holds few entries, mostly appended in
        # order and taken from the front, where bisect on a list beats a SortedList several times.
        self._by_hash: dict[int, list[Position]] = {}

    def __len__(self) -> int:
        return len(self._hash_of)

    def __bool__(self) -> bool:
        return bool(self._hash_of)

    def __contains__(self, position: Position) -> bool:
        return position in self._hash_of

    def __iter__(self) -> Iterator[tuple[Position, int]]:
        """(position, hash) in position order."""
        return iter(sorted(self._hash_of.items()))

    def add(self, position: Position, key_hash: int = 0) -> None:
        if position in self._hash_of:
            return
        self._hash_of[position] = key_hash
        heapq.heappush(self._heap, position)
        positions = self._by_hash.get(key_hash)
        if positions is None:
            self._by_hash[key_hash] = [position]
        elif positions[-1] < position:
            positions.append(position)
        else:
            bisect.insort(positions, position)

    def update(self, items: Iterable[tuple[Position, int]]) -> None:
        for position, key_hash in items:
            self.add(position, key_hash)

    def discard(self, position: Position) -> int | None:
        """Remove position; returns the hash it waited under, None when it was not here."""
        key_hash = self._remove(position)
        if len(self._heap) > 2 * len(self._hash_of) + 1024:
            self._heap = list(self._hash_of)
            heapq.heapify(self._heap)
        return key_hash

    def _remove(self, position: Position) -> int | None:
        """Drop position from the dict and its hash's list (the heap forgets it lazily); its hash."""
        key_hash = self._hash_of.pop(position, None)
        if key_hash is None:
            return None
        positions = self._by_hash[key_hash]
        del positions[bisect.bisect_left(positions, position)]
        if not positions:
            del self._by_hash[key_hash]
        return key_hash

    def pop_first(self, n: int) -> list[Position]:
        """Remove and return the n lowest positions."""
        taken: list[Position] = []
        heap = self._heap
        while heap and len(taken) < n:
            position = heapq.heappop(heap)
            if self._remove(position) is not None:  # None: removed earlier, or a second copy of one taken
                taken.append(position)
        return taken

    def hashes(self) -> ItemsView[int, list[Position]]:
        """(hash, its waiting positions ascending) for every hash, in the order hashes started
        waiting (a hash that empties and comes back goes to the end). A live view: do not add or
        remove while iterating it."""
        return self._by_hash.items()

    def has_hash_below(self, key_hash: int, position: Position) -> bool:
        """True when an entry of key_hash at a position lower than `position` waits here."""
        positions = self._by_hash.get(key_hash)
        return positions is not None and positions[0] < position

    def clear(self) -> None:
        self._hash_of.clear()
        self._heap.clear()
        self._by_hash.clear()
