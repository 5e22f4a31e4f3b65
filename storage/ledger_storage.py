"""Ledger storage: the thread that writes journaled entries into their segments, behind the journal.

Entries reach the segments after the journal made them durable, so nothing here is on a
receipt's path. Groups are gathered for up to WRITE_BEHIND_SECONDS (or WRITE_BEHIND_BYTES),
then every ledger's entries of that time go to its segment with one ``pwritev`` at the offsets
the loop gave them: the system calls follow the number of ledgers written in a round, not the
number of messages. Until a round reports them written, the loop serves those entries from
memory (storage.group_commit). A round, and a checkpoint's syncs, pause for a millisecond every
BREATHE_EVERY_LEDGERS ledgers, so the event loop is not kept waiting for the GIL. Write
descriptors are kept in an LRU of ``openFileLimit`` entries; an idle ledger holds none. Every
``flushInterval`` a checkpoint syncs every segment and folder changed since the last one, then
records how far the journal is covered, and the journal files before that point go
(BookKeeper's SyncThread / checkpoint). After a failed sync no checkpoint is recorded until a
restart: the journal keeps everything since the last good one.

Also on this thread, in journal order: sealing a ledger on roll-over or close (its offset index,
unsynced: a lost index is rebuilt by a scan), trimming (after the TRIM record is durable) and
deleting a managed ledger's folder (after the DELETE record). A failed segment write keeps the
entries in memory and the journal uncut, and is retried the next round.
"""
from __future__ import annotations

import collections
import logging
import os
import shutil
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from . import journal_format as jf
from . import segment
from .journal import AppendOp, CheckpointOp, ControlOp, JournalLedger
from .journal_format import Mark
from .thread_names import name_this_thread
from .segment import SegmentIndex, fsync_dir

log = logging.getLogger(__name__)

WRITE_BEHIND_SECONDS = 1.0  # how long written groups gather before a round writes them
WRITE_BEHIND_BYTES = 16 << 20  # ... or how many bytes of entries
POLL_SECONDS = 0.05  # how often a gathering round looks for more written groups
# A round's writes and a checkpoint's syncs leave the GIL to the event loop for BREATHE_SECONDS
# after every BREATHE_EVERY_LEDGERS ledgers. At 1,000 topics a round is 20-40 ms of Python and a
# checkpoint 100-140 ms; the loop, waiting for the GIL behind them (up to the 5 ms switch interval
# at a time, and the journal thread wants it too), ran 6-30 ms late, and the receipts of those
# moments with it. Paced, a round over 1,000 ledgers takes 20 ms longer, all of it behind the journal.
BREATHE_EVERY_LEDGERS = 50
BREATHE_SECONDS = 0.001
RUN_FIELDS = 5  # a pending run's atoms: first entry, first offset, end offset, records, offsets
_OFFSET = struct.Struct("q")  # one record offset as the bytes of an array("q") (native order)


@dataclass(eq=False)
class SealOp:
    """Write everything owner has, seal its current ledger; done(error or None) on the loop."""

    owner: JournalLedger
    done: Callable[[BaseException | None], None]


@dataclass(eq=False)
class _Current:
    """The ledger of an owner being written: its index so far (offsets written), for sealing."""

    index: SegmentIndex


class LedgerStorage:
    """The ledger storage thread of a factory. journal_folder: where the CHECKPOINT file is;
    sync: journalSyncData (checkpoints sync only then); open_file_limit: write descriptors kept
    open (openFileLimit); flush_interval: seconds between checkpoints (flushInterval);
    progress(list of (owner, ledger id, entries written)) runs on loop after each round;
    delete_journal_before(seq) drops journal files a checkpoint passed."""

    def __init__(self, journal_folder: str, sync: bool, open_file_limit: int, flush_interval: float, loop,
                 progress: Callable[[list], None], delete_journal_before: Callable[[int], None]) -> None:
        self._journal_folder = journal_folder
        self._sync = sync
        self._fd_limit = max(1, open_file_limit)
        self._flush_interval = flush_interval
        self._loop = loop
        self._progress = progress
        self._delete_journal_before = delete_journal_before
        # Written groups, seals and the stop, in journal order. The thread is woken by the first
        # group of a round and by whatever needs an answer; while a round gathers it looks every
        # POLL_SECONDS, so at a thousand groups a second the writers do not wake it (a futex
        # each, and the GIL taken from the loop) for every group.
        self._inbox: collections.deque = collections.deque()
        self._wake = threading.Event()
        self._gathering = False  # the thread looks at the inbox again unwoken: appends need no wake-up
        self._fds: OrderedDict[tuple[JournalLedger, int], int] = OrderedDict()
        self._current: dict[JournalLedger, _Current] = {}
        # Runs of entries to write, in journal order, per ledger, RUN_FIELDS atoms a run in one flat
        # list: first entry, first offset, end offset, segment records joined, record offsets as
        # int64 bytes. They wait up to WRITE_BEHIND_SECONDS: an AppendOp (with its list and array),
        # or even a tuple per run, is an object the cyclic collector scans while it is young, and
        # at a thousand topics x 10 msg/s ten thousand of them made a young collection take 3-8 ms.
        self._pending: dict[tuple[JournalLedger, int], list] = {}
        self._dirty_files: set[tuple[JournalLedger, int]] = set()  # ledgers written since the last checkpoint
        self._dirty_folders: set[str] = set()  # entries created or removed since then
        self._mark: Mark | None = None  # the journal covered by what this thread has written
        self._next_checkpoint = time.monotonic() + flush_interval
        self._sync_failure: OSError | None = None  # a failed segment or folder sync: no checkpoint again
        # A segment write failed (a full disk): once the retries succeed, checkpoint at once, so the
        # journal stops holding a second copy of the entries (a restart replays what it holds).
        self._behind = False
        self._thread = threading.Thread(target=self._run, name="ml-storage", daemon=True)
        self.errors = 0  # failed writes and checkpoints since start
        self.checkpoints = 0

    def start(self) -> None:
        self._thread.start()

    # -- other threads ---------------------------------------------------------
    def intake(self, ops: list, mark: Mark) -> None:
        """A durable journal group (called by whoever wrote it, the journal thread or the loop,
        before the loop hears of it). Its AppendOps are kept as tuples of atoms (_stored), their
        owners in a list beside them: a group may wait here while a round or a checkpoint runs
        (at 10,000 topics, a second's groups: tens of thousands of appends), and the collector
        stops tracking a tuple of atoms at its first pass, where one holding its owner would be
        scanned by every collection of the older generations it was promoted to."""
        stored, owners = [], []
        for op in ops:
            if type(op) is AppendOp:
                stored.append(_stored(op))
                owners.append(op.owner)
            else:
                stored.append(op)
                owners.append(None)
        self._put((stored, owners, mark, _needs_answer(ops)))

    def seal(self, op: SealOp) -> None:
        """Queue a close: everything the ledger has is written and its current ledger sealed."""
        self._put(([op], [None], None, True))

    def close(self) -> None:
        """Write everything, checkpoint (synced), stop; blocks until the thread is gone."""
        self._put(None)
        self._thread.join()

    def _put(self, item: tuple | None) -> None:
        """item: (ops, their owners (None but for appends), mark or None, whether it needs an
        answer now), or None to stop."""
        self._inbox.append(item)
        if item is None or item[3] or not self._gathering:
            self._gathering = True  # told: the thread looks at the inbox before it waits untimed
            self._wake.set()

    @property
    def open_files(self) -> int:
        return len(self._fds)

    # -- thread -----------------------------------------------------------------
    def _run(self) -> None:
        name_this_thread('ml-storage')
        stop = False
        while not stop:
            items = self._gather()
            stop = None in items
            asked = []  # CheckpointOps
            try:
                for ops, owners, mark, _ in (item for item in items if item is not None):
                    asked += self._take(ops, owners)
                    if mark is not None:
                        self._mark = mark
                self._write_round()
                error = None
                caught_up = self._behind and not self._pending
                if stop or asked or caught_up or time.monotonic() >= self._next_checkpoint:
                    error = self._checkpoint()
            except BaseException as exc:  # a bug: log it and keep the thread (and the journal uncut)
                self.errors += 1
                log.exception("ledger storage: a round failed")
                error = exc
            for op in asked:
                self._tell(op.done, error)
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def _gather(self) -> list:
        """Wait for work and queue the appends of written groups per ledger as they come, so a
        round does not start with a second's groups (a thousand at one busy topic) to sort while
        the loop waits for the GIL. They gather (write-behind) for WRITE_BEHIND_SECONDS or
        WRITE_BEHIND_BYTES, unless something needs an answer now (a seal, a trim, a delete, a
        checkpoint, a stop) or a checkpoint is due. Returns the items left for _take: the first
        that needs an answer and all queued behind it, in order."""
        deadline = None
        gathered = 0
        while True:
            while self._inbox:
                item = self._inbox.popleft()
                if item is None or item[3]:  # decided once, by the writer
                    self._gathering = False
                    return [item, *self._drain()]
                ops, owners, self._mark, _ = item
                self._take(ops, owners)  # appends only: queued per ledger, nothing to answer
                gathered += sum(stored[-1] for stored in ops)
                if deadline is None:
                    deadline = time.monotonic() + WRITE_BEHIND_SECONDS
                    self._gathering = True
            due = self._next_checkpoint if deadline is None else min(deadline, self._next_checkpoint)
            now = time.monotonic()
            if gathered >= WRITE_BEHIND_BYTES or now >= due:
                self._gathering = False
                return []
            self._wake.wait(due - now if deadline is None else min(due - now, POLL_SECONDS))
            self._wake.clear()  # before draining: a group added after this is seen, woken or not

    def _drain(self) -> list:
        items = []
        while self._inbox:
            items.append(self._inbox.popleft())
        return items

    def _take(self, ops: list, owners: list) -> list:
        """Queue appends per ledger; act on the other operations in journal order; returns the
        CheckpointOps, answered after this round's checkpoint."""
        asked = []
        for op, owner in zip(ops, owners):
            kind = type(op)
            if kind is tuple:  # an append (_stored): (owner, ledger id) -> its run
                self._pending.setdefault((owner, op[0]), []).extend(op[1:1 + RUN_FIELDS])
            elif kind is ControlOp:
                self._control(op)
            elif kind is SealOp:
                self._close_owner(op)
            elif kind is CheckpointOp:
                asked.append(op)
        return asked

    # -- writing ------------------------------------------------------------------
    def _write_round(self) -> None:
        """Write every pending run of entries (one pwritev per ledger) and tell the loop. After a
        failure the owner's later ledgers wait too (sealing would index a ledger with a gap)."""
        progress, failed = [], set()
        for key in _paced(list(self._pending)):
            owner, ledger_id = key
            if owner in failed:
                continue
            if self._write_ledger(owner, ledger_id):
                progress.append((owner, ledger_id, self._current[owner].index.entries))
            else:
                failed.add(owner)
        if progress:
            self._tell(self._progress, progress)

    def _write_ledger(self, owner: JournalLedger, ledger_id: int) -> bool:
        """Write the pending entries of one ledger; False (kept for the next round) on failure."""
        runs = self._pending[(owner, ledger_id)]
        first_entry, first_offset = runs[0], runs[1]
        try:
            current = self._ledger_for(owner, ledger_id, first_offset)
            fd = self._fd(owner, ledger_id)
            segment.pwritev_all(fd, runs[3::RUN_FIELDS], first_offset)
        except OSError as exc:
            self.errors += 1
            self._behind = True
            log.error("ledger %s: writing ledger %d behind the journal failed (kept, retried): %s",
                      owner.folder, ledger_id, exc)
            self._drop_fd(owner, ledger_id)
            return False
        index = current.index
        del index.offsets[first_entry:]
        for offsets in runs[4::RUN_FIELDS]:
            index.offsets.frombytes(offsets)
        index.end_offset = runs[-RUN_FIELDS + 2]
        self._dirty_files.add((owner, ledger_id))
        del self._pending[(owner, ledger_id)]
        return True

    def _ledger_for(self, owner: JournalLedger, ledger_id: int, first_offset: int) -> _Current:
        """The owner's current ledger, rolled to ledger_id (sealing the one before) and its
        segment created when ledger_id starts here (the run to write starts at its header's end)."""
        current = self._current.get(owner)
        if current is None or current.index.ledger_id != ledger_id:
            if current is not None:
                self._seal(owner, current)
            current = self._current[owner] = _Current(SegmentIndex(ledger_id))
        if first_offset == segment.HEADER_SIZE:
            if owner.opened_ledger == ledger_id:
                owner.opened_ledger = -1  # made at open, header only; a retried write remakes it
            else:
                self._drop_fd(owner, ledger_id)
                os.close(segment.create_segment(owner.folder, ledger_id, sync=False))
            self._dirty_folders.add(owner.folder)  # the open made it unsynced too
            current.index = SegmentIndex(ledger_id)
        return current

    def _seal(self, owner: JournalLedger, current: _Current) -> None:
        """Write the offset index of a ledger the owner moved past (unsynced: a lost or torn
        index is rebuilt by a scan at open)."""
        if not current.index.offsets:
            return
        try:
            segment.write_index(owner.folder, current.index, sync=False)
        except OSError as exc:
            log.error("ledger %s: index of ledger %d not written: %s", owner.folder, current.index.ledger_id, exc)
        self._drop_fd(owner, current.index.ledger_id)

    # -- descriptors ----------------------------------------------------------------
    def _fd(self, owner: JournalLedger, ledger_id: int) -> int:
        key = (owner, ledger_id)
        fd = self._fds.get(key)
        if fd is not None:
            self._fds.move_to_end(key)
            return fd
        fd = os.open(segment.segment_path(owner.folder, ledger_id), os.O_WRONLY)
        self._fds[key] = fd
        while len(self._fds) > self._fd_limit:
            os.close(self._fds.popitem(last=False)[1])
        return fd

    def _drop_fd(self, owner: JournalLedger, ledger_id: int) -> None:
        fd = self._fds.pop((owner, ledger_id), None)
        if fd is not None:
            os.close(fd)

    # -- trims, deletes, closes --------------------------------------------------------
    def _control(self, op: ControlOp) -> None:
        error = None
        try:
            if op.kind == jf.TRIM:
                self._trim(op.owner, op.ledger_id)
            else:
                self._delete(op.owner)
        except OSError as exc:
            self.errors += 1
            log.error("ledger %s: %s failed: %s", op.owner.folder, "trim" if op.kind == jf.TRIM else "delete", exc)
            error = exc
        if op.done is not None:
            self._tell(op.done, error)

    def _trim(self, owner: JournalLedger, ledger_id: int) -> None:
        """Remove a trimmed ledger's files; first make the folder's newer segments durable, so a
        power loss never leaves the ledger ids on disk lower than a cursor may point at."""
        self._pending.pop((owner, ledger_id), None)
        self._drop_fd(owner, ledger_id)
        if self._sync:  # also covers the segment the ledger's open created, unsynced
            fsync_dir(owner.folder)
        # Segment first: an index without a segment is ignored (and removed) at open.
        for path in (segment.segment_path(owner.folder, ledger_id), segment.index_path(owner.folder, ledger_id)):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self._dirty_files.discard((owner, ledger_id))
        self._dirty_folders.add(owner.folder)
        log.info("ledger %s: deleted ledger %d", owner.folder, ledger_id)

    def _delete(self, owner: JournalLedger) -> None:
        """The managed ledger's folder goes, durably (its parent is synced)."""
        self._forget(owner)
        shutil.rmtree(owner.folder, ignore_errors=True)
        self._dirty_files = {key for key in self._dirty_files if key[0] is not owner}
        self._dirty_folders.discard(owner.folder)
        fsync_dir(os.path.dirname(owner.folder))

    def _close_owner(self, op: SealOp) -> None:
        """Write what the ledger has and seal it; its journal records stay until a checkpoint."""
        error = None
        for key in [key for key in self._pending if key[0] is op.owner]:
            if not self._write_ledger(*key):
                error = OSError(f"ledger {op.owner.folder}: entries not written behind the journal")
        current = self._current.get(op.owner)
        if current is not None and error is None:
            self._seal(op.owner, current)
        if error is None:
            self._forget(op.owner)
        self._tell(op.done, error)

    def _forget(self, owner: JournalLedger) -> None:
        for key in [key for key in self._pending if key[0] is owner]:
            del self._pending[key]
        for key in [key for key in self._fds if key[0] is owner]:
            os.close(self._fds.pop(key))
        self._current.pop(owner, None)

    # -- checkpoints ------------------------------------------------------------------
    def _checkpoint(self) -> OSError | None:
        """Sync what changed since the last checkpoint, then record how far the journal is
        covered and drop the journal files before it. Skipped while entries wait for a retry
        (returns the error then, and when the checkpoint itself fails)."""
        self._next_checkpoint = time.monotonic() + self._flush_interval
        if self._pending:
            return OSError("entries wait to be written behind the journal; no checkpoint")
        if self._mark is None:
            return None
        if self._sync_failure is not None:
            return self._sync_failure
        mark = self._mark
        try:
            if self._sync:
                self._sync_dirty()
            jf.write_checkpoint(self._journal_folder, mark)
        except OSError as exc:
            self.errors += 1
            log.error("ledger storage: checkpoint failed (the journal is kept): %s", exc)
            return exc
        self._dirty_files.clear()
        self._dirty_folders.clear()
        self._behind = False
        self.checkpoints += 1
        self._delete_journal_before(mark.seq)
        return None

    def _sync_dirty(self) -> None:
        """Sync every segment and folder changed since the last checkpoint. A failed sync is never
        retried: the kernel may have dropped the pages it could not write and report the next sync
        of that file as a success (PostgreSQL's "fsyncgate"), so no checkpoint is recorded again
        and the journal keeps those entries; the restart's replay writes them back."""
        try:
            for key in _paced(self._dirty_files):
                self._sync_file(*key)
            for folder in sorted(self._dirty_folders):
                if os.path.isdir(folder):
                    fsync_dir(folder)
        except OSError as exc:
            self._sync_failure = exc
            log.error("ledger storage: a segment or folder sync failed; no checkpoint until a restart "
                      "(the journal is kept and the restart replays it into the segments): %s", exc)
            raise

    def _sync_file(self, owner: JournalLedger, ledger_id: int) -> None:
        fd = self._fds.get((owner, ledger_id))
        if fd is not None:
            os.fdatasync(fd)
            return
        try:
            fd = os.open(segment.segment_path(owner.folder, ledger_id), os.O_RDONLY)
        except FileNotFoundError:  # trimmed or deleted since it was written
            return
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)

    def _tell(self, callback, *args) -> None:
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # loop closed: nobody is waiting any more
            pass


def _paced(keys):
    """keys (ledgers), the GIL left to the loop after every BREATHE_EVERY_LEDGERS of them."""
    for n, key in enumerate(keys, 1):
        yield key
        if n % BREATHE_EVERY_LEDGERS == 0:
            _breathe()


def _breathe() -> None:
    time.sleep(BREATHE_SECONDS)  # a sleep releases the GIL, and this thread does not ask for it back meanwhile


def _stored(op: AppendOp) -> tuple:
    """What the ledger storage keeps of an append, atoms only: (ledger id, first entry, first
    offset, end offset, segment records joined, record offsets as int64 bytes, entry bytes)."""
    offsets = _OFFSET.pack(op.first_offset) if op.offsets is None else op.offsets.tobytes()
    return (op.ledger_id, op.first_entry, op.first_offset, op.end_offset, op.seg_bytes, offsets, op.nbytes)


def _needs_answer(ops: list) -> bool:
    """A group with anything but appends (a trim, a delete, a checkpoint, a seal) is acted on at once."""
    return any(type(op) is not AppendOp for op in ops)
