"""Two-phase compaction: from the current compacted view plus the topic after its horizon, write a
new compacted ledger that keeps the latest message of each key.

The input is a snapshot: the previous compacted ledger (if any), then the topic's entries after the
previous horizon up to the last entry confirmed when compaction starts (the new horizon). Phase one
reads it all and records, per key, the position and batch index of its latest message, or that the
key was deleted. Phase two reads it again and writes, in position order, each entry that holds some
key's latest message: whole when every message in it survives, rebuilt with the losers marked
compacted_out when only some do; entries with no survivor, markers and messages without a key are
left out. Source: Pulsar TwoPhaseCompactor (phaseOne, phaseTwo), PIP-14 / topic compaction.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import AsyncIterator

from minipulsar.broker.compaction.messages import UnreadableEntry, keep_batch_indexes, keyed_messages
from minipulsar.storage import CompactedLedger, CompactedLedgerWriter, ManagedLedger, Position

log = logging.getLogger(__name__)

READ_ENTRIES = 1000  # entries per read, both from the topic and from the old compacted ledger
READ_BYTES = 8 * 1024 * 1024
YIELD_EVERY_BYTES = 256 * 1024  # entry bytes parsed between two turns given back to the event loop


class _Turns:
    """Gives the event loop a turn after every YIELD_EVERY_BYTES parsed: a chunk of big batches
    must not stall every connection's traffic while it is parsed."""

    def __init__(self) -> None:
        self._budget = YIELD_EVERY_BYTES

    async def spent(self, nbytes: int) -> None:
        self._budget -= nbytes
        if self._budget <= 0:
            self._budget = YIELD_EVERY_BYTES
            await asyncio.sleep(0)

Latest = dict[str, "tuple[Position, int] | None"]  # key -> (position, batch index), None = deleted


@dataclass
class CompactionStats:
    """What one compaction read and wrote (entries, messages, bytes of entry data)."""

    entries_read: int = 0
    messages_read: int = 0
    bytes_read: int = 0
    entries_written: int = 0
    keys: int = 0


async def _snapshot(ledger: ManagedLedger, previous: CompactedLedger | None, after: Position,
                    horizon: Position) -> AsyncIterator[list[tuple[Position, bytes]]]:
    """Chunks of (position, data): the old compacted ledger, then topic entries in (after, horizon]."""
    loop = asyncio.get_running_loop()
    if previous is not None:
        index = 0
        while index < len(previous):
            chunk = await loop.run_in_executor(ledger.executor, previous.read, index, READ_ENTRIES, READ_BYTES)
            index += len(chunk)
            yield chunk
    start = ledger.next_valid_position(after)
    while start <= horizon:
        entries = await ledger.read_entries(start, READ_ENTRIES, READ_BYTES)
        chunk = [(e.position, e.data) for e in entries if e.position <= horizon]
        if not chunk:
            return
        yield chunk
        start = ledger.next_valid_position(chunk[-1][0])


def _messages(position: Position, data: bytes) -> list:
    try:
        return keyed_messages(data)
    except UnreadableEntry as exc:
        log.warning("compaction: entry %s left out of the compacted view: %s", position, exc)
        return []


async def phase_one(snapshot: AsyncIterator, stats: CompactionStats) -> Latest:
    """Per key, where its latest message is (None when the latest message deletes it)."""
    latest: Latest = {}
    turns = _Turns()
    async for chunk in snapshot:
        for position, data in chunk:
            stats.entries_read += 1
            stats.bytes_read += len(data)
            messages = _messages(position, data)
            for message in messages:
                if message.key is not None:
                    latest[message.key] = None if message.deletes else (position, message.batch_index)
            stats.messages_read += len(messages)
            await turns.spent(len(data))
    stats.keys = sum(1 for where in latest.values() if where is not None)
    return latest


def _survivors(position: Position, data: bytes, latest: Latest) -> bytes | None:
    """The entry as the compacted view keeps it, or None when none of its messages survives."""
    messages = _messages(position, data)
    kept = {m.batch_index for m in messages if m.key is not None and latest.get(m.key) == (position, m.batch_index)}
    if not kept:
        return None
    if kept == {m.batch_index for m in messages}:
        return data  # every message still in it survives (a batch's compacted_out ones stay so)
    return keep_batch_indexes(data, kept)


async def phase_two(snapshot: AsyncIterator, latest: Latest, writer: CompactedLedgerWriter, executor,
                    stats: CompactionStats) -> None:
    """Write each entry holding a latest message (rebuilt when only some of its messages survive)."""
    loop = asyncio.get_running_loop()
    turns = _Turns()
    async for chunk in snapshot:
        out = []
        for position, data in chunk:
            kept = _survivors(position, data, latest)
            if kept is not None:
                out.append((position, kept))
            await turns.spent(len(data))
        if out:
            await loop.run_in_executor(executor, writer.append, out)
            stats.entries_written += len(out)


async def compact(ledger: ManagedLedger, previous: CompactedLedger | None, previous_horizon: Position,
                  horizon: Position, new_ledger_id: int) -> tuple[CompactedLedger, CompactionStats]:
    """Build compacted ledger new_ledger_id from the snapshot up to horizon; it is durable when this
    returns. Raises OSError / LedgerCorruptionError (the partial file is removed)."""
    stats = CompactionStats()
    latest = await phase_one(_snapshot(ledger, previous, previous_horizon, horizon), stats)
    loop = asyncio.get_running_loop()
    writer = await loop.run_in_executor(
        ledger.executor, CompactedLedgerWriter, ledger.folder, new_ledger_id, ledger.config.sync_data)
    try:
        await phase_two(_snapshot(ledger, previous, previous_horizon, horizon), latest, writer, ledger.executor, stats)
        compacted = await loop.run_in_executor(ledger.executor, writer.finish)
    except BaseException:
        await loop.run_in_executor(ledger.executor, writer.abort)
        raise
    return compacted, stats
