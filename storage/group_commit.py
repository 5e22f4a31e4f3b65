"""Group commit of one managed ledger's appends: the event-loop side of the writer thread.

``append`` numbers the entry (rolling over to a new ledger at ``max_entries_per_ledger`` /
``max_size_per_ledger_mb``), adds its bytes to the pending chunk of its ledger and returns
that chunk's shared future. When no batch is in flight, every pending chunk goes to the
:class:`storage.writer.SegmentWriter` thread as one batch (one write + sync for all of them);
appends arriving meanwhile form the next batch. The thread reports a batch back once, on
the loop: its appends are resolved (or failed with PersistenceError, renumbering from what
is really on disk), the managed ledger publishes the durable entries (``on_batch``), and the
next batch starts. Pulsar: ``ManagedLedgerImpl.pendingAddEntries`` / ``OpAddEntry``, with
BookKeeper's journal group commit behind them.

Everything that knows the writer thread is here and in writer.py: a shared journal in place
of the per-ledger thread replaces this class (same methods), not the managed ledger.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from . import segment
from .config import ManagedLedgerConfig
from .entry_cache import EntryCache
from .errors import LedgerClosedError, PersistenceError
from .ledger_map import LedgerMap
from .position import Position, make_position
from .segment import SegmentIndex
from .write_latency import WriteLatency, WriteLatencyRecorder
from .writer import BatchOutcome, Chunk, SegmentWriter

log = logging.getLogger(__name__)


class GroupCommit:
    """Pending and in-flight appends of the ledger ``name`` (loop thread only).

    ``ledgers`` is read only for the current ledger's durable size when the writer itself
    fails; ``cache`` gets every appended entry (and loses those whose write failed);
    ``on_batch(outcome)`` runs once per reported batch, after its appends were resolved or failed.
    """

    def __init__(self, name: str, config: ManagedLedgerConfig, ledgers: LedgerMap, cache: EntryCache,
                 on_batch: Callable[[BatchOutcome], None]) -> None:
        self.name = name
        self.config = config
        self._map = ledgers
        self._cache = cache
        self._on_batch = on_batch
        self.closing = False  # set by drain(): appends are refused from then on
        self._writer: SegmentWriter | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._append_ledger = 0
        self._append_next = 0
        self._append_bytes = 0
        self._pending: list[tuple[Chunk, asyncio.Future]] = []
        self._tail: tuple[Chunk, asyncio.Future] | None = None
        self._in_flight: list[tuple[Chunk, asyncio.Future]] | None = None
        self._kick_scheduled = False
        self._drained: asyncio.Future | None = None
        self._latency = WriteLatencyRecorder()
        self.entries_added = 0  # made durable since open (Pulsar entriesAddedCounter)

    def start(self, folder: str, ledger_id: int, fd: int, sync: bool, loop: asyncio.AbstractEventLoop) -> None:
        """Start the writer thread on the new, empty ledger ``ledger_id`` (segment open as ``fd``)."""
        self._loop = loop
        self._append_ledger = ledger_id
        self._writer = SegmentWriter(folder, SegmentIndex(ledger_id), fd, sync, loop)

    # -- appends -------------------------------------------------------------
    def append(self, data: bytes) -> tuple[Position, asyncio.Future]:
        """Queue ``data`` without waiting: returns its Position and a future that completes (None)
        once the entry is on disk, or fails with PersistenceError. Many appends share one future
        (one per group-commit chunk), so callers on a hot path add a done-callback instead of
        creating a task per entry; an awaiting caller shields it (``asyncio.shield``), as
        cancelling it would fail every other append of its chunk. Raises LedgerClosedError when closed.
        """
        if self.closing:
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
        return make_position((ledger_id, entry_id)), tail[1]  # per entry: the fast constructor

    @property
    def pending_appends(self) -> int:
        """Appends queued or being written, not yet durable."""
        batches = (self._in_flight or []) + self._pending
        return sum(len(chunk.datas) for chunk, _ in batches)

    @property
    def write_latency(self) -> WriteLatency:
        """Append-to-durable latency of every entry made durable since the start."""
        return self._latency.snapshot()

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
        """Writer callback (on the loop): resolve or fail the batch's futures, let the ledger
        publish what became durable, start the next batch."""
        batch, self._in_flight = self._in_flight, None
        if isinstance(outcome, BaseException):  # unexpected bug in the writer: fail the batch
            current = self._map.ledgers[self._map.current_id]
            outcome = BatchOutcome(error=OSError(str(outcome)), current=self._map.current_id,
                                   current_entries=current.entries, current_end=current.end_offset)
        now = time.monotonic_ns()
        for res, (chunk, fut) in zip(outcome.durable, batch):
            self.entries_added += len(res.offsets)
            fut.set_result(None)
            self._latency.record(chunk.started_ns, chunk.submitted_ns, now, len(res.offsets))
        if outcome.error is not None:
            self._fail_appends(batch[len(outcome.durable):], outcome)
        self._on_batch(outcome)
        if self._pending:
            self._kick()
        elif self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

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

    # -- files and shutdown --------------------------------------------------
    def delete_ledger(self, ledger_id: int) -> None:
        """Queue the unlink of a trimmed ledger's files behind the writes already queued."""
        self._writer.delete_ledger(ledger_id)

    async def drain(self) -> None:
        """Refuse further appends and wait until every queued one is durable or failed."""
        self.closing = True
        if self._in_flight is not None or self._pending:
            self._drained = self._loop.create_future()
            if self._in_flight is None:
                self._kick()
            await self._drained

    async def close(self) -> None:
        """Seal the current segment (sync + index) and stop the writer thread; a failure is
        logged (the data is durable; the next open rescans the segment)."""
        done = self._loop.create_future()
        self._writer.close(lambda result: done.done() or done.set_result(result))
        result = await done
        if isinstance(result, BaseException):
            log.error("ledger %s: sealing the current segment failed: %s", self.name, result)
