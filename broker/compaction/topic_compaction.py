"""A persistent topic's compacted view: its compacted ledger and horizon, reads through it, and runs
of the compactor.

The compaction cursor `__compaction` records the state durably: its mark-delete position is the
horizon (the last entry the compacted ledger covers) and its mark-delete property
`CompactedTopicLedger` names the compacted ledger. A compaction writes the new compacted ledger whole,
then moves the cursor (one atomic cursor persist), then deletes the old ledger; at load every
compacted ledger but the one the cursor names is deleted. So a kill -9 at any moment leaves the old
view or the new one, never a mix. While that cursor exists it holds the entries after the horizon
for the next compaction; entries up to it live on in the compacted ledger, whatever retention trims.
Source: Pulsar Compactor (COMPACTION_SUBSCRIPTION, COMPACTED_TOPIC_LEDGER_PROPERTY),
CompactedTopicImpl, PersistentTopic.triggerCompaction / checkCompaction, LongRunningProcessStatus.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from minipulsar.broker.compaction.compactor import CompactionStats, compact
from minipulsar.broker.batch_acks import BatchAckSets
from minipulsar.broker.compaction.messages import UnreadableEntry, keyed_messages, surviving_ack_set
from minipulsar.broker.errors import ConflictError
from minipulsar.storage import CompactedLedger, Entry, ManagedCursor, Position, delete_compacted_ledgers

if TYPE_CHECKING:
    from minipulsar.broker.topic import PersistentTopic

log = logging.getLogger(__name__)

COMPACTION_CURSOR = "__compaction"
LEDGER_PROPERTY = "CompactedTopicLedger"


class TopicCompaction:
    """topic: the PersistentTopic. compacted / horizon: the current view (None before the first
    compaction). status: Pulsar's LongRunningProcessStatus ("NOT_RUN", "RUNNING", "SUCCESS", "ERROR")."""

    def __init__(self, topic: "PersistentTopic"):
        self.topic = topic
        self.ledger = topic.ledger
        self.compacted: CompactedLedger | None = None
        self.horizon: Position | None = None
        self.status = "NOT_RUN"
        self.last_error = ""
        self.last_stats: CompactionStats | None = None
        self._times = {"lastCompactionSucceedTimestamp": 0, "lastCompactionFailedTimestamp": 0,
                       "lastCompactionDurationTimeInMills": 0}
        self._task: asyncio.Task | None = None

    async def load(self) -> None:
        """Open the compacted ledger the compaction cursor names; delete any other (the leftovers
        of a compaction a crash interrupted, or of one whose cursor move did not complete)."""
        cursor = self.ledger.cursors.get(COMPACTION_CURSOR)
        ledger_id = cursor.properties.get(LEDGER_PROPERTY) if cursor is not None else None
        loop = asyncio.get_running_loop()
        removed = await loop.run_in_executor(self.ledger.executor, delete_compacted_ledgers, self.ledger.folder, ledger_id)
        if removed:
            log.info("%s: removed compacted ledgers %s left by an interrupted compaction", self.topic.name, removed)
        if ledger_id is not None:
            self.compacted = await loop.run_in_executor(self.ledger.executor, CompactedLedger.open,
                                                        self.ledger.folder, ledger_id)
            self.horizon = cursor.mark_delete_position

    # ---- running the compactor ---------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def trigger(self) -> asyncio.Task:
        """Start a compaction in the background; raises ConflictError when one is running."""
        if self.running:
            raise ConflictError(f"Compaction already in progress on {self.topic.name}")
        self.status, self.last_error = "RUNNING", ""
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self._task

    async def _run(self) -> None:
        started = time.monotonic()
        try:
            await self._compact()
        except Exception as exc:  # reported through the status, as Pulsar's compaction status
            log.exception("%s: compaction failed", self.topic.name)
            self.status, self.last_error = "ERROR", f"{type(exc).__name__}: {exc}"
            self._times["lastCompactionFailedTimestamp"] = int(time.time() * 1000)
            return
        self.status = "SUCCESS"
        self._times["lastCompactionSucceedTimestamp"] = int(time.time() * 1000)
        self._times["lastCompactionDurationTimeInMills"] = int((time.monotonic() - started) * 1000)

    async def _compact(self) -> None:
        cursor = await self.ledger.open_cursor(COMPACTION_CURSOR, "earliest")
        if self.horizon is not None and not self._entries_after_horizon():
            return  # nothing was written since the last compaction
        horizon = self.ledger.last_confirmed_position
        new_id = self.compacted.ledger_id + 1 if self.compacted is not None else 0
        compacted, stats = await compact(self.ledger, self.compacted, cursor.mark_delete_position, horizon, new_id)
        cursor.mark_delete(horizon, {LEDGER_PROPERTY: new_id})
        await cursor.flush()  # from here on a restart opens the new compacted ledger
        self.compacted, self.horizon, self.last_stats = compacted, horizon, stats
        await asyncio.get_running_loop().run_in_executor(
            self.ledger.executor, delete_compacted_ledgers, self.ledger.folder, new_id)
        log.info("%s: compacted up to %s: %d entries (%d messages, %d keys) -> %d entries in compacted ledger %d",
                 self.topic.name, horizon, stats.entries_read, stats.messages_read, stats.keys,
                 stats.entries_written, new_id)

    def _entries_after_horizon(self) -> bool:
        """Whether the topic holds an entry after the horizon (compared by what follows it: the
        horizon's ledger may be trimmed, and the last confirmed position then points elsewhere)."""
        return self.ledger.next_valid_position(self.horizon) <= self.ledger.last_confirmed_position

    def backlog_bytes(self) -> int:
        """Bytes written after the horizon (all of the topic before the first compaction): what
        brokerServiceCompactionThresholdInBytes is compared with."""
        cursor = self.ledger.cursors.get(COMPACTION_CURSOR)
        if cursor is None:
            return self.ledger.total_size
        return self.ledger.size_between(cursor.mark_delete_position, self.ledger.last_confirmed_position)

    def check_threshold(self, threshold_bytes: int) -> bool:
        """Start a compaction when the backlog passed threshold_bytes (0 = never); True if started."""
        if threshold_bytes <= 0 or self.running or self.backlog_bytes() <= threshold_bytes:
            return False
        self.trigger()
        return True

    async def close(self) -> None:
        """Stop a running compaction (its partial ledger is removed; the view stays the old one)."""
        if self.running:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    # ---- reading through the view ------------------------------------------------------
    def has_entries(self) -> bool:
        """A compacted view exists and holds at least one entry."""
        return self.compacted is not None and len(self.compacted) > 0

    async def read_entries(self, cursor: ManagedCursor, max_entries: int, max_bytes: int,
                           start: Position | None, batch_acks: BatchAckSets) -> tuple[list[Entry], Position | None]:
        """For a read_compacted consumer: compacted entries from the cursor's read position up to the
        horizon, with their original positions, then the topic after the horizon; the cursor's read
        position moves past what is returned. start, when given, is where to go on in the
        compacted ledger whatever the cursor says (a subscription that began at the earliest
        position, whose cursor cannot point into trimmed ledgers). Returns (entries, the start for
        the next read: None once the compacted ledger is done). A batch with compacted_out messages
        has them recorded in batch_acks as acknowledged, so its MESSAGE carries an ack_set that
        hides them from every client."""
        compacted, horizon = self.compacted, self.horizon
        if compacted is None or (start is None and cursor.read_position > horizon):
            return await cursor.read_entries(max_entries, max_bytes), None
        first = compacted.index_at_or_after(start if start is not None else cursor.read_position)
        chunk = await asyncio.get_running_loop().run_in_executor(
            self.ledger.executor, compacted.read, first, max_entries, max_bytes)
        done = first + len(chunk) >= len(compacted)
        cursor.seek(self.ledger.next_valid_position(horizon if done else chunk[-1][0]))
        entries = [Entry(position, data) for position, data in chunk
                   if start is not None or not cursor.is_deleted(position)]
        for entry in entries:
            words = surviving_ack_set(entry.data)
            if words is not None:
                batch_acks.record(entry.position, words)
        following = None if done or start is None else Position(chunk[-1][0].ledger_id, chunk[-1][0].entry_id + 1)
        return entries, following

    async def last_message_id(self) -> tuple[Position, int | None] | None:
        """What a read_compacted consumer is told is last when the topic holds nothing past the
        horizon: the compacted ledger's last entry (with its last surviving batch index), or None
        to answer from the topic as usual."""
        compacted = self.compacted
        if compacted is None or self._entries_after_horizon():
            return None
        if not len(compacted):
            return Position(self.ledger.current_ledger_id, -1), None
        loop = asyncio.get_running_loop()
        [(position, data)] = await loop.run_in_executor(self.ledger.executor, compacted.read, len(compacted) - 1, 1, 1)
        try:
            indexes = [m.batch_index for m in keyed_messages(data)]
        except UnreadableEntry:
            indexes = [-1]
        last = max(indexes, default=-1)
        return position, (last if last >= 0 else None)

    # ---- stats ---------------------------------------------------------------------------
    def stats(self) -> dict:
        """Pulsar CompactionStats of the topic stats (lastCompactionRemovedEventCount, timestamps)."""
        removed = 0
        if self.last_stats is not None:
            removed = self.last_stats.messages_read - self.last_stats.keys
        return {"lastCompactionRemovedEventCount": removed, **self._times}

    def internal_stats(self) -> dict:
        """PersistentTopicInternalStats.compactedLedger: the compacted ledger's id, entries, size."""
        if self.compacted is None:
            return {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False, "underReplicated": False}
        return {"ledgerId": self.compacted.ledger_id, "entries": len(self.compacted), "size": self.compacted.size,
                "offloaded": False, "underReplicated": False}

    def status_json(self) -> dict:
        """GET .../compaction: Pulsar's LongRunningProcessStatus."""
        return {"status": self.status, "lastError": self.last_error}
