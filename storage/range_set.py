"""A set of open-closed position ranges ``(lower, upper]``.

This is the shape of Pulsar's ``ManagedCursorImpl.individualDeletedMessages`` (and of
PIP-282's "individually sent positions"): acknowledging entry ``L:E`` alone adds
``(L:E-1, L:E]``; touching ranges merge, so acking 3:5 and 3:6 gives ``(3:4, 3:6]``.
Ranges never cross a ledger boundary because the lower end of an entry's range is
always in its own ledger (``L:-1`` for entry 0).

Underneath: the lower endpoints in sorted order, a dict lower -> upper and a dict upper -> lower.
An acknowledgement that extends a range at either end (each consumer acknowledges in order, so
this is the common case) changes no sorted key's place and costs a few dict operations. The sorted
keys are a plain list (bisect and memmove in C: several times faster than a SortedList) while
there are at most ``LIST_LIMIT`` ranges, and a ``sortedcontainers.SortedList`` past that, so a
pathological ack pattern with millions of ranges still costs O(log n) per acknowledgement.
"""
from __future__ import annotations

import bisect
from functools import partial
from typing import Callable, Iterable, Iterator

from sortedcontainers import SortedList

from .position import Position, make_position as _position


class _ListKeys(list):
    """Sorted keys in a plain list, with the SortedList methods the range set uses."""

    __slots__ = ()

    def finder(self) -> Callable[[Position], int]:
        """bisect_left without a Python frame per call (the range set's hot lookups use it)."""
        return partial(bisect.bisect_left, self)

    def insert_at(self, index: int, key: Position) -> None:
        """Insert key at index (where the finder places it)."""
        self.insert(index, key)

    def replace(self, index: int, key: Position) -> None:
        """Put key at index; the caller guarantees the order holds."""
        self[index] = key


class _TreeKeys(SortedList):
    """Sorted keys in a SortedList, once there are too many for a list."""

    def finder(self) -> Callable[[Position], int]:
        return self.bisect_left

    def insert_at(self, index: int, key: Position) -> None:
        self.add(key)  # a SortedList places keys itself

    def replace(self, index: int, key: Position) -> None:
        del self[index]
        self.add(key)


class PositionRangeSet:
    """Disjoint, non-touching ``(lower, upper]`` ranges over :class:`Position`, lowest first."""

    LIST_LIMIT = 4096  # ranges kept in a plain sorted list; more move to a SortedList

    __slots__ = ("_lowers", "_find", "_upper_of", "_lower_of", "_entries")

    def __init__(self, ranges: Iterable[tuple[Position, Position]] = ()) -> None:
        self._set_keys(_ListKeys())
        self._upper_of: dict[Position, Position] = {}  # lower -> upper
        self._lower_of: dict[Position, Position] = {}  # upper -> lower
        self._entries = 0  # number of entry ids covered
        for lower, upper in ranges:
            self.add_range(lower, upper)

    # -- queries -------------------------------------------------------------
    def __len__(self) -> int:
        """Number of ranges (Pulsar ``individualDeletedMessages.size()``)."""
        return len(self._upper_of)

    def __bool__(self) -> bool:
        return bool(self._upper_of)

    def __iter__(self) -> Iterator[tuple[Position, Position]]:
        upper_of = self._upper_of
        for lower in self._lowers:
            yield lower, upper_of[lower]

    def ranges(self, limit: int | None = None) -> list[tuple[Position, Position]]:
        """The ``(lower, upper]`` pairs, lowest first; at most ``limit`` of them."""
        lowers = self._lowers if limit is None else self._lowers[:limit]
        return [(lower, self._upper_of[lower]) for lower in lowers]

    @property
    def entry_count(self) -> int:
        """How many entries the ranges cover (each range holds ``upper.entry - lower.entry``)."""
        return self._entries

    def range_containing(self, pos: Position) -> tuple[Position, Position] | None:
        """The ``(lower, upper]`` range holding ``pos``, or None."""
        idx = self._find(pos) - 1  # the last range whose lower end is below pos
        if idx < 0:
            return None
        lower = self._lowers[idx]
        upper = self._upper_of[lower]
        return (lower, upper) if pos <= upper else None

    def contains(self, pos: Position) -> bool:
        """True when some range has ``lower < pos <= upper``."""
        idx = self._find(pos) - 1  # range_containing's lookup, inlined: acks and replays ask this
        return idx >= 0 and pos <= self._upper_of[self._lowers[idx]]

    __contains__ = contains

    def first_range_above(self, pos: Position) -> tuple[Position, Position] | None:
        """The lowest range whose upper end is > ``pos``, or None."""
        lowers = self._lowers
        idx = self._find(pos)
        if idx > 0:
            lower = lowers[idx - 1]
            upper = self._upper_of[lower]
            if upper > pos:
                return lower, upper
        if idx < len(lowers):
            lower = lowers[idx]
            return lower, self._upper_of[lower]
        return None

    # -- updates -------------------------------------------------------------
    def add(self, pos: Position) -> bool:
        """Add the single entry ``pos`` as ``(L:E-1, L:E]``; False when it was already in.

        Merging with a neighbour is found with dict lookups (the range ending just below ``pos``,
        the range starting just at it); only an isolated entry needs the sorted search."""
        below = _position((pos[0], pos[1] - 1))
        upper_of, lower_of = self._upper_of, self._lower_of
        left_lower = lower_of.get(below)
        right_upper = upper_of.get(pos)
        if left_lower is None and right_upper is None:
            # One search both tests containment and places the new range: no range starts at pos
            # or at below (that one would hold pos), so below goes where pos would.
            idx = self._find(pos)
            if idx and pos <= upper_of[self._lowers[idx - 1]]:
                return False
            self._put(below, pos, idx)
            return True
        if right_upper is None:  # extends the range below at its upper end
            upper_of[left_lower] = pos
            del lower_of[below]
            lower_of[pos] = left_lower
        elif left_lower is None:  # extends the range above at its lower end: same place in the order
            self._lowers.replace(self._find(pos), below)
            del upper_of[pos]
            upper_of[below] = right_upper
            lower_of[right_upper] = below
        else:  # joins the two
            del self._lowers[self._find(pos)]
            del upper_of[pos]
            del lower_of[below]
            upper_of[left_lower] = right_upper
            lower_of[right_upper] = left_lower
        self._entries += 1
        return True

    def add_range(self, lower: Position, upper: Position) -> None:
        """Add ``(lower, upper]`` (same ledger), merging with overlapping or touching ranges."""
        if not lower < upper:
            return
        if lower.ledger_id != upper.ledger_id:
            raise ValueError(f"range ({lower}, {upper}] crosses a ledger boundary")
        lowers = self._lowers
        idx = self._find(lower)
        if idx > 0 and self._upper_of[lowers[idx - 1]] >= lower:  # the range below touches or overlaps
            idx -= 1
        new_lower, new_upper = lower, upper
        while idx < len(lowers):
            r_lower = lowers[idx]
            if r_lower > upper:
                break
            r_upper = self._upper_of[r_lower]
            new_lower = min(new_lower, r_lower)
            new_upper = max(new_upper, r_upper)
            self._drop(r_lower, r_upper)
        self._put(new_lower, new_upper, self._find(new_lower))

    def remove_at_most(self, pos: Position) -> None:
        """Drop everything ``<= pos`` (the mark-delete position moved to ``pos``)."""
        lowers, upper_of = self._lowers, self._upper_of
        gone = 0  # ranges wholly at or below pos: removed from the sorted keys in one slice
        while gone < len(lowers) and lowers[gone] < pos and upper_of[lowers[gone]] <= pos:
            lower = lowers[gone]
            upper = upper_of.pop(lower)
            del self._lower_of[upper]
            self._entries -= upper.entry_id - lower.entry_id
            gone += 1
        if gone:
            del lowers[:gone]
        if lowers and lowers[0] < pos:  # cut the range that straddles pos
            lower = lowers[0]
            upper = upper_of.pop(lower)
            cut = pos if pos.ledger_id == upper.ledger_id else Position(upper.ledger_id, -1)
            lowers.replace(0, cut)
            upper_of[cut] = upper
            self._lower_of[upper] = cut
            self._entries -= cut.entry_id - lower.entry_id

    def clear(self) -> None:
        """Remove every range."""
        self._set_keys(_ListKeys())
        self._upper_of.clear()
        self._lower_of.clear()
        self._entries = 0

    def _set_keys(self, lowers: _ListKeys | _TreeKeys) -> None:
        self._lowers = lowers  # lower endpoints ascending
        self._find = lowers.finder()

    def _put(self, lower: Position, upper: Position, index: int) -> None:
        """Insert (lower, upper]; index: where lower goes in the sorted keys (self._find(lower))."""
        lowers = self._lowers
        lowers.insert_at(index, lower)
        if len(lowers) > self.LIST_LIMIT and type(lowers) is _ListKeys:
            self._set_keys(_TreeKeys(lowers))
        self._upper_of[lower] = upper
        self._lower_of[upper] = lower
        self._entries += upper.entry_id - lower.entry_id

    def _drop(self, lower: Position, upper: Position) -> None:
        del self._lowers[self._find(lower)]
        del self._upper_of[lower]
        del self._lower_of[upper]
        self._entries -= upper.entry_id - lower.entry_id

    def __repr__(self) -> str:
        return "[" + ", ".join(f"({lo}, {up}]" for lo, up in self) + "]"
