"""ManagedLedgerFactory: the data dir, its lock, and the open managed ledgers.

Layout::

    <data_dir>/LOCK                       flock'ed while a broker runs
    <data_dir>/journal/                   the write-ahead journal of every ledger (storage.journal)
        000000000003.jnl, CHECKPOINT      journal files, and how far the segments cover them
    <data_dir>/ledgers/<encoded name>/    one folder per managed ledger (topic)
        NAME                              the ledger's real name (folder names are encoded)
        000000000007.seg / .idx           segments and sealed offset indexes
        cursors/<encoded cursor>.cur.0/1  durable cursor state slots

Every directory is created durably (created, then its parent synced) before anything in it is
acknowledged, so a power loss during the first boot keeps what was acknowledged. Starting
replays the journal into the segments (storage.journal_replay), then starts one journal thread
and one ledger storage thread for every ledger the factory opens (constant in the number of
ledgers), and a small pool of readers.

A name like ``public/default/persistent/my-topic`` is percent-encoded into ONE folder
name (``/`` and leading dots are escaped; too-long names get a hash suffix) so no name
can escape the data dir. (Pulsar: ``ManagedLedgerFactoryImpl``.)
"""
from __future__ import annotations

import asyncio
import fcntl
import functools
import hashlib
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

from .config import ManagedLedgerConfig
from .entry_cache import CacheBudget
from .errors import DataDirLockedError, LedgerClosedError, StorageError
from .group_commit import JournalQueue
from .journal import Journal
from .journal_replay import replay
from .ledger import ManagedLedger
from .ledger_storage import LedgerStorage
from .segment import fsync_dir

log = logging.getLogger(__name__)

NAME_FILE = "NAME"
_MAX_FOLDER = 200


def make_dirs_durably(path: str) -> None:
    """os.makedirs, then every directory it created and its parent synced, top down: a created
    directory survives a power loss only once its parent's entry is synced (POSIX)."""
    missing, path = [], os.path.abspath(path)
    while not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        os.makedirs(folder, exist_ok=True)
        fsync_dir(os.path.dirname(folder))


def sync_ancestors(path: str) -> None:
    """fsync every directory from path's parent up to the root: path's own entry, and every
    entry above it, become durable (once, at start: a few system calls)."""
    path = os.path.abspath(path)
    while (parent := os.path.dirname(path)) != path:
        fsync_dir(parent)
        path = parent


def encode_name(name: str) -> str:
    """Map a ledger name to a single safe folder name (reversible through the NAME file)."""
    folder = quote(name, safe="-_~").replace(".", "%2E")
    if len(folder) > _MAX_FOLDER:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        folder = folder[:_MAX_FOLDER - 17] + "~" + digest
    return folder


class ManagedLedgerFactory:
    """Opens and owns the managed ledgers stored under ``data_dir``."""

    def __init__(self, data_dir: str | os.PathLike, config: ManagedLedgerConfig) -> None:
        self.data_dir = os.fspath(data_dir)
        self.config = config
        self._ledgers: dict[str, ManagedLedger] = {}
        self._opening: dict[str, asyncio.Task] = {}
        self._lock_fd: int | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._cache_budget = CacheBudget(config)  # managedLedgerCacheSizeMB across every ledger
        self._journal: Journal | None = None
        self._storage: LedgerStorage | None = None
        self._queue: JournalQueue | None = None

    @property
    def ledgers_dir(self) -> str:
        return os.path.join(self.data_dir, "ledgers")

    @property
    def journal_dir(self) -> str:
        return os.path.join(self.data_dir, "journal")

    async def start(self) -> None:
        """Create the data dir (durably), take its flock, replay the journal and start the
        journal and ledger storage threads. Raises DataDirLockedError if another broker holds
        the data dir, OSError when it cannot be created or the journal not read back."""
        make_dirs_durably(self.ledgers_dir)
        make_dirs_durably(self.journal_dir)
        sync_ancestors(self.data_dir)  # a data dir an operator made just now is not durable yet
        fd = os.open(os.path.join(self.data_dir, "LOCK"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirLockedError(
                f"data dir {self.data_dir} is locked by another running broker (flock on LOCK)") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ml-io")
        loop = asyncio.get_running_loop()
        try:
            replayed = await loop.run_in_executor(self._executor, replay, self.journal_dir, self.ledgers_dir,
                                                  self.config.sync_data)
            self._start_threads(loop, replayed.next_seq)
        except BaseException:
            self._release()
            raise
        log.info("storage started in %s", self.data_dir)

    def _start_threads(self, loop: asyncio.AbstractEventLoop, first_seq: int) -> None:
        config = self.config
        self._journal = Journal(self.journal_dir, config.sync_data, config.journal_max_size_mb << 20,
                                config.journal_pre_alloc_size_mb << 20, loop,
                                report=lambda report: self._queue.report(report),
                                written=lambda ops, mark: self._storage.intake(ops, mark), first_seq=first_seq)
        self._storage = LedgerStorage(self.journal_dir, config.sync_data, config.open_file_limit,
                                      config.flush_interval_ms / 1000, loop,
                                      progress=lambda written: self._queue.progress(written),
                                      delete_journal_before=self._journal.delete_files_before)
        self._queue = JournalQueue(self._journal.submit, self._storage.seal, loop)
        self._journal.start()
        self._storage.start()

    def _release(self) -> None:
        """Stop the pool and let go of the data dir's flock."""
        self._executor.shutdown(wait=True)
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        os.close(self._lock_fd)
        self._lock_fd = None

    def _check_started(self) -> None:
        if self._lock_fd is None:
            raise LedgerClosedError("ManagedLedgerFactory is not started (or already closed)")

    def _folder(self, name: str) -> str:
        if not name or "\0" in name:
            raise StorageError(f"invalid managed ledger name {name!r}")
        return os.path.join(self.ledgers_dir, encode_name(name))

    async def open(self, name: str, retention: tuple[int, int] | None = None) -> ManagedLedger:
        """Open (creating if missing) the managed ledger ``name``; the same instance while open.
        retention: (minutes, MB) overriding the config's for this ledger, in force from the trim
        that opening runs (see ManagedLedger.set_retention)."""
        self._check_started()
        if name in self._ledgers:
            return self._ledgers[name]
        task = self._opening.get(name)
        if task is None:
            # A task of its own, awaited through a shield: a caller that is cancelled (its client
            # hung up) must not abandon the opening half-way while the next caller starts a second
            # one on the same folder.
            task = asyncio.get_running_loop().create_task(self._open_new(name, retention))
            self._opening[name] = task
            task.add_done_callback(functools.partial(self._opened, name))
        return await asyncio.shield(task)

    def _opened(self, name: str, task: asyncio.Task) -> None:
        del self._opening[name]
        if not task.cancelled() and task.exception() is None:  # exception(): retrieved, so never "unretrieved"
            self._ledgers[name] = task.result()

    async def _open_new(self, name: str, retention: tuple[int, int] | None) -> ManagedLedger:
        folder = self._folder(name)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._prepare_folder, folder, name)
        ml = ManagedLedger(name, folder, self.config, self._executor, self._queue, on_closed=self._forget,
                           retention=retention, cache_budget=self._cache_budget)
        await ml._open()
        return ml

    def _prepare_folder(self, folder: str, name: str) -> None:
        """The ledger's folder, its NAME and its cursors folder, durably, before its first entry."""
        if os.path.exists(os.path.join(folder, NAME_FILE)):
            os.makedirs(os.path.join(folder, "cursors"), exist_ok=True)  # folders of older versions
            return
        os.makedirs(os.path.join(folder, "cursors"), exist_ok=True)
        fsync_dir(folder)
        tmp = os.path.join(folder, NAME_FILE + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(name)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(folder, NAME_FILE))
        fsync_dir(folder)
        fsync_dir(self.ledgers_dir)

    def _forget(self, ml: ManagedLedger) -> None:
        if self._ledgers.get(ml.name) is ml:
            del self._ledgers[ml.name]

    def exists(self, name: str) -> bool:
        """True when ledger ``name`` is stored under the data dir."""
        return os.path.exists(os.path.join(self._folder(name), NAME_FILE))

    def list_names(self) -> list[str]:
        """Names of every managed ledger on disk, sorted."""
        names = []
        if not os.path.isdir(self.ledgers_dir):
            return names
        for entry in os.scandir(self.ledgers_dir):
            try:
                with open(os.path.join(entry.path, NAME_FILE), encoding="utf-8") as f:
                    names.append(f.read())
            except (FileNotFoundError, NotADirectoryError):
                continue
        return sorted(names)

    async def delete(self, name: str) -> None:
        """Delete ledger ``name`` (closing it first if open) with all its cursors, after a DELETE
        record in the journal. Raises PersistenceError."""
        self._check_started()
        ml = self._ledgers.get(name)
        if ml is not None:
            await ml.delete()
            return
        await self._queue.delete_folder(self._folder(name))

    async def close(self) -> None:
        """Close every open ledger (persisting cursors) and release the data dir lock."""
        if self._lock_fd is None:
            return
        if self._opening:  # openings in flight finish first, so their ledgers are closed below
            await asyncio.wait(list(self._opening.values()))
        for ml in list(self._ledgers.values()):
            try:
                await ml.close()
            except Exception:
                log.exception("closing ledger %s failed", ml.name)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._journal.close)
        await loop.run_in_executor(self._executor, self._storage.close)  # writes, checkpoints
        self._release()
        log.info("storage in %s closed", self.data_dir)

    async def checkpoint(self) -> None:
        """Write every durable entry into its segment and checkpoint now (storage.ledger_storage);
        what every later read and restart then finds in the segments. Raises PersistenceError."""
        self._check_started()
        for ml in list(self._ledgers.values()):
            await ml.wait_journaled()
        await self._queue.checkpoint()

    def stats(self) -> dict:
        """Storage threads' figures: journal and ledger storage errors, checkpoints, open
        segment descriptors, durable bytes not yet in their segments."""
        return {"journalErrors": self._journal.errors, "ledgerStorageErrors": self._storage.errors,
                "checkpoints": self._storage.checkpoints, "openSegmentFiles": self._storage.open_files,
                "unwrittenBytes": self._queue.unwritten_bytes}
