"""A set of open-closed position ranges ``(lower, upper]``.

This is the shape of Pulsar's ``ManagedCursorImpl.individualDeletedMessages`` (and of
PIP-282's "individually sent positions"): acknowledging entry ``L:E`` alone adds
``(L:E-1, L:E]``; touching ranges merge, so acking 3:5 and 3:6 gives ``(3:4, 3:6]``.
Ranges never cross a ledger boundary because the lower end of an entry's range is
always in its own ledger (``L:-1`` for entry 0).

Underneath is a ``sortedcontainers.SortedDict`` keyed by the lower endpoint, plus a plain dict
from upper to lower endpoint: an acknowledgement that extends a range at its upper end (each
consumer acknowledges in order, so this is the common case) touches neither sorted structure's
keys and costs a few dict operations.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from sortedcontainers import SortedDict

from .position import Position


class PositionRangeSet:
    """Disjoint, non-touching ``(lower, upper]`` ranges over :class:`Position`, lowest first."""

    __slots__ = ("_by_lower", "_lower_of", "_entries")

    def __init__(self, ranges: Iterable[tuple[Position, Position]] = ()) -> None:
        self._by_lower: SortedDict = SortedDict()  # lower -> upper
        self._lower_of: dict[Position, Position] = {}  # upper -> lower
        self._entries = 0  # number of entry ids covered
        for lower, upper in ranges:
            self.add_range(lower, upper)

    # -- queries -------------------------------------------------------------
    def __len__(self) -> int:
        """Number of ranges (Pulsar ``individualDeletedMessages.size()``)."""
        return len(self._by_lower)

    def __bool__(self) -> bool:
        return bool(self._by_lower)

    def __iter__(self) -> Iterator[tuple[Position, Position]]:
        yield from self._by_lower.items()

    def ranges(self, limit: int | None = None) -> list[tuple[Position, Position]]:
        """The ``(lower, upper]`` pairs, lowest first; at most ``limit`` of them."""
        items = self._by_lower.items()
        if limit is not None and limit < len(items):
            items = items[:limit]
        return list(items)

    @property
    def entry_count(self) -> int:
        """How many entries the ranges cover (each range holds ``upper.entry - lower.entry``)."""
        return self._entries

    def range_containing(self, pos: Position) -> tuple[Position, Position] | None:
        """The ``(lower, upper]`` range holding ``pos``, or None."""
        by_lower = self._by_lower
        idx = by_lower.bisect_left(pos) - 1  # the last range whose lower end is below pos
        if idx < 0:
            return None
        lower, upper = by_lower.peekitem(idx)
        return (lower, upper) if pos <= upper else None

    def contains(self, pos: Position) -> bool:
        """True when some range has ``lower < pos <= upper``."""
        return self.range_containing(pos) is not None

    __contains__ = contains

    def first_range_above(self, pos: Position) -> tuple[Position, Position] | None:
        """The lowest range whose upper end is > ``pos``, or None."""
        by_lower = self._by_lower
        idx = by_lower.bisect_left(pos)
        if idx > 0:
            lower, upper = by_lower.peekitem(idx - 1)
            if upper > pos:
                return lower, upper
        return by_lower.peekitem(idx) if idx < len(by_lower) else None

    # -- updates -------------------------------------------------------------
    def add(self, pos: Position) -> bool:
        """Add the single entry ``pos`` as ``(L:E-1, L:E]``; False when it was already in.

        Merging with a neighbour is found with dict lookups (the range ending just below ``pos``,
        the range starting just at it); only an isolated entry needs the sorted search."""
        below = Position(pos.ledger_id, pos.entry_id - 1)
        left_lower = self._lower_of.get(below)
        right_upper = self._by_lower.get(pos)
        if left_lower is None and right_upper is None:
            if self.contains(pos):
                return False
            self._put(below, pos)
        elif right_upper is None:  # extends the range below in place: no key of a sorted structure changes
            self._by_lower[left_lower] = pos
            del self._lower_of[below]
            self._lower_of[pos] = left_lower
            self._entries += 1
        else:
            self._drop(pos, right_upper)
            if left_lower is not None:
                self._drop(left_lower, below)
            self._put(below if left_lower is None else left_lower, right_upper)
        return True

    def add_range(self, lower: Position, upper: Position) -> None:
        """Add ``(lower, upper]`` (same ledger), merging with overlapping or touching ranges."""
        if not lower < upper:
            return
        if lower.ledger_id != upper.ledger_id:
            raise ValueError(f"range ({lower}, {upper}] crosses a ledger boundary")
        by_lower = self._by_lower
        idx = by_lower.bisect_left(lower)
        if idx > 0 and by_lower.peekitem(idx - 1)[1] >= lower:  # the range below touches or overlaps
            idx -= 1
        new_lower, new_upper = lower, upper
        while idx < len(by_lower):
            r_lower, r_upper = by_lower.peekitem(idx)
            if r_lower > upper:
                break
            new_lower = min(new_lower, r_lower)
            new_upper = max(new_upper, r_upper)
            self._drop(r_lower, r_upper)
        self._put(new_lower, new_upper)

    def remove_at_most(self, pos: Position) -> None:
        """Drop everything ``<= pos`` (the mark-delete position moved to ``pos``)."""
        by_lower = self._by_lower
        while by_lower:
            lower, upper = by_lower.peekitem(0)
            if lower >= pos:
                return
            self._drop(lower, upper)
            if upper > pos:  # cut the range that straddles pos
                self._put(pos if pos.ledger_id == upper.ledger_id else Position(upper.ledger_id, -1), upper)
                return

    def clear(self) -> None:
        """Remove every range."""
        self._by_lower.clear()
        self._lower_of.clear()
        self._entries = 0

    def _put(self, lower: Position, upper: Position) -> None:
        self._by_lower[lower] = upper
        self._lower_of[upper] = lower
        self._entries += upper.entry_id - lower.entry_id

    def _drop(self, lower: Position, upper: Position) -> None:
        del self._by_lower[lower]
        del self._lower_of[upper]
        self._entries -= upper.entry_id - lower.entry_id

    def __repr__(self) -> str:
        return "[" + ", ".join(f"({lo}, {up}]" for lo, up in self) + "]"
