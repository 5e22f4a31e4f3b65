"""Reads of one managed ledger's durable entries: from the tail cache, else from the segments.

A read walks the ledger map from its start position, ledger by ledger, taking as many
entries as the two limits allow; each run of one ledger comes from the tail cache when it
holds all of it (a caught-up consumer never touches the disk), else from the entries the
journal made durable and the ledger storage has not yet written into their segment (held in
memory until then), otherwise from the segment file through its offset index, off the loop in
the executor. Positions in trimmed ledgers are
skipped forward. Pulsar: ``ManagedLedgerImpl.asyncReadEntries`` / ``OpReadEntry`` in front of
``EntryCacheImpl``.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable, Protocol

from . import segment
from .entry import Entry, make_entry
from .entry_cache import EntryCache
from .errors import LedgerClosedError
from .ledger_map import LedgerMap
from .position import Position, make_position
from .segment import SegmentIndex

if TYPE_CHECKING:
    from concurrent.futures import Executor


class UnwrittenEntries(Protocol):
    """Durable entries not yet in their segment (storage.group_commit.GroupCommit)."""

    def unwritten(self, ledger_id: int, first: int, last: int) -> list[bytes] | None: ...

    def first_unwritten(self, ledger_id: int) -> int | None: ...


def last_within(info: SegmentIndex, first: int, max_entries: int, budget: int, need_one: bool) -> int:
    """Last entry id of ``info`` to read from ``first`` within ``max_entries`` and ``budget``
    payload bytes (``need_one``: the first entry counts even when larger); ``first - 1`` = none fits."""
    offsets, n = info.offsets, info.entries
    stop = min(n, first + max_entries)
    if stop <= first:
        return first - 1
    end = offsets[stop] if stop < n else info.end_offset
    whole = end - offsets[first] - (stop - first) * segment.RECORD_OVERHEAD
    if whole <= budget:  # the usual case: everything asked for fits, no need to size each entry
        return stop - 1
    last = first - 1
    for i in range(first, stop):
        end = offsets[i + 1] if i + 1 < n else info.end_offset
        size = end - offsets[i] - segment.RECORD_OVERHEAD
        if size > budget and not (need_one and last < first):
            break
        budget -= size
        last = i
    return last


class EntryReader:
    """The read side of one managed ledger. ``loop`` is set when the ledger opens; ``closed`` is
    set by the ledger once it is closed, after which every read raises LedgerClosedError."""

    def __init__(self, name: str, folder: str, executor: "Executor", ledgers: LedgerMap, cache: EntryCache,
                 memory: UnwrittenEntries) -> None:
        self.name = name
        self._memory = memory
        self.folder = folder
        self.executor = executor
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self._map = ledgers
        self._cache = cache

    async def read_entries(self, start: Position, max_entries: int,
                           max_bytes: int = 5 * 1024 * 1024) -> list[Entry]:
        """Durable entries at positions ``>= start``, in order, within the two limits.

        At least one entry is returned when one exists (even if larger than max_bytes);
        positions in trimmed ledgers are skipped. Raises LedgerCorruptionError on a bad record,
        LedgerClosedError once the ledger is closed.
        """
        if self.closed:
            raise LedgerClosedError(f"managed ledger {self.name} is closed")
        out: list[Entry] = []
        budget = max_bytes
        ledgers, first_at_or_after = self._map.ledgers, self._map.first_at_or_after
        pos = first_at_or_after(start)
        while pos is not None and len(out) < max_entries and (budget > 0 or not out):
            info = ledgers[pos.ledger_id]
            last = last_within(info, pos.entry_id, max_entries - len(out), budget, not out)
            if last < pos.entry_id:
                break
            datas = self._cache.get(pos.ledger_id, pos.entry_id, last)
            if datas is None:
                datas = self._memory.unwritten(pos.ledger_id, pos.entry_id, last)
            if datas is None:
                split = self._memory.first_unwritten(pos.ledger_id)
                if split is not None and split <= last:  # the rest of the run is memory's, read next
                    last = split - 1
                try:
                    datas = await self.loop.run_in_executor(
                        self.executor, segment.read_records, self.folder, info, pos.entry_id, last)
                except FileNotFoundError:  # trimmed while we read: skip forward
                    pos = first_at_or_after(Position(pos.ledger_id + 1, 0))
                    continue
            lid = pos.ledger_id
            for i, data in enumerate(datas, pos.entry_id):
                out.append(make_entry((make_position((lid, i)), data)))
                budget -= len(data)
            pos = first_at_or_after(Position(lid, last + 1))
        return out

    async def read_positions(self, positions: list[Position]) -> list[Entry]:
        """The entries at ``positions`` (ascending) that exist, in order; each run of consecutive
        entry ids is read at once (one cache lookup or one disk read), not entry by entry."""
        out: list[Entry] = []
        i = 0
        while i < len(positions):
            first = positions[i]
            j = i + 1
            while j < len(positions) and positions[j] == Position(first.ledger_id, first.entry_id + j - i):
                j += 1
            run = await self.read_entries(first, j - i, max_bytes=1 << 62)
            out.extend(entry for entry in run if entry.position.ledger_id == first.ledger_id
                       and entry.position.entry_id < first.entry_id + j - i)
            i = j
        return out

    async def read_entry(self, position: Position) -> Entry | None:
        """The entry at exactly ``position``, or None if it does not exist (or was trimmed)."""
        entries = await self.read_entries(position, 1)
        return entries[0] if entries and entries[0].position == position else None

    async def find_newest_matching(self, predicate: Callable[[bytes], bool]) -> Position | None:
        """Binary search over the entries retained when it starts: the last position whose data
        satisfies the monotone ``predicate`` (Pulsar ManagedCursorImpl.asyncFindNewestMatching)."""
        spans = self._map.spans()
        lo, hi, found = 0, sum(n for _, n in spans) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            pos = LedgerMap.position_in(spans, mid)
            entry = await self.read_entry(pos)
            if entry is None or predicate(entry.data):
                found = pos if entry is not None else found
                lo = mid + 1
            else:
                hi = mid - 1
        return found
