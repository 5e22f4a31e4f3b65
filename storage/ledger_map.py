"""The ledger map of one managed ledger and the arithmetic of positions over it.

A managed ledger is a run of ledgers (segments); each retained one is known by its
:class:`SegmentIndex` (durable entries only: the loop publishes a batch's entries once
the journal reported them durable). Pulsar keeps the same map in ``ManagedLedgerImpl``
(``ledgers``, a ``NavigableMap<Long, LedgerInfo>``, and ``currentLedger``) and computes
positions over it there (``getNextValidPosition``, ``getPreviousPosition``,
``getNumberOfEntries(Range)``, ``getFirstPosition``...). Here that arithmetic is one class
with no I/O, no event loop and no lock, so a unit test builds a map directly.

Shapes: positions are ``Position(ledger_id, entry_id)``; ``(L, -1)`` stands before the
first entry of ledger L. Ledgers may be empty (a roll-over on open, a ledger whose appends
failed) and trimmed ledgers are simply absent. The current ledger is always in the map,
possibly empty. Sizes are payload bytes (record headers excluded).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Iterable

from . import segment
from .position import Position, make_position
from .segment import SegmentIndex


@dataclass(frozen=True, slots=True)
class LedgerInfo:
    """One ledger (segment) of a managed ledger: id, entries, payload bytes, seal time (ms since
    the epoch, 0 while it is the current ledger). Pulsar's ManagedLedgerInfo.LedgerInfo."""

    ledger_id: int
    entries: int
    size: int
    sealed_at_ms: int


class LedgerMap:
    """``ledgers``: ledger id -> SegmentIndex, oldest first (a plain dict kept in id order, read
    directly on the read path); ``current_id``: the ledger being appended to. Mutated only on
    the event loop by the managed ledger (:meth:`add`, :meth:`start_ledger`, :meth:`remove`, and
    the offsets of the current SegmentIndex as batches become durable).

    A dict and a sorted list of its ids, not a sortedcontainers.SortedDict: a SortedDict is about
    twenty objects the cyclic garbage collector tracks (its SortedList, that list's lists and a
    dozen bound methods), one map per loaded topic: about a fifth of the objects a collection of
    the older generations scans once many topics are loaded (19 of about 100 a topic)."""

    __slots__ = ("ledgers", "current_id", "_ids")

    def __init__(self, indexes: Iterable[SegmentIndex] = (), current_id: int = 0) -> None:
        given = {idx.ledger_id: idx for idx in indexes}
        self._ids = sorted(given)  # the keys of ledgers, ascending
        self.ledgers: dict[int, SegmentIndex] = {ledger_id: given[ledger_id] for ledger_id in self._ids}
        self.current_id = current_id

    # -- changes -------------------------------------------------------------
    def add(self, index: SegmentIndex) -> None:
        """Insert a (sealed) ledger, e.g. one recovered at open (or replace the one of its id)."""
        ledger_id, ledgers, ids = index.ledger_id, self.ledgers, self._ids
        if ledger_id in ledgers:
            ledgers[ledger_id] = index  # replaced where it stands: the order holds
        elif not ids or ledger_id > ids[-1]:
            ledgers[ledger_id] = index  # a new highest id goes last: the dict stays in id order
            ids.append(ledger_id)
        else:  # an id below the highest (rare: an open): rebuild the dict's order in place
            bisect.insort(ids, ledger_id)
            ledgers[ledger_id] = index
            in_order = [(lid, ledgers[lid]) for lid in ids]
            ledgers.clear()
            ledgers.update(in_order)

    def start_ledger(self, ledger_id: int) -> SegmentIndex:
        """Add the empty ledger ``ledger_id`` and make it the current one (open, roll-over)."""
        index = SegmentIndex(ledger_id)
        self.add(index)
        self.current_id = ledger_id
        return index

    def remove(self, ledger_id: int) -> SegmentIndex:
        """Forget a trimmed ledger; KeyError when it is not in the map."""
        index = self.ledgers.pop(ledger_id)
        del self._ids[bisect.bisect_left(self._ids, ledger_id)]
        return index

    def _irange(self, minimum: int | None = None, maximum: int | None = None, reverse: bool = False) -> list[int]:
        """Retained ledger ids within [minimum, maximum] (None: unbounded), ascending or reversed."""
        ids = self._ids
        low = 0 if minimum is None else bisect.bisect_left(ids, minimum)
        high = len(ids) if maximum is None else bisect.bisect_right(ids, maximum)
        return ids[low:high][::-1] if reverse else ids[low:high]

    # -- the whole map -------------------------------------------------------
    @property
    def ledger_ids(self) -> list[int]:
        """Retained ledger ids, oldest first (including the current, possibly empty, one)."""
        return list(self._ids)

    @property
    def first_position(self) -> Position | None:
        """First retained entry, or None when no entry is retained."""
        for lid, info in self.ledgers.items():
            if info.entries:
                return Position(lid, 0)
        return None

    def before_first(self) -> Position:
        """``(first retained ledger id, -1)``: the mark-delete position of "earliest"; IndexError
        on an empty map (a managed ledger always holds its current ledger)."""
        return Position(self._ids[0], -1)

    @property
    def number_of_entries(self) -> int:
        """Retained durable entries."""
        return sum(info.entries for info in self.ledgers.values())

    @property
    def total_size(self) -> int:
        """Payload bytes of retained durable entries (record headers excluded)."""
        return sum(info.data_bytes for info in self.ledgers.values())

    def infos(self) -> list[LedgerInfo]:
        """The retained ledgers, oldest first, the current one last."""
        return [LedgerInfo(lid, info.entries, info.data_bytes, info.sealed_at_ms) for lid, info in self.ledgers.items()]

    def spans(self) -> list[tuple[int, int]]:
        """``(ledger id, entries)`` of every retained ledger that has entries, oldest first."""
        return [(lid, info.entries) for lid, info in self.ledgers.items() if info.entries]

    @staticmethod
    def position_in(spans: list[tuple[int, int]], index: int) -> Position:
        """The position of the ``index``-th entry (0-based) of ``spans``; IndexError past the end."""
        for lid, n in spans:
            if index < n:
                return Position(lid, index)
            index -= n
        raise IndexError(index)

    def nth_position(self, n: int, from_end: bool = False) -> Position | None:
        """The n-th retained entry (1 = the first, or with from_end the last), None past the ends."""
        spans = self.spans()
        if from_end:
            for lid, entries in reversed(spans):
                if n <= entries:
                    return Position(lid, entries - n)
                n -= entries
            return None
        for lid, entries in spans:
            if n <= entries:
                return Position(lid, n - 1)
            n -= entries
        return None

    # -- stepping ------------------------------------------------------------
    def next_valid_position(self, pos: Position) -> Position:
        """The position right after ``pos`` an entry has (or would get), crossing ledgers: past the
        last entry of a sealed ledger comes the first ledger after it that has entries (or the
        current one); in the current ledger (or beyond it) simply ``(L, E + 1)``. Called per
        acknowledgement (Pulsar ManagedLedgerImpl.getNextValidPosition)."""
        lid, eid = pos
        info = self.ledgers.get(lid)
        if lid >= self.current_id or (info is not None and eid + 1 < info.entries):
            return make_position((lid, eid + 1))  # per acknowledgement: the fast constructor
        for nid in self._irange(minimum=lid + 1):
            if self.ledgers[nid].entries or nid == self.current_id:
                return Position(nid, 0)
        return Position(self.current_id, 0)

    def previous_position(self, pos: Position) -> Position:
        """The entry before ``pos`` (crossing back into earlier ledgers), or ``(L, -1)`` when no
        retained entry lies before it (Pulsar ManagedLedgerImpl.getPreviousPosition)."""
        if pos.entry_id > 0:
            return Position(pos.ledger_id, pos.entry_id - 1)
        for lid in self._irange(maximum=pos.ledger_id - 1, reverse=True):
            n = self.ledgers[lid].entries
            if n:
                return Position(lid, n - 1)
        return Position(pos.ledger_id, -1)

    def advance(self, pos: Position, n: int) -> Position:
        """The position ``n`` retained entries after ``pos`` (stops at the last entry)."""
        while n > 0:
            nxt = self.next_valid_position(pos)
            info = self.ledgers.get(nxt.ledger_id)
            avail = info.entries - nxt.entry_id if info is not None else 0
            if avail <= 0:
                return pos
            if n <= avail:
                return Position(nxt.ledger_id, nxt.entry_id + n - 1)
            n -= avail
            pos = Position(nxt.ledger_id, info.entries - 1)
        return pos

    def first_at_or_after(self, pos: Position) -> Position | None:
        """The first retained durable entry ``>= pos`` (``(L, -1)`` counts as ``(L, 0)``); None
        if there is none. Where every read starts."""
        for lid in self._irange(minimum=pos.ledger_id):
            n = self.ledgers[lid].entries
            if lid == pos.ledger_id:
                if max(pos.entry_id, 0) < n:
                    return Position(lid, max(pos.entry_id, 0))
            elif n:
                return Position(lid, 0)
        return None

    # -- counting ------------------------------------------------------------
    def count_entries_between(self, start_exclusive: Position, end_inclusive: Position) -> int:
        """Retained durable entries ``p`` with ``start_exclusive < p <= end_inclusive``
        (Pulsar ManagedLedgerImpl.getNumberOfEntries(Range))."""
        if end_inclusive <= start_exclusive:
            return 0
        total = 0
        for lid in self._irange(minimum=start_exclusive.ledger_id, maximum=end_inclusive.ledger_id):
            n = self.ledgers[lid].entries
            lo = start_exclusive.entry_id + 1 if lid == start_exclusive.ledger_id else 0
            hi = min(end_inclusive.entry_id, n - 1) if lid == end_inclusive.ledger_id else n - 1
            if hi >= lo:
                total += hi - lo + 1
        return total

    def size_between(self, start_exclusive: Position, end_inclusive: Position) -> int:
        """Payload bytes of the retained entries ``p`` with ``start_exclusive < p <= end_inclusive``
        (record headers excluded): a subscription's backlog size."""
        total = 0
        for lid in self._irange(minimum=start_exclusive.ledger_id, maximum=end_inclusive.ledger_id):
            info = self.ledgers[lid]
            lo = start_exclusive.entry_id + 1 if lid == start_exclusive.ledger_id else 0
            hi = min(end_inclusive.entry_id, info.entries - 1) if lid == end_inclusive.ledger_id else info.entries - 1
            if hi >= lo:
                end = info.offsets[hi + 1] if hi + 1 < info.entries else info.end_offset
                total += end - info.offsets[lo] - segment.RECORD_OVERHEAD * (hi - lo + 1)
        return total

    def position_leaving_backlog(self, max_bytes: int, last_confirmed: Position) -> Position:
        """The lowest position after which at most max_bytes of entries remain (``last_confirmed``
        when even the last entry is larger): where a backlog is cut down to max_bytes."""
        position, remaining = last_confirmed, 0
        for lid in reversed(self._ids):
            info = self.ledgers[lid]
            for entry_id in range(info.entries - 1, -1, -1):
                end = info.offsets[entry_id + 1] if entry_id + 1 < info.entries else info.end_offset
                remaining += end - info.offsets[entry_id] - segment.RECORD_OVERHEAD
                if remaining > max_bytes:
                    return position
                position = self.previous_position(Position(lid, entry_id))
        return position

    def __repr__(self) -> str:
        return f"LedgerMap({[(lid, info.entries) for lid, info in self.ledgers.items()]}, current={self.current_id})"
