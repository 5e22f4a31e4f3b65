"""The journal: one write-ahead log and one group commit for the appends of every managed ledger.

The loop hands over lists of operations (appends of entries, and the SEAL / TRIM / DELETE
records of storage.journal_format); the journal thread takes everything queued at once,
encodes it into records, writes them with one ``pwritev`` (``RWF_DSYNC`` when journalSyncData:
written and synced by that one call) and reports the whole group back to the loop with ONE
``call_soon_threadsafe``. The cost of making a message durable so does not depend on how many
ledgers take messages: a thousand quiet topics share a sync with one busy one. Written groups
then go to the ledger storage thread (storage.ledger_storage), which writes the entries into
their segments behind the journal.

A small group (INLINE_GROUP_BYTES) that finds the thread with nothing queued or in hand is
written by the loop itself, in the same way. On a lightly loaded broker the hand-over to the
thread and back (a wake-up, and the GIL to win back on each side) costs more than the synced
write, and the loop has nothing else to do meanwhile. A larger group means the loop is busy: the
thread writes it while the loop goes on, and until the thread has reported every group it was
handed, the loop writes nothing itself, so the records keep the order of their groups. Nor does
it while synced writes are slow (INLINE_MAX_WRITE_SECONDS, on average): a stalling disk must not
stall the loop's dispatch, acks and admin requests with it.

Zeros are written ahead of the records (runs of journalPreAllocSizeMB, as BookKeeper's
JournalChannel does; the next run once less than half a run is left), by the thread while the
loop goes on writing below them: a synced record write then overwrites blocks the file already
has, within its size, so the sync has no block to allocate and no file size to commit. Appending
instead made every synced write commit the file system's own journal, with whatever metadata
the segment writes behind it had changed meanwhile (1,000 ledgers a second): writes of 2-16 ms,
some of them CPU. A group the loop writes must fit below the zeros; any other goes to the
thread, which may append past them. The thread writes a run a step (ZERO_STEP_BYTES, synced) at
a time, ZERO_STEP_PAUSE_SECONDS apart, and the groups handed to it meanwhile go between the
steps. No run starts that would leave the file system less than ROOM_KEPT_BYTES free.

A failed write fails its group (a ledger has one operation in flight at a time, so no later
group holds entries that follow the failed ones). A write that ran out of room (ENOSPC, EFBIG,
EDQUOT) is cut off the file again and the ledgers continue where they were; any other error
(EIO: a write or sync whose outcome is unknown, PostgreSQL's "fsyncgate") retires the journal
file, since what it holds past its last good record is unknown: the next group goes to a new
file, and the ledgers move to new ledgers, fencing what the old file may hold beyond their last
durable entry (SEAL records).
Source: BookKeeper Journal (group commit, journalMaxSizeMB, lastMark), JournalChannel
(journalPreAllocSizeMB) and Bookie's handling of a journal write error; Pulsar ManagedLedgerImpl
on a BookKeeper write error.
"""
from __future__ import annotations

import errno
import logging
import os
import queue
import threading
import time
from array import array
from dataclasses import dataclass
from typing import Callable

from . import journal_format as jf
from . import segment
from .durability import Durability
from .journal_format import Mark
from .position import Position
from .thread_names import name_this_thread

log = logging.getLogger(__name__)

# A write that failed for lack of room wrote nothing past the cut: the file can be cut back.
ROOM_ERRORS = frozenset((errno.ENOSPC, errno.EFBIG, errno.EDQUOT))
# Entry bytes of a group the loop writes itself when the journal thread is idle (10,000 msg/s
# of 100 B on one topic makes groups of about 2 KB; a loop that is falling behind, far more).
INLINE_GROUP_BYTES = 64 << 10
# ... and only while a write takes less than this on average (a moving average over both
# writers, so the loop comes back once the disk is quick again).
INLINE_MAX_WRITE_SECONDS = 0.001
# What a NAME record can take at most: its header and a folder name (NAME_MAX bytes).
_NAME_RECORD_MAX = jf.RECORD.size + 255
_ENTRY_OVERHEAD = jf.RECORD.size + segment.RECORD_OVERHEAD
_FILL = object()  # a request to the journal thread: the next step of a run of zeros
ZERO_STEP_BYTES = 256 << 10  # zeros written and synced at a time (a handed group waits at most one step)
# Pause between the steps of a run while the records have more than a quarter of a run below the
# zeros (groups handed meanwhile do not wait for it): a synced write of the loop's that meets a
# step waits for it, so steps in a row hold up every group for as long as the run takes (16 MiB
# in 1 MiB steps: 15 ms, in which 120-190 receipts of 10,000 msg/s took over 1 ms). Paced, a
# 16 MiB run takes 0.16 s, and the records have half a run left when it starts.
ZERO_STEP_PAUSE_SECONDS = 0.002
# Room a run of zeros leaves free at least: twice what one round of the ledger storage writes
# behind the journal (WRITE_BEHIND_BYTES, 16 MiB).
ROOM_KEPT_BYTES = 32 << 20


@dataclass(eq=False, slots=True)
class JournalLedger:
    """What the journal and the ledger storage know of one managed ledger: its folder (where its
    segments are; every journal file names it by a NAME record before using its id) and, on
    the loop side, the GroupCommit of its appends (None for a ledger being deleted unopened)."""

    folder: str
    commit: object = None
    journal_id: int = -1  # set by the journal on first use
    # The ledger whose segment the open made (recovery.recover_ledgers: its header, nothing
    # else): the ledger storage writes its first entries into it instead of making it again.
    # Remaking it (O_TRUNC) cost ~0.15 ms of kernel time on ext4, at every topic's first
    # message: 1.5 s of CPU when 10,000 topics start sending. -1 once used.
    opened_ledger: int = -1


class AppendOp(Durability):
    """Entries first_entry.. of ledger_id, at segment offset first_offset (their records' offsets in
    `offsets`, None while it holds one entry; the segment's end after them in end_offset).
    seg_bytes: their segment records joined, set when the group is encoded (the ledger storage's
    round so writes one buffer per operation, not two per entry); fence: (ledger id, entries it
    keeps) pairs the journal writes as SEAL records first. The operation is its appends'
    Durability (storage.durability: settled once durable, or failed, by the loop); started_ns
    (its first append: the write latency) is the loop's too.
    A plain class with slots: one is built for every ledger with appends in every group,
    thousands a second with many topics. It lives from its first append to its group's report
    (milliseconds): what the loop and the ledger storage keep of it until the entries are written
    behind (up to a second) are atoms in one list per ledger, which the cyclic garbage collector
    does not track (storage.unwritten, and the ledger storage's pending runs)."""

    __slots__ = ("owner", "ledger_id", "first_entry", "first_offset", "datas", "offsets", "end_offset", "nbytes",
                 "fence", "seg_bytes", "started_ns", "last_position")

    def __init__(self, owner: JournalLedger, ledger_id: int, first_entry: int, first_offset: int, data: bytes,
                 started_ns: int = 0, fence: tuple[tuple[int, int], ...] = ()) -> None:
        """data: the first entry (add() as inlined here: at 1,000 topics most operations hold one)."""
        self.settled = False  # Durability's fields, without a call to its __init__
        self.error = None
        self._callbacks = None
        self.owner = owner
        self.ledger_id = ledger_id
        self.first_entry = first_entry
        self.first_offset = first_offset
        self.datas: list[bytes] = [data]
        # Made by a second entry: at many topics most operations hold one, and an array each was
        # one more object the collector tracks for every append.
        self.offsets: array | None = None
        self.end_offset = first_offset + segment.RECORD_OVERHEAD + len(data)
        self.nbytes = len(data)
        self.fence = fence
        self.seg_bytes = b""
        self.started_ns = started_ns
        # The Position the loop answered for its last append: the last confirmed position once
        # durable, without making another.
        self.last_position: Position | None = None

    def add(self, data: bytes) -> None:
        """One more entry, the next id of the ledger (the first comes with the operation)."""
        self.datas.append(data)
        if self.offsets is None:
            self.offsets = array("q", (self.first_offset,))
        self.offsets.append(self.end_offset)
        self.end_offset += segment.RECORD_OVERHEAD + len(data)
        self.nbytes += len(data)


@dataclass(eq=False)
class ControlOp:
    """A TRIM (ledger_id) or DELETE record for owner; done(error or None) runs on the loop once
    the ledger storage has acted on it (or the journal failed to write it)."""

    owner: JournalLedger
    kind: int
    ledger_id: int = -1
    done: Callable[[BaseException | None], None] | None = None


@dataclass(eq=False)
class CheckpointOp:
    """Passes through the journal (no record) to the ledger storage, which writes everything
    before it and checkpoints at once; done(error or None) runs on the loop."""

    done: Callable[[BaseException | None], None]


@dataclass
class GroupReport:
    """One written (or failed) group, reported to the loop: its operations in order (the loop's
    JournalQueue.report lets go of each as it tells its ledger: the list ends full of None), the
    error that failed it (None: durable), whether the ledgers must move to new ledgers (fenced),
    and how many submitted groups the journal thread merged into it (0: written on the loop)."""

    ops: list
    error: OSError | None = None
    fenced: bool = False
    handed: int = 0


class Journal:
    """The journal thread of a factory. folder: the journal directory; sync: journalSyncData;
    max_file_bytes: journalMaxSizeMB; prealloc_bytes: journalPreAllocSizeMB (a run of zeros
    written ahead); report(GroupReport) runs on loop for every group; written(ops, mark) runs on this
    thread after each durable group (the ledger storage's intake); first_seq: the file to write
    first (recovery gives one past every existing file)."""

    def __init__(self, folder: str, sync: bool, max_file_bytes: int, prealloc_bytes: int, loop,
                 report: Callable[[GroupReport], None], written: Callable[[list, Mark], None], first_seq: int) -> None:
        self.folder = folder
        self._sync = sync
        self._max_file_bytes = max_file_bytes
        self._prealloc_bytes = prealloc_bytes
        # Zeros ahead: the loop writes a group itself only below _allocated (set on the loop once a
        # run of zeros is synced); the thread zeroes on from _zeroed_to. Replacing or cutting the
        # file (_file_lock) starts a new _layout, so a run of zeros reported from before is ignored.
        self._allocated = self._zeroed_to = 0
        self._run_to: tuple[int, int] | None = None  # (layout, end) of the run being written
        self._filling = False
        self._fill_after = 0  # after a run found no room: no next one before the records pass this
        self._next_step_at: float | None = None  # thread side: when a paused run of zeros goes on
        self._layout = 0
        self._file_lock = threading.Lock()
        self._loop = loop
        self._report = report
        self._written = written
        self._seq = first_seq
        self._fd = -1
        self._offset = 0
        self._declared: set[int] = set()  # journal ids with a NAME record in the current file
        self._next_id = 0
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        # Groups handed to the thread and not yet reported back (loop side). While any are, the
        # file is the thread's: the loop writes nothing itself, so the records keep their order.
        self._handed = 0
        self._write_seconds = 0.0  # moving average of a group's write (and sync), any writer
        self._thread = threading.Thread(target=self._run, name="ml-journal", daemon=True)
        self.errors = 0  # groups failed since start (Pulsar's addEntryErrors, summed)

    def start(self) -> None:
        """Create the first file with its first run of zeros and start the thread. Raises OSError."""
        self._open_file(self._seq)
        while (run := self._zero_step(self._prealloc_bytes)) is None:  # no loop to hold up yet: one step
            pass
        self._filled(*run)
        self._thread.start()

    # -- loop side -----------------------------------------------------------
    def submit(self, ops: list) -> None:
        """Write a group of AppendOp / ControlOp / CheckpointOp (in order); reported once, on the
        loop. Loop thread only. A small group is written here when the thread has nothing in hand
        and writes are quick, and reported before this returns (a failure too: nothing is
        raised); any other is queued for the thread and reported on a later turn."""
        if self._handed == 0 and self._write_seconds < INLINE_MAX_WRITE_SECONDS and self._fits_inline(ops):
            self._write_group(ops, 0)
        else:
            self._handed += 1
            self._queue.put(ops)
        if not self._filling and self._offset >= self._fill_after and \
                self._allocated - self._offset < self._prealloc_bytes // 2:
            self._filling = True
            self._queue.put(_FILL)

    def _fits_inline(self, ops: list) -> bool:
        """ops are small enough for the loop to write, and fit in the zeros ahead. Asked last: the
        sizes take a pass over a group's operations, one per ledger with many topics."""
        entry_bytes, most = _sizes(ops)
        return entry_bytes <= INLINE_GROUP_BYTES and self._offset + most <= self._allocated

    def close(self) -> None:
        """Stop after the groups already queued; blocks until the thread is gone."""
        self._queue.put(None)
        self._thread.join()

    @property
    def mark(self) -> Mark:
        """Where the next record goes (for tests and stats; read on any thread)."""
        return Mark(self._seq, self._offset)

    # -- thread side ---------------------------------------------------------
    def _run(self) -> None:
        name_this_thread('ml-journal')
        while self._write_queued():
            pass
        os.close(self._fd)

    def _write_queued(self) -> bool:
        """Write every group queued, waiting for the first; False once told to stop. The groups
        go with this call's frame: the thread holds no AppendOp while it waits for the next."""
        groups = [self._next_request()]
        while not self._queue.empty():
            groups.append(self._queue.get())
        stop = None in groups
        handed = [group for group in groups if type(group) is list]
        if handed:
            self._write_group([op for group in handed for op in group], len(handed))
        if _FILL in groups and not stop:
            self._fill()
        return not stop

    def _next_request(self):
        """The next request queued, waiting for one; _FILL once a paused run of zeros is due."""
        if self._next_step_at is None:
            return self._queue.get()
        try:
            return self._queue.get(timeout=max(0.0, self._next_step_at - time.monotonic()))
        except queue.Empty:
            self._next_step_at = None
            return _FILL

    def _write_group(self, ops: list, handed: int) -> None:
        """Write ops (handed: groups of the thread's in them, 0 on the loop), then report them:
        the report is the last thing done, since once the loop has it the file may be the loop's."""
        # The NAME records of this group: gone with it when it is cut back. Listed, not a copy of
        # the declared set taken first (one id per ledger in the file: 10,000 per group).
        declared = []
        try:
            parts = self._encode(ops, declared)
            self._append(parts)
        except OSError as exc:
            self._declared.difference_update(declared)
            self._failed(ops, exc, handed)
            return
        except BaseException as exc:  # a bug: report, never kill the thread silently
            log.exception("journal %s: writing a group failed", self.folder)
            self._declared.difference_update(declared)
            self._failed(ops, OSError(str(exc)), handed)
            return
        self._written(ops, Mark(self._seq, self._offset))
        if self._offset >= self._max_file_bytes:
            self._rotate()
        self._tell(GroupReport(ops, handed=handed))

    def _encode(self, ops: list, declared: list) -> list:
        """The records of a group as iovec parts; each AppendOp gets its segment records. The
        journal ids given a NAME record here are added to declared."""
        parts = []
        record_header, record_crc, entry_record = segment.RECORD_HEADER.pack, segment.record_crc, jf.entry_record
        for op in ops:
            if type(op) is CheckpointOp:
                continue
            owner = op.owner
            if owner.journal_id < 0:
                owner.journal_id, self._next_id = self._next_id, self._next_id + 1
            if owner.journal_id not in self._declared:
                parts.append(jf.control_record(jf.NAME, owner.journal_id, payload=os.path.basename(owner.folder).encode()))
                self._declared.add(owner.journal_id)
                declared.append(owner.journal_id)
            if type(op) is ControlOp:
                parts.append(jf.control_record(op.kind, owner.journal_id, op.ledger_id))
                continue
            for ledger_id, kept in op.fence:
                parts.append(jf.control_record(jf.SEAL, owner.journal_id, ledger_id, kept))
            seg_parts = []
            topic, ledger_id = owner.journal_id, op.ledger_id
            for entry_id, data in enumerate(op.datas, op.first_entry):
                head = record_header(len(data), record_crc(data))
                parts += (entry_record(topic, ledger_id, entry_id, head), head, data)
                seg_parts += (head, data)
            op.seg_bytes = b"".join(seg_parts)
        return parts

    def _append(self, parts: list) -> None:
        """Write parts at the end of the current file, synced when journalSyncData."""
        if len(parts) > segment.IOV_MAX:  # one system call: joining is cheaper than several
            parts = [b"".join(parts)]
        inline = segment.syncs_inline(parts, self._sync)
        started = time.perf_counter()
        segment.pwritev_all(self._fd, parts, self._offset, dsync=inline)
        if self._sync and not inline:
            os.fdatasync(self._fd)
        self._write_seconds += (time.perf_counter() - started - self._write_seconds) / 8
        self._offset += sum(map(len, parts))

    def _fill(self) -> None:
        """Thread side: a step of the run of zeros; the next one ZERO_STEP_PAUSE_SECONDS later while
        the records have more than a quarter of a run below the zeros, else at once (the groups
        handed meanwhile are written first); once the run is over the loop may write below it."""
        run = self._zero_step()
        if run is None:  # paced only while the records are far below the zeros, never behind them
            far = self._allocated - self._offset > self._prealloc_bytes // 4
            self._next_step_at = time.monotonic() + (ZERO_STEP_PAUSE_SECONDS if far else 0.0)
            return
        try:
            self._loop.call_soon_threadsafe(self._filled, *run)
        except RuntimeError:  # loop closed
            pass

    def _zero_step(self, step: int | None = None) -> tuple[int, int] | None:
        """Write (and sync) the next step bytes (ZERO_STEP_BYTES) of the run of zeros past the
        records, starting a run of journalPreAllocSizeMB if none is going on; returns (layout,
        where the zeros end) once the run is over, None while it goes on. Its writes never meet the
        loop's: the loop writes below _allocated, which is never past _zeroed_to, and the file is
        not replaced or cut during a step (the lock; a run whose file was is dropped). A failure
        (a full disk) ends the run where the zeros got to. No run starts that would leave the file
        system less than ROOM_KEPT_BYTES: zeros must never take the room the segments need to
        catch up with the journal (after a full disk)."""
        with self._file_lock:
            start = max(self._zeroed_to, self._offset)
            if self._run_to is None or self._run_to[0] != self._layout:
                end = min(start + self._prealloc_bytes, self._max_file_bytes)
                if end <= start or _room(self._fd) < end - start + ROOM_KEPT_BYTES:
                    self._run_to = None
                    return self._layout, start
                self._run_to = (self._layout, end)
            layout, end = self._run_to
            step_end = min(start + (step or ZERO_STEP_BYTES), end)
            if step_end <= start:  # the thread's records went past the run
                self._run_to = None
                return layout, start
            try:
                jf.write_zeros(self._fd, start, step_end - start, self._sync)
            except OSError as exc:
                log.warning("journal %s: cannot write zeros ahead of the records: %s", self.folder, exc)
                self._run_to = None
                return layout, start
            self._zeroed_to = step_end
            if step_end < end:
                return None
            self._run_to = None
            return layout, end

    def _filled(self, layout: int, end: int) -> None:
        self._filling = False
        if layout != self._layout:
            return
        if end > self._allocated:
            self._allocated = end
        else:  # no room (or the file's end): the records go on past the zeros for half a run
            self._fill_after = self._offset + self._prealloc_bytes // 2

    def _failed(self, ops: list, exc: OSError, handed: int) -> None:
        """Fail this group; cut the file back, or retire it. (Groups queued behind it hold no
        entry of its ledgers: a ledger has one operation in flight at a time.)"""
        self.errors += 1
        fenced = not (exc.errno in ROOM_ERRORS and self._cut_back())
        log.error("journal %s: writing %d operations failed (%s); %s", self.folder, len(ops), exc,
                  "moving to a new journal file and new ledgers" if fenced else "cut back to the last record")
        if fenced:
            self._rotate()
        self._tell(GroupReport(ops, exc, fenced, handed))

    def _cut_back(self) -> bool:
        """Truncate the file to its last good record; False when even that fails."""
        try:
            with self._file_lock:
                os.ftruncate(self._fd, self._offset)  # the zeros ahead go too
                self._new_layout(self._offset)
            return True
        except OSError as exc:
            log.error("journal %s: cannot cut the failed write off: %s", self.folder, exc)
            return False

    def _rotate(self) -> None:
        """Continue in a new file; on failure stay on this one (the next group fails again)."""
        try:
            fd = jf.create_file(self.folder, self._seq + 1)
        except OSError as exc:
            log.error("journal %s: cannot create journal file %d: %s", self.folder, self._seq + 1, exc)
            return
        with self._file_lock:
            os.close(self._fd)
            self._fd, self._seq, self._offset = fd, self._seq + 1, jf.FILE_HEADER.size
            self._new_layout(self._offset)
        self._declared.clear()
        log.info("journal %s: now writing file %d", self.folder, self._seq)

    def _open_file(self, seq: int) -> None:
        self._fd = jf.create_file(self.folder, seq)
        self._seq, self._offset = seq, jf.FILE_HEADER.size
        self._new_layout(self._offset)

    def _new_layout(self, end: int) -> None:
        """The file was replaced or cut at end: no zeros past it any more."""
        self._layout += 1
        self._allocated = self._zeroed_to = end
        self._fill_after = 0

    def _tell(self, report: GroupReport) -> None:
        if not report.handed:  # written on the loop: reported at once
            self._report(report)
            return
        try:
            self._loop.call_soon_threadsafe(self._reported, report)
        except RuntimeError:  # loop closed: nobody is waiting any more
            pass

    def _reported(self, report: GroupReport) -> None:
        self._handed -= report.handed
        self._report(report)

    def delete_files_before(self, seq: int) -> None:
        """Remove the journal files older than seq (the checkpoint passed them). Any thread:
        the journal only ever writes its current file."""
        for old in jf.list_files(self.folder):
            if old >= min(seq, self._seq):
                break
            try:
                os.unlink(jf.file_path(self.folder, old))
            except FileNotFoundError:
                pass


def _sizes(ops: list) -> tuple[int, int]:
    """(entry bytes, the most bytes the group's records can take in the file)."""
    entry_bytes = most = 0
    for op in ops:
        if type(op) is AppendOp:
            entry_bytes += op.nbytes
            most += op.nbytes + len(op.datas) * _ENTRY_OVERHEAD + _NAME_RECORD_MAX + len(op.fence) * jf.RECORD.size
        elif type(op) is ControlOp:
            most += jf.RECORD.size + _NAME_RECORD_MAX
    return entry_bytes, most


def _room(fd: int) -> int:
    """Bytes an unprivileged writer may still take on fd's file system."""
    st = os.fstatvfs(fd)
    return st.f_bavail * st.f_frsize
