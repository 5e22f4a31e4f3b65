"""ManagedLedger: one topic's append-only log of entries, split into ledgers (segments).

The ledger is what the broker holds of a topic's storage (Pulsar's ``ManagedLedgerImpl``):
it owns the append path and the lifecycle, and hands every other job to a module of its own:

* :mod:`storage.ledger_map` -- the retained ledgers and the position arithmetic over them;
* :mod:`storage.entry_reader` -- reads, from the tail cache or the segment files;
* :mod:`storage.cursor_container` -- the durable cursors, and the making of new cursors;
* :mod:`storage.trimming` -- which consumed ledgers retention lets go;
* :mod:`storage.group_commit` -- appends: numbering, batching, the factory's journal;
* :mod:`storage.write_latency` -- the append-to-durable histogram.

Appends are group-committed across every ledger of the factory: ``add_entry`` queues the bytes
in the ledger's pending operation and awaits its shared future; the journal writes the pending
operations of all ledgers with one write and one sync and reports them back once, and the
ledger storage writes the entries into their segments behind it (storage.journal,
storage.ledger_storage). Positions are assigned at append time, in order. The ledger then
publishes the durable entries (:meth:`ManagedLedger._publish`: the ledger map, the last
confirmed position, the entry listeners) and trims after a roll-over.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Awaitable, Callable

from . import journal_format as jf
from . import recovery, trimming
from .config import ManagedLedgerConfig
from .cursor_container import CursorContainer
from .durability import Durability
from .entry import Entry
from .entry_cache import CacheBudget, EntryCache
from .entry_reader import EntryReader
from .errors import CursorError, LedgerClosedError, StorageError
from .group_commit import GroupCommit, JournalQueue
from .journal import ControlOp, JournalLedger
from .ledger_map import LedgerInfo, LedgerMap
from .position import EARLIEST, Position
from .write_latency import WriteLatency

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from .cursor import ManagedCursor

log = logging.getLogger(__name__)

_OPEN, _CLOSING, _CLOSED = "open", "closing", "closed"

__all__ = ["Entry", "LedgerInfo", "ManagedLedger", "WriteLatency"]


class ManagedLedger:
    """Append-only log of one topic; obtain instances from ``ManagedLedgerFactory.open``."""

    # The per-entry paths are the parts' own bound methods, set in __init__: append runs per
    # entry, next_valid_position per acknowledgement, read_entries per read, and a delegating
    # method would add a Python call layer to each. Contracts: GroupCommit.append,
    # LedgerMap.next_valid_position, EntryReader.read_entries. (A cursor computes on the
    # LedgerMap itself, so its per-ack calls skip even the instance-attribute lookup.)
    append: Callable[[bytes], tuple[Position, Durability]]
    next_valid_position: Callable[[Position], Position]
    read_entries: Callable[..., Awaitable[list[Entry]]]

    # Slots, not an instance dict: with a thousand topics a group's report touches every ledger's
    # objects, few of them still in the processor's caches, and an attribute in a slot is one
    # memory access less than one in the instance dict's values (docs/performance.md, "Counting
    # instead of timing, and slots").
    __slots__ = ("name", "folder", "config", "executor", "_on_closed", "_state", "_map", "_lac", "_listeners",
                 "_retention", "_current_created_ms", "_cache_budget", "_cache", "_journal", "_owner", "_commit",
                 "_reader", "_cursors", "_active_cursors", "_loop", "append", "next_valid_position", "read_entries")

    def __init__(self, name: str, folder: str, config: ManagedLedgerConfig, executor: "Executor",
                 journal: JournalQueue, on_closed: Callable[["ManagedLedger"], None] | None = None,
                 retention: tuple[int, int] | None = None, cache_budget: CacheBudget | None = None) -> None:
        self.name = name
        self.folder = folder
        self.config = config
        self.executor = executor
        self._on_closed = on_closed
        self._state = _OPEN
        self._map = LedgerMap()  # loop-side, durable entries only
        self._lac = Position(0, -1)
        # a tuple, replaced on the rare add or remove: _publish runs per reported group and
        # iterates it as it is (a listener added or removed by another takes effect from the next group)
        self._listeners: tuple[Callable[[], None], ...] = ()
        self._retention = retention  # (minutes, MB) overriding the config's
        self._current_created_ms = int(time.time() * 1000)  # when the current ledger began (this process)
        self._cache_budget = cache_budget or CacheBudget(config)  # shared by the factory's ledgers
        self._cache = EntryCache(self._cache_budget)
        self._journal = journal
        self._owner = JournalLedger(folder)
        self._commit = GroupCommit(name, self._owner, config, self._map, self._cache, journal, on_batch=self._publish)
        self._reader = EntryReader(name, folder, executor, self._map, self._cache, self._commit)
        self._cursors = CursorContainer(self, self._map, self.cursor_folder, on_persisted=self._trim)
        self._active_cursors: set[ManagedCursor] = set()  # reading at the tail: appends are cached for them
        self._loop: asyncio.AbstractEventLoop | None = None
        self.append = self._commit.append
        self.next_valid_position = self._map.next_valid_position
        self.read_entries = self._reader.read_entries

    # -- open ----------------------------------------------------------------
    async def _open(self) -> None:
        """Recover the segments (the journal was replayed into them), load durable cursors."""
        loop = self._loop = self._reader.loop = asyncio.get_running_loop()
        t0 = time.monotonic()
        sealed, new_id = await loop.run_in_executor(
            self.executor, recovery.recover_ledgers, self.folder, self.config.sync_data)
        for idx in sealed:
            self._map.add(idx)
        self._map.start_ledger(new_id)
        self._owner.opened_ledger = new_id  # before any append: the storage thread reads it after
        self._lac = Position(sealed[-1].ledger_id, sealed[-1].entries - 1) if sealed else Position(new_id, -1)
        self._commit.start(new_id, loop)
        await self._cursors.load(loop, self.executor)
        log.info("ledger %s opened in %.3fs: %d ledgers, %d entries, lac %s", self.name,
                 time.monotonic() - t0, len(self._map.ledgers), self.number_of_entries, self._lac)
        self._trim()

    @property
    def cursor_folder(self) -> str:
        return os.path.join(self.folder, "cursors")

    # -- append (storage/group_commit.py; append is bound in __init__) -------------
    async def add_entry(self, data: bytes) -> Position:
        """Append ``data``; returns its Position once it is on disk (fdatasync'ed if sync_data).

        Raises LedgerClosedError when closed, PersistenceError when the write failed.
        """
        position, durable = self.append(data)
        await durable  # a cancelled caller cancels its own waiter, not the appends it shares a group with
        return position

    async def wait_journaled(self) -> None:
        """Wait until every append, trim and delete queued so far is journaled (or failed)."""
        await self._commit.idle()

    def _publish(self, ops: list) -> None:
        """Group-commit callback, once per group that made entries of this ledger durable, before
        their appends are settled. ops: this ledger's operations of the group in order (AppendOps;
        ControlOps are skipped). The entries go into the ledger map (the first entry of a new
        ledger seals the one before: a roll-over, which trims), the last confirmed position moves,
        entry listeners run."""
        ledger_map, last, rolled = self._map, None, False
        for op in ops:
            if type(op) is ControlOp:
                continue
            if op.ledger_id != ledger_map.current_id:
                now_ms = int(time.time() * 1000)
                ledger_map.ledgers[ledger_map.current_id].sealed_at_ms = now_ms
                ledger_map.start_ledger(op.ledger_id)
                self._current_created_ms, rolled = now_ms, True
            info = ledger_map.ledgers[op.ledger_id]
            if op.offsets is None:  # one entry
                info.offsets.append(op.first_offset)
            else:
                info.offsets.extend(op.offsets)
            info.end_offset = op.end_offset
            last = op
        if last is not None:
            self._lac = last.last_position
            for cb in self._listeners:
                try:
                    cb()
                except Exception:
                    log.exception("ledger %s: entry listener failed", self.name)
        if rolled:
            self._trim()

    # -- listeners ---------------------------------------------------------------
    def add_entry_listener(self, cb: Callable[[], None]) -> None:
        """``cb()`` runs on the loop each time new entries become readable."""
        self._listeners += (cb,)

    def remove_entry_listener(self, cb: Callable[[], None]) -> None:
        listeners = list(self._listeners)
        if cb in listeners:
            listeners.remove(cb)
            self._listeners = tuple(listeners)

    # -- state -------------------------------------------------------------------
    @property
    def last_confirmed_position(self) -> Position:
        """Last durable entry; ``(current_ledger_id, -1)`` when the ledger never had entries or
        retention trimmed every one of them."""
        return self._lac

    @property
    def current_ledger_id(self) -> int:
        return self._map.current_id

    @property
    def ledger_ids(self) -> list[int]:
        """Retained ledger ids (including the current, possibly empty, one)."""
        return self._map.ledger_ids

    @property
    def first_position(self) -> Position | None:
        """First retained entry, or None when no entry is retained."""
        return self._map.first_position

    @property
    def number_of_entries(self) -> int:
        """Retained durable entries."""
        return self._map.number_of_entries

    @property
    def total_size(self) -> int:
        """Payload bytes of retained durable entries (record headers excluded)."""
        return self._map.total_size

    @property
    def write_latency(self) -> WriteLatency:
        """Time from append() to durability of every entry appended since the ledger opened
        (Pulsar's addEntryLatency buckets, never reset here)."""
        return self._commit.write_latency

    @property
    def entries_added(self) -> int:
        """Entries made durable since the ledger was opened (Pulsar's entriesAddedCounter)."""
        return self._commit.entries_added

    @property
    def add_entry_errors(self) -> int:
        """Appends failed since the ledger was opened (Pulsar's addEntryErrors)."""
        return self._commit.add_entry_errors

    @property
    def fenced_ledgers(self) -> list[int]:
        """Ledgers fenced since the ledger was opened: a journal write of unknown outcome (EIO)
        failed their appends and the ledger continued on a new one."""
        return list(self._commit.fenced_ledgers)

    @property
    def current_ledger_created_ms(self) -> int:
        """When the current ledger began, ms since the epoch (its open time after a restart)."""
        return self._current_created_ms

    @property
    def pending_appends(self) -> int:
        """Appends queued or being written, not yet durable."""
        return self._commit.pending_appends

    def ledger_infos(self) -> list[LedgerInfo]:
        """The retained ledgers, oldest first, the current one last."""
        return self._map.infos()

    # -- positions (storage/ledger_map.py; next_valid_position is bound in __init__) --
    def nth_position(self, n: int, from_end: bool = False) -> Position | None:
        """The n-th retained entry (1 = the first, or with from_end the last), None past the ends."""
        return self._map.nth_position(n, from_end)

    def previous_position(self, pos: Position) -> Position:
        """The entry before ``pos`` (crossing back into earlier ledgers), or ``(L, -1)``."""
        return self._map.previous_position(pos)

    def count_entries_between(self, start_exclusive: Position, end_inclusive: Position) -> int:
        """Retained durable entries ``p`` with ``start_exclusive < p <= end_inclusive``."""
        return self._map.count_entries_between(start_exclusive, end_inclusive)

    def size_between(self, start_exclusive: Position, end_inclusive: Position) -> int:
        """Payload bytes of the retained entries ``p`` with ``start_exclusive < p <= end_inclusive``
        (record headers excluded): a subscription's backlog size."""
        return self._map.size_between(start_exclusive, end_inclusive)

    def position_leaving_backlog(self, max_bytes: int) -> Position:
        """The lowest position after which at most max_bytes of entries remain (the last confirmed
        position when even the last entry is larger): where a backlog is cut down to max_bytes."""
        return self._map.position_leaving_backlog(max_bytes, self._lac)

    def advance(self, pos: Position, n: int) -> Position:
        """The position ``n`` retained entries after ``pos`` (stops at the last entry)."""
        return self._map.advance(pos, n)

    # -- reads (storage/entry_reader.py; read_entries is bound in __init__) ------
    async def read_positions(self, positions: list[Position]) -> list[Entry]:
        """The entries at ``positions`` (ascending) that exist, in order (one read per run)."""
        return await self._reader.read_positions(positions)

    async def read_entry(self, position: Position) -> Entry | None:
        """The entry at exactly ``position``, or None if it does not exist (or was trimmed)."""
        return await self._reader.read_entry(position)

    async def find_newest_matching(self, predicate: Callable[[bytes], bool]) -> Position | None:
        """Binary search: last retained position whose data satisfies the monotone ``predicate``."""
        return await self._reader.find_newest_matching(predicate)

    # -- cursors (storage/cursor_container.py) -------------------------------------
    @property
    def cursors(self) -> dict[str, ManagedCursor]:
        """Durable cursors by name (including those loaded from disk at open)."""
        return self._cursors.durable()

    async def open_cursor(self, name: str, initial_position: str = "latest") -> ManagedCursor:
        """Open (or create and persist) the durable cursor ``name``.

        A new cursor starts at ``"latest"`` (after the last confirmed entry) or
        ``"earliest"`` (mark-delete ``(first_ledger_id, -1)``); an existing one keeps its state.
        Raises LedgerClosedError, CursorError (empty name, bad initial position), PersistenceError.
        """
        self._check_open()
        if not name:
            raise CursorError("cursor name must not be empty")
        existing = self._cursors.get(name)
        if existing is not None:
            return existing
        if initial_position not in ("latest", "earliest"):
            raise CursorError(f"initial_position must be 'latest' or 'earliest', not {initial_position!r}")
        md = self._lac if initial_position == "latest" else self._map.before_first()
        return await self._cursors.create(name, md)

    def new_non_durable_cursor(self, start: Position | None, inclusive: bool = True) -> ManagedCursor:
        """A reader's cursor: never persisted and never holds back trimming.

        ``start`` None = latest, ``Position(-1, -1)`` = earliest; otherwise the first entry
        read is ``start`` (inclusive) or the one after it.
        """
        self._check_open()
        if start is None:
            md = self._lac
        elif start == EARLIEST or (self.first_position is not None and start < self.first_position):
            md = self._map.before_first()
        else:
            md = self._map.previous_position(start) if inclusive else start
        return self._cursors.new_non_durable(md)

    async def delete_cursor(self, name: str) -> None:
        """Remove durable cursor ``name`` and its files; trimming no longer waits for it."""
        cursor = self._cursors.get(name)
        if cursor is not None:
            self.deactivate_cursor(cursor)
        if await self._cursors.delete(name):
            self._trim()

    # -- active cursors: whether appends are cached ------------------------------------
    def activate_cursor(self, cursor: ManagedCursor) -> None:
        """cursor is read at the tail (its subscription has a consumer, or a replicator reads it):
        from the next append on, new entries go into the tail cache (storage.entry_cache) too.
        With no active cursor they are not cached: whoever reads them later reads them from memory
        until the ledger storage has written them, then from the segment. Pulsar:
        ``ManagedLedgerImpl.activateCursor``, and ``OpAddEntry`` caching an entry only when
        ``hasActiveCursors()``."""
        self._active_cursors.add(cursor)
        self._commit.caching = True

    def deactivate_cursor(self, cursor: ManagedCursor) -> None:
        """cursor is not read any more (its last consumer left); with the last active cursor gone
        the cache lets go of its entries and appends are no longer cached. Pulsar:
        ``ManagedLedgerImpl.deactivateCursor``."""
        self._active_cursors.discard(cursor)
        if not self._active_cursors and self._commit.caching:
            self._commit.caching = False
            self._cache.clear()

    def is_cursor_active(self, cursor: ManagedCursor) -> bool:
        """Whether cursor is active (Pulsar ``ManagedLedgerImpl.isCursorActive``)."""
        return cursor in self._active_cursors

    @property
    def cache_size(self) -> int:
        """Bytes of entries the tail cache holds for this ledger (Pulsar ``ManagedLedgerImpl.getCacheSize``)."""
        return self._cache.size

    @property
    def has_active_cursors(self) -> bool:
        """Whether appends are cached: some cursor is active (Pulsar ``hasActiveCursors``)."""
        return bool(self._active_cursors)

    # -- trimming (the policy: storage/trimming.py) -----------------------------------
    def set_retention(self, minutes: int, size_mb: int) -> None:
        """This ledger's retention (Pulsar semantics: 0 = none, -1 = unlimited) instead of the
        config's, e.g. a namespace's retention policy; takes effect at the next trim, started now."""
        self._retention = (minutes, size_mb)
        self._trim()

    def _trim(self) -> None:
        """Delete the sealed ledgers wholly at/below every durable cursor's persisted mark-delete
        that retention does not keep (trimming.ledgers_to_trim). Runs after a roll-over, after a
        durable cursor's persist, after a cursor is deleted and at open."""
        if self._state is not _OPEN:
            return
        slowest = self._cursors.slowest_persisted(default=self._lac)
        retention = self._retention or (self.config.retention_time_minutes, self.config.retention_size_mb)
        doomed = trimming.ledgers_to_trim(self._map, slowest, retention, time.time() * 1000)
        for lid in doomed:
            info = self._map.remove(lid)
            self._commit.forget_ledger(lid)
            self._commit.control(jf.TRIM, lid).add_done_callback(self._trimmed)
            log.info("ledger %s: trimming consumed ledger %d (%d entries)", self.name, lid, info.entries)
        if doomed:
            self._after_trim()

    def _trimmed(self, future: asyncio.Future) -> None:
        if not future.cancelled() and future.exception() is not None:  # the files stay until the next open
            log.error("ledger %s: %s", self.name, future.exception())

    def _after_trim(self) -> None:
        """With every entry trimmed, the last confirmed position is the current ledger's (L, -1), so
        nobody is promised an entry no read can return; cursors below the first retained ledger
        move up to it (Pulsar's advanceCursorsIfNecessary)."""
        if self.number_of_entries == 0 and self._lac.ledger_id < self._map.current_id:
            self._lac = Position(self._map.current_id, -1)
        self._cursors.skip_trimmed(self._map.before_first())

    # -- close / delete ------------------------------------------------------------
    def _check_open(self) -> None:
        if self._state is not _OPEN:
            raise LedgerClosedError(f"managed ledger {self.name} is closed")

    async def close(self) -> None:
        """Finish queued appends, persist every durable cursor, write what the ledger storage still
        holds of it and seal its segment (a failure is logged: the journal keeps the entries)."""
        if self._state is not _OPEN:
            return
        self._state = _CLOSING
        await self._commit.drain()
        await self._cursors.close_all()
        try:
            await self._journal.seal(self._owner)
        except StorageError as exc:
            log.error("ledger %s: sealing the current segment failed: %s", self.name, exc)
        self._commit.forget_unwritten()
        self._state = _CLOSED
        self._reader.closed = True
        self._cache_budget.forget(self._cache)
        if self._on_closed is not None:
            self._on_closed(self)
        log.info("ledger %s closed", self.name)

    async def delete(self) -> None:
        """Close and remove the ledger's folder (every segment and cursor), after a DELETE record
        in the journal: a replay never brings the deleted entries back. Raises PersistenceError."""
        await self.close()
        await self._commit.control(jf.DELETE)
        log.info("ledger %s deleted", self.name)

    def __repr__(self) -> str:
        return f"ManagedLedger({self.name!r}, ledgers={self._map.ledger_ids}, lac={self._lac})"
