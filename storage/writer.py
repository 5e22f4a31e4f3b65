"""The ledger's writer thread: group commit of appends to the current segment.

The event loop hands over a *batch* (a list of :class:`Chunk`, each a run of entries
for one ledger) only when no batch is in flight; appends arriving meanwhile queue on
the loop and form the next batch. Per batch the thread encodes every record and writes
them at their offsets with ``os.pwritev``; with ``sync_data`` a one-ledger batch is written
and synced by that one call (``RWF_DSYNC``, as write + ``fdatasync``), any other batch gets
one ``fdatasync``. It reports back with ONE ``loop.call_soon_threadsafe``. Roll-over happens
here too: a chunk for a new ledger seals the current segment (fdatasync) and creates the next
one; the sealed segment's offset index is written right after that batch is reported.
File deletion (trimming) is queued on the same thread so it never races a write.
"""
from __future__ import annotations

import logging
import os
import queue
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Callable

from . import segment
from .segment import SegmentIndex

log = logging.getLogger(__name__)

PAGE_CACHE_DROP_BYTES = 1 << 20  # synced bytes between two page-cache releases


@dataclass
class Chunk:
    """Entries ``first_entry ..`` of ledger ``ledger_id``, in order, still to be written."""

    ledger_id: int
    first_entry: int
    datas: list = field(default_factory=list)
    nbytes: int = 0
    started_ns: int = field(default_factory=time.monotonic_ns)  # first append (write latency)
    submitted_ns: int = 0  # handed to the writer thread (set by the ledger)


@dataclass
class ChunkResult:
    """Where the records of a durable chunk landed (file offsets) and the new data end."""

    ledger_id: int
    first_entry: int
    offsets: array
    end_offset: int


@dataclass
class BatchOutcome:
    """Reported to the loop once per batch.

    ``durable``: chunks now on disk, in order. ``sealed``: ledgers sealed in this batch
    (their final index). ``created``: ledger ids created. ``error``: the OSError that
    failed the rest, if any. ``current``/``current_entries``: the writer's open ledger
    and how many of its entries are durable, so the loop can re-number after a failure.
    """

    durable: list[ChunkResult] = field(default_factory=list)
    sealed: list[SegmentIndex] = field(default_factory=list)
    created: list[int] = field(default_factory=list)
    error: OSError | None = None
    current: int = 0
    current_entries: int = 0
    current_end: int = 0


class SegmentWriter:
    """Owns the write fd of the current segment; all blocking writes happen on its thread."""

    def __init__(self, folder: str, current: SegmentIndex, fd: int, sync: bool, loop) -> None:
        self._folder = folder
        self._cur = current
        self._fd = fd
        self._sync = sync
        self._loop = loop
        self._dropped_up_to = 0  # offset in the current segment up to which pages were released
        self._unindexed: list[SegmentIndex] = []  # sealed by the running batch, index not yet on disk
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"ml-writer:{folder}", daemon=True)
        self._thread.start()

    # -- loop side -----------------------------------------------------------
    def submit(self, chunks: list[Chunk], done: Callable[[BatchOutcome], None]) -> None:
        """Queue a batch; ``done(outcome)`` runs on the loop when it is durable or failed."""
        self._queue.put((self._write_batch, (chunks,), done))

    def delete_ledger(self, ledger_id: int, done: Callable[[object], None] | None = None) -> None:
        """Queue the unlink of a trimmed ledger's segment and index."""
        self._queue.put((self._delete_ledger, (ledger_id,), done))

    def close(self, done: Callable[[object], None]) -> None:
        """Seal the current segment (sync + index), close the fd and stop the thread."""
        self._queue.put((self._close, (), done))

    # -- thread side ---------------------------------------------------------
    def _run(self) -> None:
        while True:
            func, args, done = self._queue.get()
            try:
                result = func(*args)
            except BaseException as exc:  # report, never kill the thread silently
                log.exception("writer %s: %s failed", self._folder, func.__name__)
                result = exc
            if done is not None:
                try:
                    self._loop.call_soon_threadsafe(done, result)
                except RuntimeError:  # loop closed: nobody is waiting any more
                    pass
            if func == self._close:
                return
            self._write_sealed_indexes()

    def _write_batch(self, chunks: list[Chunk]) -> BatchOutcome:
        out = BatchOutcome()
        synced_end = self._cur.end_offset
        synced_count = len(self._cur.offsets)
        pending: list[ChunkResult] = []  # written to the current ledger, not yet synced
        needs_sync = False
        try:
            for chunk in chunks:
                if chunk.ledger_id != self._cur.ledger_id:
                    self._roll(chunk.ledger_id, out)
                    out.durable.extend(pending)  # sealing synced them
                    pending = []
                    synced_end, synced_count = self._cur.end_offset, 0
                parts, offsets, end = segment.encode_records(chunk.datas, self._cur.end_offset)
                # The usual batch (one chunk) is written and synced by one pwritev(RWF_DSYNC): each
                # system call hands the GIL back and waits to retake it behind the busy event loop,
                # which at a steady publish rate cost more latency than the sync itself.
                inline = len(chunks) == 1 and segment.syncs_inline(parts, self._sync)
                segment.pwritev_all(self._fd, parts, self._cur.end_offset, dsync=inline)
                needs_sync = needs_sync or (self._sync and not inline)
                self._cur.offsets.extend(offsets)
                self._cur.end_offset = end
                pending.append(ChunkResult(chunk.ledger_id, chunk.first_entry, offsets, end))
            if needs_sync:
                os.fdatasync(self._fd)
            if self._sync:
                self._drop_from_page_cache()
            out.durable.extend(pending)
        except OSError as exc:
            log.error("writer %s: append batch failed: %s", self._folder, exc)
            out.error = exc
            self._rollback(synced_end, synced_count)
        out.current = self._cur.ledger_id
        out.current_entries = len(self._cur.offsets)
        out.current_end = self._cur.end_offset
        return out

    def _drop_from_page_cache(self) -> None:
        """Release the synced pages (BookKeeper's journalRemoveFromPageCache) once a whole
        PAGE_CACHE_DROP_BYTES has been written since the last release, not after every small batch.

        Tail reads are served by the entry cache; reusing freed pages for the next batch is
        much cheaper than growing the page cache, which matters most for large entries.
        """
        start = self._dropped_up_to
        if self._cur.end_offset - start < PAGE_CACHE_DROP_BYTES and start <= self._cur.end_offset:
            return
        start = min(start, self._cur.end_offset)
        try:
            os.posix_fadvise(self._fd, start, self._cur.end_offset - start, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass
        self._dropped_up_to = self._cur.end_offset

    def _rollback(self, synced_end: int, synced_count: int) -> None:
        """Cut what the failed batch wrote so the segment ends at its last durable record."""
        try:
            os.ftruncate(self._fd, synced_end)
            os.lseek(self._fd, synced_end, os.SEEK_SET)
        except OSError as exc:  # keep going: a later scan at open cuts the bad tail anyway
            log.error("writer %s: could not truncate after failure: %s", self._folder, exc)
        del self._cur.offsets[synced_count:]
        self._cur.end_offset = synced_end

    def _roll(self, new_ledger_id: int, out: BatchOutcome) -> None:
        """Seal the current ledger (its data synced) and open ``new_ledger_id``.

        The new segment is created first: if the sync then fails, it is removed again and the
        writer stays on the old, still unsealed ledger (nothing half-rolled remains). The sealed
        ledger's offset index is written once the batch has been reported
        (``_write_sealed_indexes``).
        """
        fd = segment.create_segment(self._folder, new_ledger_id, self._sync)
        try:
            self._sync_current()
        except OSError:
            os.close(fd)
            self._delete_ledger(new_ledger_id)
            raise
        self._unindexed.append(self._sealed_index())
        out.sealed.append(self._cur)
        os.close(self._fd)
        self._fd = fd
        self._cur = SegmentIndex(new_ledger_id)
        self._dropped_up_to = 0
        out.created.append(new_ledger_id)
        log.info("ledger %s: rolled over to ledger %d", self._folder, new_ledger_id)

    def _write_sealed_indexes(self) -> None:
        """Write the offset index of every ledger sealed by the batch just reported.

        Not synced, and not on the path of any receipt: the index only spares the next open a
        scan of the segment, whose data is already durable, and an index lost or torn by a crash
        fails its CRC and is rebuilt by that scan (storage/recovery.py). Synced in line, its temp
        file, rename and two syncs held up every roll-over's receipts by 2-5 ms.
        """
        while self._unindexed:
            sealed = self._unindexed.pop(0)
            try:
                segment.write_index(self._folder, sealed, sync=False)
            except OSError as exc:  # the data is durable; the next open rescans the segment
                log.error("writer %s: index of sealed ledger %d not written: %s",
                          self._folder, sealed.ledger_id, exc)

    def _seal_current(self) -> None:
        """At close: sync the current segment and write its index, synced."""
        self._sync_current()
        segment.write_index(self._folder, self._sealed_index(), self._sync)

    def _sync_current(self) -> None:
        if self._sync:
            os.fdatasync(self._fd)

    def _sealed_index(self) -> SegmentIndex:
        """Stamp the current ledger sealed now; a copy of its index, for writing out."""
        cur = self._cur
        cur.sealed_at_ms = int(time.time() * 1000)
        return SegmentIndex(cur.ledger_id, array("q", cur.offsets), cur.end_offset, cur.sealed_at_ms)

    def _delete_ledger(self, ledger_id: int) -> None:
        # Segment first: an index without a segment is ignored (and removed) at open.
        for path in (segment.segment_path(self._folder, ledger_id), segment.index_path(self._folder, ledger_id)):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        log.info("ledger %s: deleted ledger %d", self._folder, ledger_id)

    def _close(self) -> SegmentIndex:
        try:
            self._seal_current()
        finally:
            os.close(self._fd)
        return self._cur
