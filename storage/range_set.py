"""A set of open-closed position ranges ``(lower, upper]``.

This is the shape of Pulsar's ``ManagedCursorImpl.individualDeletedMessages`` (and of
PIP-282's "individually sent positions"): acknowledging entry ``L:E`` alone adds
``(L:E-1, L:E]``; touching ranges merge, so acking 3:5 and 3:6 gives ``(3:4, 3:6]``.
Ranges never cross a ledger boundary because the lower end of an entry's range is
always in its own ledger (``L:-1`` for entry 0).

Underneath is a ``sortedcontainers.SortedDict`` keyed by the upper endpoint.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from sortedcontainers import SortedDict

from .position import Position


class PositionRangeSet:
    """Disjoint, non-touching ``(lower, upper]`` ranges over :class:`Position`, lowest first."""

    __slots__ = ("_by_upper", "_entries")

    def __init__(self, ranges: Iterable[tuple[Position, Position]] = ()) -> None:
        self._by_upper: SortedDict = SortedDict()  # upper -> lower
        self._entries = 0                         # number of entry ids covered
        for lower, upper in ranges:
            self.add_range(lower, upper)

    # -- queries -------------------------------------------------------------
    def __len__(self) -> int:
        """Number of ranges (Pulsar ``individualDeletedMessages.size()``)."""
        return len(self._by_upper)

    def __bool__(self) -> bool:
        return bool(self._by_upper)

    def __iter__(self) -> Iterator[tuple[Position, Position]]:
        for upper, lower in self._by_upper.items():
            yield lower, upper

    def ranges(self, limit: int | None = None) -> list[tuple[Position, Position]]:
        """The ``(lower, upper]`` pairs, lowest first; at most ``limit`` of them."""
        items = self._by_upper.items()
        if limit is not None and limit < len(items):
            items = items[:limit]
        return [(lower, upper) for upper, lower in items]

    @property
    def entry_count(self) -> int:
        """How many entries the ranges cover (each range holds ``upper.entry - lower.entry``)."""
        return self._entries

    def contains(self, pos: Position) -> bool:
        """True when some range has ``lower < pos <= upper``."""
        idx = self._by_upper.bisect_left(pos)
        if idx == len(self._by_upper):
            return False
        upper = self._by_upper.keys()[idx]
        return self._by_upper[upper] < pos

    __contains__ = contains

    def range_containing(self, pos: Position) -> tuple[Position, Position] | None:
        """The ``(lower, upper]`` range holding ``pos``, or None."""
        idx = self._by_upper.bisect_left(pos)
        if idx == len(self._by_upper):
            return None
        upper = self._by_upper.keys()[idx]
        lower = self._by_upper[upper]
        return (lower, upper) if lower < pos else None

    def first_range_above(self, pos: Position) -> tuple[Position, Position] | None:
        """The lowest range whose upper end is > ``pos``, or None."""
        idx = self._by_upper.bisect_right(pos)
        if idx == len(self._by_upper):
            return None
        upper = self._by_upper.keys()[idx]
        return self._by_upper[upper], upper

    # -- updates -------------------------------------------------------------
    def add(self, pos: Position) -> None:
        """Add the single entry ``pos`` as ``(L:E-1, L:E]``."""
        self.add_range(Position(pos.ledger_id, pos.entry_id - 1), pos)

    def add_range(self, lower: Position, upper: Position) -> None:
        """Add ``(lower, upper]`` (same ledger), merging with overlapping or touching ranges."""
        if not lower < upper:
            return
        if lower.ledger_id != upper.ledger_id:
            raise ValueError(f"range ({lower}, {upper}] crosses a ledger boundary")
        by_upper = self._by_upper
        keys = by_upper.keys()
        idx = by_upper.bisect_left(lower)  # first range with upper >= lower: touching counts
        new_lower, new_upper = lower, upper
        while idx < len(keys):
            r_upper = keys[idx]
            r_lower = by_upper[r_upper]
            if r_lower > upper:
                break
            new_lower = min(new_lower, r_lower)
            new_upper = max(new_upper, r_upper)
            self._entries -= r_upper.entry_id - r_lower.entry_id
            del by_upper[r_upper]
        by_upper[new_upper] = new_lower
        self._entries += new_upper.entry_id - new_lower.entry_id

    def remove_at_most(self, pos: Position) -> None:
        """Drop everything ``<= pos`` (the mark-delete position moved to ``pos``)."""
        by_upper = self._by_upper
        while by_upper:
            upper, lower = by_upper.peekitem(0)
            if lower >= pos:
                return
            del by_upper[upper]
            self._entries -= upper.entry_id - lower.entry_id
            if upper > pos:  # cut the range that straddles pos
                new_lower = pos if pos.ledger_id == upper.ledger_id else Position(upper.ledger_id, -1)
                by_upper[upper] = new_lower
                self._entries += upper.entry_id - new_lower.entry_id
                return

    def clear(self) -> None:
        """Remove every range."""
        self._by_upper.clear()
        self._entries = 0

    def __repr__(self) -> str:
        return "[" + ", ".join(f"({lo}, {up}]" for lo, up in self) + "]"
