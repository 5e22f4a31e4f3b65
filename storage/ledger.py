"""ManagedLedger: one topic's append-only log of entries, split into ledgers (segments).

Appends are group-committed by :class:`storage.writer.SegmentWriter`: ``add_entry`` only
appends the bytes to the pending chunk and awaits the chunk's shared future; the loop
hands a whole batch to the writer thread when none is in flight, and the thread resolves
the batch with one ``call_soon_threadsafe``. Positions are assigned at append time,
in order. Reads come from the tail cache or, off the loop, from the segment files via
their offset index. Roll-over, trimming of consumed ledgers and retention follow Pulsar's
``ManagedLedgerImpl``.
"""
from __future__ import annotations

import asyncio
import bisect
import functools
import logging
import os
import shutil
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, NamedTuple

from sortedcontainers import SortedDict

from . import cursor_store, recovery, segment
from .config import ManagedLedgerConfig
from .cursor import ManagedCursor
from .entry_cache import CacheBudget, EntryCache
from .errors import CursorError, LedgerClosedError, PersistenceError
from .position import EARLIEST, Position, make_position
from .segment import SegmentIndex
from .writer import BatchOutcome, Chunk, SegmentWriter

if TYPE_CHECKING:
    from concurrent.futures import Executor

log = logging.getLogger(__name__)

_OPEN, _CLOSING, _CLOSED = "open", "closing", "closed"
MIB = 1024 * 1024
# Upper bounds (inclusive, microseconds) of the write latency buckets; one more bucket takes the
# rest. Pulsar's ManagedLedgerMBeanImpl.ENTRY_LATENCY_BUCKETS_USEC.
WRITE_LATENCY_BUCKETS_USEC = (500, 1_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 1_000_000)


@dataclass(frozen=True, slots=True)
class WriteLatency:
    """Entries made durable since the ledger opened, by the time from append() to durability:
    counts[i] has those over bounds_usec[i - 1] and at most bounds_usec[i] microseconds (not
    cumulative; the last count is beyond the last bound); sum_usec adds up every entry's latency."""

    bounds_usec: tuple[int, ...]
    counts: tuple[int, ...]
    sum_usec: int

    @property
    def count(self) -> int:
        return sum(self.counts)


@dataclass(frozen=True, slots=True)
class LedgerInfo:
    """One ledger (segment) of a managed ledger: id, entries, payload bytes, seal time (ms since
    the epoch, 0 while it is the current ledger). Pulsar's ManagedLedgerInfo.LedgerInfo."""

    ledger_id: int
    entries: int
    size: int
    sealed_at_ms: int


class Entry(NamedTuple):
    """One stored entry: its position and its opaque bytes. A NamedTuple: built for every entry
    read, and a frozen dataclass costs several times more to construct."""

    position: Position
    data: bytes


_make_entry = functools.partial(tuple.__new__, Entry)  # Entry((position, data)), as make_position


class ManagedLedger:
    """Append-only log of one topic; obtain instances from ``ManagedLedgerFactory.open``."""

    def __init__(self, name: str, folder: str, config: ManagedLedgerConfig, executor: "Executor",
                 on_closed: Callable[["ManagedLedger"], None] | None = None,
                 retention: tuple[int, int] | None = None, cache_budget: CacheBudget | None = None) -> None:
        self.name = name
        self.folder = folder
        self.config = config
        self.executor = executor
        self._on_closed = on_closed
        self._state = _OPEN
        self._ledgers: SortedDict = SortedDict()  # ledger id -> SegmentIndex (loop-side, durable entries only)
        self._current_id = 0
        self._lac = Position(0, -1)
        self._cursors: dict[str, ManagedCursor] = {}
        self._listeners: list[Callable[[], None]] = []
        self._cache_budget = cache_budget or CacheBudget(config)  # shared by the factory's ledgers
        self._cache = EntryCache(self._cache_budget)
        self._writer: SegmentWriter | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # append side (loop thread only)
        self._append_ledger = 0
        self._append_next = 0
        self._append_bytes = 0
        self._pending: list[tuple[Chunk, asyncio.Future]] = []
        self._tail: tuple[Chunk, asyncio.Future] | None = None
        self._in_flight: list[tuple[Chunk, asyncio.Future]] | None = None
        self._kick_scheduled = False
        self._drained: asyncio.Future | None = None
        # write latency (see write_latency): plain counters, bumped once per durable chunk
        self._latency_counts = [0] * (len(WRITE_LATENCY_BUCKETS_USEC) + 1)
        self._latency_sum_usec = 0
        self._entries_added = 0  # made durable since open (Pulsar entriesAddedCounter)
        self._retention = retention  # (minutes, MB) overriding the config's
        self._current_created_ms = int(time.time() * 1000)  # when the current ledger began (this process)

    # -- open ----------------------------------------------------------------
    async def _open(self) -> None:
        """Recover the segments, start the writer, load durable cursors."""
        loop = self._loop = asyncio.get_running_loop()
        os.makedirs(self.cursor_folder, exist_ok=True)
        t0 = time.monotonic()
        sealed, new_id, fd = await loop.run_in_executor(
            self.executor, recovery.recover_ledgers, self.folder, self.config.sync_data)
        for idx in sealed:
            self._ledgers[idx.ledger_id] = idx
        self._ledgers[new_id] = SegmentIndex(new_id)
        self._current_id = self._append_ledger = new_id
        self._lac = Position(sealed[-1].ledger_id, sealed[-1].entries - 1) if sealed else Position(new_id, -1)
        self._writer = SegmentWriter(self.folder, SegmentIndex(new_id), fd, self.config.sync_data, loop)
        await self._load_cursors()
        log.info("ledger %s opened in %.3fs: %d ledgers, %d entries, lac %s", self.name,
                 time.monotonic() - t0, len(self._ledgers), self.number_of_entries, self._lac)
        self._trim()

    @property
    def cursor_folder(self) -> str:
        return os.path.join(self.folder, "cursors")

    async def _load_cursors(self) -> None:
        def load_all():
            return [(base, *cursor_store.load(base)) for base in cursor_store.list_cursors(self.cursor_folder)]
        for base, state, slot in await self._loop.run_in_executor(self.executor, load_all):
            if state is None:
                log.error("ledger %s: cursor file %s has no readable state; cursor dropped", self.name, base)
                continue
            self._add_durable_cursor(ManagedCursor(self, state.name, True, state.mark_delete, state, base, slot))

    # -- append ----------------------------------------------------------------
    async def add_entry(self, data: bytes) -> Position:
        """Append ``data``; returns its Position once it is on disk (fdatasync'ed if sync_data).

        Raises LedgerClosedError when closed, PersistenceError when the write failed.
        """
        position, durable = self.append(data)
        await asyncio.shield(durable)  # shared by the chunk: a cancelled caller must not cancel it
        return position

    def append(self, data: bytes) -> tuple[Position, asyncio.Future]:
        """Queue ``data`` without waiting: returns its Position and a future that completes (None)
        once the entry is on disk, or fails with PersistenceError. Many appends share one future
        (one per group-commit chunk), so callers on a hot path add a done-callback instead of
        creating a task per entry; an awaiting caller shields it (``asyncio.shield``), as
        cancelling it would fail every other append of its chunk. Raises LedgerClosedError when closed.
        """
        if self._state is not _OPEN:
            raise LedgerClosedError(f"managed ledger {self.name} is closed")
        if type(data) is not bytes:
            data = bytes(data)
        if self._append_next >= self.config.max_entries_per_ledger or (
                self._append_bytes >= self.config.max_size_per_ledger_bytes and self._append_next):
            self._append_ledger += 1  # roll-over: the writer seals the old segment first
            self._append_next = self._append_bytes = 0
        ledger_id, entry_id = self._append_ledger, self._append_next
        tail = self._tail
        if tail is None or tail[0].ledger_id != ledger_id:
            tail = self._tail = (Chunk(ledger_id, entry_id), self._loop.create_future())
            self._pending.append(tail)
        tail[0].datas.append(data)
        self._append_next = entry_id + 1
        self._append_bytes += len(data)
        self._cache.add(ledger_id, entry_id, data)
        if not self._kick_scheduled and self._in_flight is None:
            self._kick_scheduled = True
            self._loop.call_soon(self._kick)
        return Position(ledger_id, entry_id), tail[1]

    def _kick(self) -> None:
        """Hand everything pending to the writer as one batch (group commit)."""
        self._kick_scheduled = False
        if self._in_flight is not None or not self._pending:
            return
        batch, self._pending, self._tail = self._pending, [], None
        self._in_flight = batch
        now = time.monotonic_ns()
        for chunk, _ in batch:
            chunk.submitted_ns = now
        self._writer.submit([chunk for chunk, _ in batch], self._batch_done)

    def _batch_done(self, outcome: BatchOutcome | BaseException) -> None:
        """Writer callback (on the loop): publish durable entries, resolve or fail futures."""
        batch, self._in_flight = self._in_flight, None
        if isinstance(outcome, BaseException):  # unexpected bug in the writer: fail the batch
            outcome = BatchOutcome(error=OSError(str(outcome)), current=self._current_id,
                                   current_entries=self._ledgers[self._current_id].entries,
                                   current_end=self._ledgers[self._current_id].end_offset)
        for lid in outcome.created:
            self._ledgers[lid] = SegmentIndex(lid)
            self._current_id = lid
            self._current_created_ms = int(time.time() * 1000)
        for idx in outcome.sealed:
            self._ledgers[idx.ledger_id].sealed_at_ms = idx.sealed_at_ms
        now = time.monotonic_ns()
        for res, (chunk, fut) in zip(outcome.durable, batch):
            info = self._ledgers[res.ledger_id]
            info.offsets.extend(res.offsets)
            info.end_offset = res.end_offset
            self._entries_added += len(res.offsets)
            fut.set_result(None)
            self._record_write_latency(chunk, now, len(res.offsets))
        if outcome.durable:
            last = outcome.durable[-1]
            self._lac = Position(last.ledger_id, last.first_entry + len(last.offsets) - 1)
        if outcome.error is not None:
            self._fail_appends(batch[len(outcome.durable):], outcome)
        if outcome.durable:
            for cb in list(self._listeners):
                try:
                    cb()
                except Exception:
                    log.exception("ledger %s: entry listener failed", self.name)
        if outcome.sealed:
            self._trim()
        if self._pending:
            self._kick()
        elif self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def _record_write_latency(self, chunk: Chunk, durable_ns: int, entries: int) -> None:
        """A chunk's entries were appended between its first append and its hand-over to the
        writer: each counts once, at the latency of the middle of that span (its bucket is exact
        unless the span straddles a bound)."""
        usec = (durable_ns - (chunk.started_ns + chunk.submitted_ns) // 2) // 1000
        self._latency_counts[bisect.bisect_left(WRITE_LATENCY_BUCKETS_USEC, usec)] += entries
        self._latency_sum_usec += usec * entries

    def _fail_appends(self, failed: list, outcome: BatchOutcome) -> None:
        """Fail the rest of the batch and every queued append (their ids are now wrong)."""
        err = outcome.error
        failed = failed + self._pending
        self._pending, self._tail = [], None
        for _, fut in failed:
            if not fut.done():
                fut.set_exception(PersistenceError(f"append to {self.name} failed: {err}"))
        # Re-number from what is really on disk; the next append retries the same file.
        self._append_ledger = outcome.current
        self._append_next = outcome.current_entries
        self._append_bytes = outcome.current_end - segment.HEADER_SIZE - segment.RECORD_OVERHEAD * outcome.current_entries
        self._cache.truncate(outcome.current, outcome.current_entries)

    # -- listeners ---------------------------------------------------------------
    def add_entry_listener(self, cb: Callable[[], None]) -> None:
        """``cb()`` runs on the loop each time new entries become readable."""
        self._listeners.append(cb)

    def remove_entry_listener(self, cb: Callable[[], None]) -> None:
        if cb in self._listeners:
            self._listeners.remove(cb)

    # -- positions ---------------------------------------------------------------
    @property
    def last_confirmed_position(self) -> Position:
        """Last durable entry; ``(current_ledger_id, -1)`` when the ledger never had entries or
        retention trimmed every one of them."""
        return self._lac

    @property
    def current_ledger_id(self) -> int:
        return self._current_id

    @property
    def ledger_ids(self) -> list[int]:
        """Retained ledger ids (including the current, possibly empty, one)."""
        return list(self._ledgers.keys())

    @property
    def first_position(self) -> Position | None:
        """First retained entry, or None when no entry is retained."""
        for lid, info in self._ledgers.items():
            if info.entries:
                return Position(lid, 0)
        return None

    @property
    def number_of_entries(self) -> int:
        """Retained durable entries."""
        return sum(info.entries for info in self._ledgers.values())

    @property
    def total_size(self) -> int:
        """Payload bytes of retained durable entries (record headers excluded)."""
        return sum(info.data_bytes for info in self._ledgers.values())

    @property
    def write_latency(self) -> WriteLatency:
        """Time from append() to durability of every entry appended since the ledger opened
        (Pulsar's addEntryLatency buckets, never reset here)."""
        return WriteLatency(WRITE_LATENCY_BUCKETS_USEC, tuple(self._latency_counts), self._latency_sum_usec)

    @property
    def entries_added(self) -> int:
        """Entries made durable since the ledger was opened (Pulsar's entriesAddedCounter)."""
        return self._entries_added

    @property
    def current_ledger_created_ms(self) -> int:
        """When the current ledger began, ms since the epoch (its open time after a restart)."""
        return self._current_created_ms

    @property
    def pending_appends(self) -> int:
        """Appends queued or being written, not yet durable."""
        batches = (self._in_flight or []) + self._pending
        return sum(len(chunk.datas) for chunk, _ in batches)

    def set_retention(self, minutes: int, size_mb: int) -> None:
        """This ledger's retention (Pulsar semantics: 0 = none, -1 = unlimited) instead of the
        config's, e.g. a namespace's retention policy; takes effect at the next trim, started now."""
        self._retention = (minutes, size_mb)
        self._trim()

    def ledger_infos(self) -> list[LedgerInfo]:
        """The retained ledgers, oldest first, the current one last."""
        return [LedgerInfo(lid, info.entries, info.data_bytes, info.sealed_at_ms) for lid, info in self._ledgers.items()]

    def nth_position(self, n: int, from_end: bool = False) -> Position | None:
        """The n-th retained entry (1 = the first, or with from_end the last), None past the ends."""
        spans = [(lid, info.entries) for lid, info in self._ledgers.items() if info.entries]
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

    def next_valid_position(self, pos: Position) -> Position:
        """The position right after ``pos`` an entry has (or would get), crossing ledgers."""
        lid, eid = pos
        info = self._ledgers.get(lid)
        if lid >= self._current_id or (info is not None and eid + 1 < info.entries):
            return make_position((lid, eid + 1))  # per acknowledgement: the fast constructor
        for nid in self._ledgers.irange(minimum=lid + 1):
            if self._ledgers[nid].entries or nid == self._current_id:
                return Position(nid, 0)
        return Position(self._current_id, 0)

    def previous_position(self, pos: Position) -> Position:
        """The entry before ``pos`` (crossing back into earlier ledgers), or ``(L, -1)``."""
        if pos.entry_id > 0:
            return Position(pos.ledger_id, pos.entry_id - 1)
        for lid in self._ledgers.irange(maximum=pos.ledger_id - 1, reverse=True):
            n = self._ledgers[lid].entries
            if n:
                return Position(lid, n - 1)
        return Position(pos.ledger_id, -1)

    def count_entries_between(self, start_exclusive: Position, end_inclusive: Position) -> int:
        """Retained durable entries ``p`` with ``start_exclusive < p <= end_inclusive``."""
        if end_inclusive <= start_exclusive:
            return 0
        total = 0
        for lid in self._ledgers.irange(minimum=start_exclusive.ledger_id, maximum=end_inclusive.ledger_id):
            n = self._ledgers[lid].entries
            lo = start_exclusive.entry_id + 1 if lid == start_exclusive.ledger_id else 0
            hi = min(end_inclusive.entry_id, n - 1) if lid == end_inclusive.ledger_id else n - 1
            if hi >= lo:
                total += hi - lo + 1
        return total

    def size_between(self, start_exclusive: Position, end_inclusive: Position) -> int:
        """Payload bytes of the retained entries ``p`` with ``start_exclusive < p <= end_inclusive``
        (record headers excluded): a subscription's backlog size."""
        total = 0
        for lid in self._ledgers.irange(minimum=start_exclusive.ledger_id, maximum=end_inclusive.ledger_id):
            info = self._ledgers[lid]
            lo = start_exclusive.entry_id + 1 if lid == start_exclusive.ledger_id else 0
            hi = min(end_inclusive.entry_id, info.entries - 1) if lid == end_inclusive.ledger_id else info.entries - 1
            if hi >= lo:
                end = info.offsets[hi + 1] if hi + 1 < info.entries else info.end_offset
                total += end - info.offsets[lo] - segment.RECORD_OVERHEAD * (hi - lo + 1)
        return total

    def position_leaving_backlog(self, max_bytes: int) -> Position:
        """The lowest position after which at most max_bytes of entries remain (the last confirmed
        position when even the last entry is larger): where a backlog is cut down to max_bytes."""
        position, remaining = self._lac, 0
        for lid in reversed(self._ledgers.keys()):
            info = self._ledgers[lid]
            for entry_id in range(info.entries - 1, -1, -1):
                end = info.offsets[entry_id + 1] if entry_id + 1 < info.entries else info.end_offset
                remaining += end - info.offsets[entry_id] - segment.RECORD_OVERHEAD
                if remaining > max_bytes:
                    return position
                position = self.previous_position(Position(lid, entry_id))
        return position

    def advance(self, pos: Position, n: int) -> Position:
        """The position ``n`` retained entries after ``pos`` (stops at the last entry)."""
        while n > 0:
            nxt = self.next_valid_position(pos)
            info = self._ledgers.get(nxt.ledger_id)
            avail = info.entries - nxt.entry_id if info is not None else 0
            if avail <= 0:
                return pos
            if n <= avail:
                return Position(nxt.ledger_id, nxt.entry_id + n - 1)
            n -= avail
            pos = Position(nxt.ledger_id, info.entries - 1)
        return pos

    def _first_at_or_after(self, pos: Position) -> Position | None:
        """The first retained durable entry ``>= pos``; None if there is none."""
        for lid in self._ledgers.irange(minimum=pos.ledger_id):
            n = self._ledgers[lid].entries
            if lid == pos.ledger_id:
                if max(pos.entry_id, 0) < n:
                    return Position(lid, max(pos.entry_id, 0))
            elif n:
                return Position(lid, 0)
        return None

    # -- reads -------------------------------------------------------------------
    async def read_entries(self, start: Position, max_entries: int,
                           max_bytes: int = 5 * 1024 * 1024) -> list[Entry]:
        """Durable entries at positions ``>= start``, in order, within the two limits.

        At least one entry is returned when one exists (even if larger than max_bytes);
        positions in trimmed ledgers are skipped. Raises LedgerCorruptionError on a bad record.
        """
        self._check_not_closed()
        out: list[Entry] = []
        budget = max_bytes
        pos = self._first_at_or_after(start)
        while pos is not None and len(out) < max_entries and (budget > 0 or not out):
            info = self._ledgers[pos.ledger_id]
            last = self._last_within(info, pos.entry_id, max_entries - len(out), budget, not out)
            if last < pos.entry_id:
                break
            datas = self._cache.get(pos.ledger_id, pos.entry_id, last)
            if datas is None:
                try:
                    datas = await self._loop.run_in_executor(
                        self.executor, segment.read_records, self.folder, info, pos.entry_id, last)
                except FileNotFoundError:  # trimmed while we read: skip forward
                    pos = self._first_at_or_after(Position(pos.ledger_id + 1, 0))
                    continue
            lid = pos.ledger_id
            for i, data in enumerate(datas, pos.entry_id):
                out.append(_make_entry((make_position((lid, i)), data)))
                budget -= len(data)
            pos = self._first_at_or_after(Position(lid, last + 1))
        return out

    @staticmethod
    def _last_within(info: SegmentIndex, first: int, max_entries: int, budget: int, need_one: bool) -> int:
        """Last entry id of ``info`` to read from ``first`` within the limits (``first - 1`` = none fits)."""
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
        """Binary search: last retained position whose data satisfies the monotone ``predicate``."""
        spans = [(lid, info.entries) for lid, info in self._ledgers.items() if info.entries]
        total = sum(n for _, n in spans)

        def at(index: int) -> Position:
            for lid, n in spans:
                if index < n:
                    return Position(lid, index)
                index -= n
            raise IndexError(index)

        lo, hi, found = 0, total - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            pos = at(mid)
            entry = await self.read_entry(pos)
            if entry is None or predicate(entry.data):
                found = pos if entry is not None else found
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    # -- cursors -------------------------------------------------------------------
    @property
    def cursors(self) -> dict[str, ManagedCursor]:
        """Durable cursors by name (including those loaded from disk at open)."""
        return dict(self._cursors)

    async def open_cursor(self, name: str, initial_position: str = "latest") -> ManagedCursor:
        """Open (or create and persist) the durable cursor ``name``.

        A new cursor starts at ``"latest"`` (after the last confirmed entry) or
        ``"earliest"`` (mark-delete ``(first_ledger_id, -1)``); an existing one keeps its state.
        """
        self._check_open()
        if not name:
            raise CursorError("cursor name must not be empty")
        if name in self._cursors:
            return self._cursors[name]
        if initial_position not in ("latest", "earliest"):
            raise CursorError(f"initial_position must be 'latest' or 'earliest', not {initial_position!r}")
        md = self._lac if initial_position == "latest" else self._earliest_mark_delete()
        base = cursor_store.cursor_file_base(self.cursor_folder, name)
        cur = self._add_durable_cursor(ManagedCursor(self, name, True, md, store_base=base))
        await cur.initialize()
        return cur

    def _add_durable_cursor(self, cursor: ManagedCursor) -> ManagedCursor:
        """Track a durable cursor; each of its persists may free consumed ledgers (trimming)."""
        self._cursors[cursor.name] = cursor
        cursor.add_persist_listener(functools.partial(self._on_cursor_persisted, cursor))
        return cursor

    def _earliest_mark_delete(self) -> Position:
        return Position(self._ledgers.keys()[0], -1)

    def new_non_durable_cursor(self, start: Position | None, inclusive: bool = True) -> ManagedCursor:
        """A reader's cursor: never persisted and never holds back trimming.

        ``start`` None = latest, ``Position(-1, -1)`` = earliest; otherwise the first entry
        read is ``start`` (inclusive) or the one after it.
        """
        self._check_open()
        if start is None:
            md = self._lac
        elif start == EARLIEST or (self.first_position is not None and start < self.first_position):
            md = self._earliest_mark_delete()
        else:
            md = self.previous_position(start) if inclusive else start
        return ManagedCursor(self, f"reader-{id(self):x}-{time.monotonic_ns()}", False, md)

    async def delete_cursor(self, name: str) -> None:
        """Remove durable cursor ``name`` and its files; trimming no longer waits for it."""
        cur = self._cursors.pop(name, None)
        if cur is None:
            return
        await cur.remove_state()
        self._trim()

    def _on_cursor_persisted(self, cursor: ManagedCursor) -> None:
        if cursor.durable and self._state is _OPEN:
            self._trim()

    # -- trimming ----------------------------------------------------------------
    def _trim(self) -> None:
        """Delete sealed ledgers wholly at/below every durable cursor's persisted mark-delete.

        Retention (Pulsar semantics, 0 = none, -1 = unlimited) keeps a consumed ledger
        unless its retention time expired or the retained size is over quota without it.
        """
        if self._state is not _OPEN:
            return
        durable = list(self._cursors.values())
        slowest = min(c.persisted_mark_delete_position for c in durable) if durable else self._lac
        minutes, size_mb = self._retention or (self.config.retention_time_minutes, self.config.retention_size_mb)
        now_ms = time.time() * 1000
        trimmed = False
        remaining = self.total_size
        for lid in list(self._ledgers.keys()):
            if lid >= self._current_id:
                break
            info = self._ledgers[lid]
            if info.entries and Position(lid, info.entries - 1) > slowest:
                break
            remaining -= info.data_bytes
            expired = minutes >= 0 and now_ms - info.sealed_at_ms >= minutes * 60_000
            over_quota = size_mb >= 0 and remaining >= size_mb * MIB
            if not (expired or over_quota):
                break
            del self._ledgers[lid]
            self._writer.delete_ledger(lid)
            trimmed = True
            log.info("ledger %s: trimming consumed ledger %d (%d entries)", self.name, lid, info.entries)
        if trimmed:
            self._after_trim()

    def _after_trim(self) -> None:
        """With every entry trimmed, the last confirmed position is the current ledger's (L, -1), so
        nobody is promised an entry no read can return; cursors below the first retained ledger
        move up to it (Pulsar's advanceCursorsIfNecessary)."""
        if self.number_of_entries == 0 and self._lac.ledger_id < self._current_id:
            self._lac = Position(self._current_id, -1)
        first = Position(self._ledgers.keys()[0], -1)
        for cursor in list(self._cursors.values()):
            cursor.skip_trimmed(first)

    # -- close / delete ------------------------------------------------------------
    def _check_open(self) -> None:
        if self._state is not _OPEN:
            raise LedgerClosedError(f"managed ledger {self.name} is closed")

    def _check_not_closed(self) -> None:
        if self._state is _CLOSED:
            raise LedgerClosedError(f"managed ledger {self.name} is closed")

    async def close(self) -> None:
        """Finish queued appends, persist every durable cursor, seal the segment, stop the writer."""
        if self._state is not _OPEN:
            return
        self._state = _CLOSING
        if self._in_flight is not None or self._pending:
            self._drained = self._loop.create_future()
            if self._in_flight is None:
                self._kick()
            await self._drained
        for cur in list(self._cursors.values()):
            try:
                await cur.close()
            except Exception as exc:  # keep closing: the older persisted state stays valid
                log.error("ledger %s: closing cursor %s failed: %s", self.name, cur.name, exc)
        done = self._loop.create_future()
        self._writer.close(lambda result: done.done() or done.set_result(result))
        result = await done
        if isinstance(result, BaseException):
            log.error("ledger %s: sealing the current segment failed: %s", self.name, result)
        self._state = _CLOSED
        self._cache_budget.forget(self._cache)
        if self._on_closed is not None:
            self._on_closed(self)
        log.info("ledger %s closed", self.name)

    async def delete(self) -> None:
        """Close and remove the ledger's folder (every segment and cursor)."""
        await self.close()
        await self._loop.run_in_executor(self.executor, shutil.rmtree, self.folder, True)
        log.info("ledger %s deleted", self.name)

    def __repr__(self) -> str:
        return f"ManagedLedger({self.name!r}, ledgers={list(self._ledgers.keys())}, lac={self._lac})"
