"""Group commit of the managed ledgers' appends: the event-loop side of the shared journal.

Each managed ledger has a GroupCommit: ``append`` numbers the entry (rolling over to a new
ledger at ``max_entries_per_ledger`` / ``max_size_per_ledger_mb``), gives it its segment
offset, adds it to the pending operation of its ledger and returns that operation's shared
Durability. One JournalQueue per factory gathers the pending operations of every ledger that has
some into ONE group for the journal (storage.journal), a turn of the loop after the first of
them (so what the sockets received meanwhile joins it): a thousand ledgers with a message each
cost one write and one sync.
A ledger keeps at most one operation in flight (appends arriving meanwhile wait for the next
group), so a failed write never leaves a gap behind an entry that succeeded.

The journal reports a group once: the managed ledger publishes the durable entries
(``on_batch``), then each ledger's share is settled (storage.durability: its callbacks, such as
a producer's receipts, run in that turn of the loop) or failed with PersistenceError. Durable
entries stay in memory (storage.unwritten) until the ledger storage thread reports them written
into their segment, and reads of them are served from there meanwhile (``unwritten``). A failed
write renumbers from what is durable when the journal cut it off again (no room), or moves the
ledger to a new ledger, fencing the old one at its last durable entry (any other error, such as
EIO).
Pulsar: ``ManagedLedgerImpl.pendingAddEntries`` / ``OpAddEntry``, with BookKeeper's journal
group commit behind them.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from . import journal_format as jf
from . import segment
from .config import ManagedLedgerConfig
from .durability import Durability
from .entry_cache import EntryCache
from .errors import LedgerClosedError, PersistenceError
from .journal import AppendOp, CheckpointOp, ControlOp, GroupReport, JournalLedger
from .ledger_storage import SealOp
from .ledger_map import LedgerMap
from .position import Position, make_position
from .unwritten import UnwrittenEntries
from .write_latency import WriteLatency, new_counts, record as record_latency, snapshot as latency_snapshot

log = logging.getLogger(__name__)

# Durable entries not yet in their segments, all ledgers together (counted once; memory holds them
# about twice: the entries for reads, and their segment records joined for the ledger storage).
UNWRITTEN_LIMIT_BYTES = 256 << 20
# Written entries one progress callback lets go of before the loop runs its I/O again (a round
# behind 10,000 msg/s holds ten thousand, on one topic or over a thousand ledgers, where each
# ledger's call costs more than its entries).
PROGRESS_SLICE = 200


def completer(future: asyncio.Future, what: str) -> Callable[[BaseException | None], None]:
    """done(error or None) of a ControlOp, settling future (PersistenceError on error)."""
    def done(error: BaseException | None) -> None:
        if future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(PersistenceError(f"{what}: {error}"))
    return done


class JournalQueue:
    """The loop side of a factory's journal: submits the pending operations of every ledger
    that has some as one group, a loop turn after the first of them (wake), and hands the
    reports back to their ledgers.
    submit(ops) is the journal's; unwritten appends over UNWRITTEN_LIMIT_BYTES hold new groups
    back until the ledger storage catches up."""

    def __init__(self, submit: Callable[[list], None], seal: Callable[[SealOp], None],
                 loop: asyncio.AbstractEventLoop) -> None:
        self._submit = submit
        self._seal = seal
        self._loop = loop
        self._ready: dict[GroupCommit, None] = {}
        self._scheduled = False
        self.unwritten_bytes = 0

    def wake(self, commit: "GroupCommit") -> None:
        """commit has pending operations and none in flight: submit it with the next group, which
        goes one turn of the loop later. That turn's poll reads what reached the sockets while this
        turn ran, and those appends join the group; otherwise they would wait for its synced write
        (which blocks the loop when the loop writes a small group itself, storage.journal) and make
        a group of their own. At 10,000 msg/s on one topic (the official client, 10 SENDs a
        millisecond): 17-29 % fewer synced writes, for a turn of the loop."""
        self._ready[commit] = None
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._loop.call_soon, self._kick)

    def _kick(self) -> None:
        self._scheduled = False
        if self.unwritten_bytes > UNWRITTEN_LIMIT_BYTES or not self._ready:
            return  # progress() kicks again once the ledger storage has written some
        ready, self._ready = self._ready, {}
        ops = []
        now = time.monotonic_ns()
        for commit in ready:
            ops += commit.take_pending(now)
        if ops:
            self._submit(ops)

    def delete_folder(self, folder: str) -> asyncio.Future:
        """Delete the folder of a managed ledger that is not open: a DELETE record, then the
        ledger storage removes it; the future fails with PersistenceError."""
        future = self._loop.create_future()
        self._submit([ControlOp(JournalLedger(folder), jf.DELETE, done=completer(future, folder))])
        return future

    def seal(self, owner: JournalLedger) -> asyncio.Future:
        """The ledger storage writes what owner has and seals its current ledger (a close)."""
        future = self._loop.create_future()
        self._seal(SealOp(owner, completer(future, owner.folder)))
        return future

    async def checkpoint(self) -> None:
        """The ledger storage writes everything journaled before into the segments and
        checkpoints; raises PersistenceError when it could not."""
        future = self._loop.create_future()
        self._submit([CheckpointOp(completer(future, "checkpoint"))])
        await future

    def report(self, report: GroupReport) -> None:
        """A group was written or failed (journal thread -> loop). A ledger's operations in it are
        the ones it had in flight, next to each other (_kick takes them together, and the journal
        merges submitted groups whole): each ledger hears once, with no list built for it."""
        error, fenced, last = report.error, report.fenced, None
        now = time.monotonic_ns()  # when the loop heard of it: the durable time of every share
        ops = report.ops  # the operations' last holder but their ledgers (the journal is done with it)
        for i, op in enumerate(ops):
            # Let go here, so an operation goes with its ledger's own list of them, while its
            # objects are still in the processor's caches, not in a burst after the whole group.
            ops[i] = None
            # A checkpoint or a standalone DELETE has no commit: the ledger storage runs its done()
            # once it acted on it, or it runs here when the group failed.
            commit = None if type(op) is CheckpointOp else op.owner.commit
            if commit is None:
                if error is not None:
                    op.done(error)
            elif commit is not last:
                last = commit
                commit.reported(error, fenced, now)

    def progress(self, written: list, start: int = 0) -> None:
        """The ledger storage wrote these (owner, ledger id, entries written) (storage thread -> loop),
        from written[start]. A round's entries are let go of PROGRESS_SLICE at a time, the rest on
        a later turn, so receipts and dispatch go on between."""
        budget = PROGRESS_SLICE
        for i in range(start, len(written)):
            owner, ledger_id, entries = written[i]
            budget -= owner.commit.written(ledger_id, entries, budget)
            if budget <= 0:  # this ledger may have more: it comes first next turn
                self._loop.call_soon(self.progress, written, i)
                return
        if self._ready and not self._scheduled and self.unwritten_bytes <= UNWRITTEN_LIMIT_BYTES:
            self._scheduled = True
            self._loop.call_soon(self._kick)


class GroupCommit:
    """Appends of the managed ledger in ``owner.folder`` (loop thread only).

    ``ledgers`` is the ledger's map (durable entries; read to renumber after a failure);
    ``cache`` gets every appended entry while ``caching`` (and loses those whose write failed);
    ``on_batch(ops)`` runs once per reported group that made entries durable, with this ledger's
    operations of it in order (AppendOps: ledger_id, first_entry, offsets, end_offset; ControlOps
    to skip), before their appends are settled.
    """

    # Slots: read once per ledger share of every group (ManagedLedger's __slots__ says why).
    __slots__ = ("name", "owner", "config", "_map", "_cache", "_queue", "_on_batch", "closing", "_loop",
                 "_append_ledger", "_append_next", "_append_bytes", "_append_offset", "_fence", "_pending",
                 "_tail", "_in_flight", "_submitted_ns", "_unwritten", "_drained", "_latency", "entries_added",
                 "add_entry_errors", "fenced_ledgers", "caching")

    def __init__(self, name: str, owner: JournalLedger, config: ManagedLedgerConfig, ledgers: LedgerMap,
                 cache: EntryCache, queue: JournalQueue, on_batch: Callable[[list], None]) -> None:
        self.name = name
        self.owner = owner
        owner.commit = self
        self.config = config
        self._map = ledgers
        self._cache = cache
        self._queue = queue
        self._on_batch = on_batch
        self.closing = False  # set by drain(): appends are refused from then on
        self._loop: asyncio.AbstractEventLoop | None = None
        self._append_ledger = self._append_next = self._append_bytes = 0
        self._append_offset = segment.HEADER_SIZE
        self._fence: tuple[tuple[int, int], ...] = ()  # SEAL records the next append carries
        self._pending: list = []  # AppendOp / ControlOp not yet submitted
        self._tail: AppendOp | None = None  # the AppendOp appends are added to
        self._in_flight: list | None = None
        self._submitted_ns = 0  # when the operations in flight were handed to the journal
        # Durable entries not yet in their segment (up to the ledger storage's write-behind, a
        # second): not the AppendOps, which go with their report.
        self._unwritten = UnwrittenEntries()
        self._drained: asyncio.Future | None = None
        self._latency = new_counts()  # storage.write_latency's plain list
        self.entries_added = 0  # made durable since open (Pulsar entriesAddedCounter)
        self.add_entry_errors = 0  # appends failed since open (Pulsar addEntryErrors)
        self.fenced_ledgers: list[int] = []  # ledgers fenced after a write error of unknown outcome
        # Whether appends go into the tail cache: only while a cursor is active (ManagedLedger.activate_cursor).
        self.caching = False

    def start(self, ledger_id: int, loop: asyncio.AbstractEventLoop) -> None:
        """Appends start at entry 0 of the new, empty ledger ``ledger_id``."""
        self._loop = loop
        self._append_ledger = ledger_id

    # -- appends -------------------------------------------------------------
    def append(self, data: bytes) -> tuple[Position, Durability]:
        """Queue ``data`` without waiting: returns its Position and the Durability of its share of
        the next group, settled (None) once the entry is durable or failed with PersistenceError.
        The appends of a group share it, so callers on a hot path add a done-callback (run in the
        report's turn) instead of creating a task per entry. Raises LedgerClosedError when closed.
        """
        if self.closing:
            raise LedgerClosedError(f"managed ledger {self.name} is closed")
        if type(data) is not bytes:
            data = bytes(data)
        if self._append_next >= self.config.max_entries_per_ledger or (
                self._append_bytes >= self.config.max_size_per_ledger_bytes and self._append_next):
            self._roll(self._append_ledger + 1)
        ledger_id, entry_id = self._append_ledger, self._append_next
        tail = self._tail
        if tail is None or tail.ledger_id != ledger_id:
            tail = self._tail = AppendOp(self.owner, ledger_id, entry_id, self._append_offset, data,
                                         time.monotonic_ns(), self._fence)
            self._fence = ()
            self._pending.append(tail)
            if self._in_flight is None:
                self._queue.wake(self)
        else:
            tail.add(data)
        self._append_next = entry_id + 1
        self._append_bytes += len(data)
        self._append_offset = tail.end_offset
        if self.caching:
            self._cache.add(ledger_id, entry_id, data)
        position = tail.last_position = make_position((ledger_id, entry_id))  # per entry: the fast constructor
        return position, tail

    def _roll(self, ledger_id: int) -> None:
        """The next append starts ledger_id (the storage thread seals the one before)."""
        self._append_ledger, self._append_next, self._append_bytes = ledger_id, 0, 0
        self._append_offset = segment.HEADER_SIZE

    def control(self, kind: int, ledger_id: int = -1) -> asyncio.Future:
        """Queue a TRIM (ledger_id) or DELETE record behind the appends already queued; the
        future completes once the ledger storage acted on it (fails with PersistenceError)."""
        future = self._loop.create_future()
        self._pending.append(ControlOp(self.owner, kind, ledger_id, completer(future, self.name)))
        self._tail = None
        if self._in_flight is None:
            self._queue.wake(self)
        return future

    def take_pending(self, now_ns: int) -> list:
        """The pending operations, now in flight, handed to the journal at now_ns (JournalQueue)."""
        ops, self._pending, self._tail = self._pending, [], None
        self._in_flight, self._submitted_ns = ops, now_ns
        return ops

    @property
    def pending_appends(self) -> int:
        """Appends queued or being written, not yet durable."""
        return sum(len(op.datas) for op in (self._in_flight or []) + self._pending if type(op) is AppendOp)

    @property
    def write_latency(self) -> WriteLatency:
        """Append-to-durable latency of every entry made durable since the start."""
        return latency_snapshot(self._latency)

    # -- reports -------------------------------------------------------------
    def reported(self, error: OSError | None, fenced: bool, now_ns: int) -> None:
        """The journal wrote (or failed) this ledger's operations in flight; now_ns: when the
        loop heard it (time.monotonic_ns)."""
        ops, self._in_flight = self._in_flight, None
        if error is None:
            self._durable(ops, now_ns)
        else:
            self._failed(ops, error, fenced)
        if self._pending:
            self._queue.wake(self)
        elif self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def _durable(self, ops: list, now: int) -> None:
        appended = False
        for op in ops:
            if type(op) is ControlOp:
                continue  # its done() runs once the ledger storage acted on it
            appended = True
            entries = len(op.datas)
            self.entries_added += entries
            record_latency(self._latency, op.started_ns, self._submitted_ns, now, entries)
            self._unwritten.add(op.ledger_id, op.first_entry, op.datas)
            self._queue.unwritten_bytes += op.nbytes
        if appended:
            self._on_batch(ops)  # readable first: a receipt never names an entry a read cannot find
            for op in ops:
                if type(op) is AppendOp:
                    op.settle()

    def _failed(self, ops: list, error: OSError, fenced: bool) -> None:
        """Fail the operations and every queued append (their ids are now wrong); continue from
        the last durable entry, or on a new ledger that fences the old ones. The appends are
        settled last, so their callbacks (which may append again) find the ledger renumbered."""
        failed = ops + self._pending
        self._pending, self._tail = [], None
        for op in failed:
            if type(op) is ControlOp:
                op.done(error)
            else:
                self.add_entry_errors += len(op.datas)
        current = self._map.ledgers[self._map.current_id]
        if fenced:
            self.fenced_ledgers.append(current.ledger_id)
            self._fence = tuple((lid, current.entries if lid == current.ledger_id else 0)
                                for lid in range(current.ledger_id, self._append_ledger + 1))
            log.error("ledger %s: fencing ledger %d at %d entries, continuing on ledger %d",
                      self.name, current.ledger_id, current.entries, self._append_ledger + 1)
            self._roll(self._append_ledger + 1)
        else:
            self._append_ledger, self._append_next = current.ledger_id, current.entries
            self._append_bytes, self._append_offset = current.data_bytes, current.end_offset
        self._cache.truncate(current.ledger_id, current.entries)
        for op in failed:
            if type(op) is AppendOp:
                op.settle(PersistenceError(f"append to {self.name} failed: {error}"))

    # -- entries durable, not yet in their segment --------------------------------
    def written(self, ledger_id: int, entries: int, limit: int) -> int:
        """The ledger storage wrote the first `entries` entries of ledger_id into its segment:
        memory lets go of at most `limit` of them; returns how many."""
        released, freed = self._unwritten.release(ledger_id, entries, limit)
        self._queue.unwritten_bytes -= freed
        return released

    def unwritten(self, ledger_id: int, first: int, last: int) -> list[bytes] | None:
        """Entries first..last of ledger_id when they are all durable and not yet in their
        segment (read from memory), else None."""
        return self._unwritten.read(ledger_id, first, last)

    def first_unwritten(self, ledger_id: int) -> int | None:
        """The first entry of ledger_id only memory holds (None when its segment has them all)."""
        return self._unwritten.first(ledger_id)

    def forget_ledger(self, ledger_id: int) -> None:
        """ledger_id was trimmed: its entries are not wanted in memory any more."""
        self._queue.unwritten_bytes -= self._unwritten.forget(ledger_id)

    # -- shutdown ------------------------------------------------------------
    async def drain(self) -> None:
        """Refuse further appends and wait until every queued one is durable or failed."""
        self.closing = True
        await self.idle()

    async def idle(self) -> None:
        """Wait until every operation queued so far is journaled (or failed)."""
        if self._in_flight is not None or self._pending:
            if self._drained is None or self._drained.done():
                self._drained = self._loop.create_future()
            await asyncio.shield(self._drained)

    def forget_unwritten(self) -> None:
        """The ledger storage wrote everything (the ledger closed): memory lets go."""
        self._queue.unwritten_bytes -= self._unwritten.clear()
