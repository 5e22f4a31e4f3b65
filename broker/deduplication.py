"""Message deduplication (brokerDeduplicationEnabled): a SEND whose sequence id is not above the
highest one already seen from the same producer name is answered but not stored again.

Per topic, two maps from producer name to sequence id, as in Pulsar:
  * pushed: the highest sequence id accepted for persisting (in flight included);
  * persisted: the highest sequence id whose entry is durable.
A SEND with sequence_id <= pushed[name] is a duplicate. If the original is durable the SEND gets a
receipt with the original's position when it is the last one of that producer (known), else with
-1:-1 as Pulsar answers; if the original is still being written the duplicate waits for it and gets
its position. The sequence id compared is the SEND's, and max(sequence_id, highest_sequence_id) is
what is remembered (batches report their last id in highest_sequence_id).

Persistence, as Pulsar's MessageDeduplication: a durable cursor named `pulsar.dedup`. Every
`brokerDeduplicationEntriesInterval` entries, on the first entry after
`brokerDeduplicationSnapshotIntervalSeconds` (0 = never by time; Pulsar runs a periodic task, here
the check rides on publishes), and when the topic closes, the persisted map is written
as the cursor's long properties together with a mark-delete at the last durable entry (one atomic
cursor write). On load the map is read back from those properties and the entries after the
mark-delete position are replayed (producer_name, sequence_id, highest_sequence_id of each entry's
metadata), so nothing acknowledged to a producer is forgotten after a crash. When deduplication is
off the cursor is deleted, so it no longer holds back trimming.
PRODUCER_SUCCESS.last_sequence_id carries pushed[name] (or -1). A replicator's producer (name
starting with the replicator prefix) is deduplicated by the original producer name and sequence id
found in each entry's metadata, as Pulsar does.
Source: Pulsar MessageDeduplication (isDuplicate, recoverSequenceIdsMap, takeSnapshot).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable

from minipulsar.broker.entry_info import entry_info
from minipulsar.storage import Durability, ManagedCursor, Position

if TYPE_CHECKING:
    from minipulsar.storage import ManagedLedger

log = logging.getLogger(__name__)

CURSOR_NAME = "pulsar.dedup"  # Pulsar's DEDUPLICATION_CURSOR_NAME
UNKNOWN_POSITION = Position(-1, -1)
_REPLAY_BATCH = 500


class MessageDeduplication:
    """One topic's deduplication state. ledger: the topic's ManagedLedger; entries_interval:
    brokerDeduplicationEntriesInterval (entries between snapshots)."""

    def __init__(self, ledger: "ManagedLedger", entries_interval: int, replicator_prefix: str = "pulsar.repl",
                 snapshot_interval_seconds: float = 120):
        self.ledger = ledger
        self.snapshot_interval_seconds = snapshot_interval_seconds
        self._last_snapshot_at = time.monotonic()
        self.replicator_prefix = replicator_prefix + "."
        self.entries_interval = entries_interval
        self.cursor: ManagedCursor | None = None
        self.pushed: dict[str, int] = {}
        self.persisted: dict[str, int] = {}
        self._last_position: dict[str, tuple[int, Position]] = {}  # name -> (sequence id, position)
        self._in_flight: dict[tuple[str, int], tuple[Position, Durability]] = {}
        self._since_snapshot = 0
        self._last_durable: Position | None = None

    # ---- load --------------------------------------------------------------------------------
    async def load(self) -> None:
        """Open the dedup cursor, read its snapshot and replay the entries after it."""
        self.cursor = await self.ledger.open_cursor(CURSOR_NAME, "latest")
        self.persisted = {name: value for name, value in self.cursor.properties.items()}
        position = self.cursor.mark_delete_position
        replayed = 0
        while True:
            entries = await self.ledger.read_entries(self.ledger.next_valid_position(position), _REPLAY_BATCH)
            if not entries:
                break
            for entry in entries:
                info = entry_info(entry.data)
                metadata = info.metadata
                if metadata is None or info.is_marker:
                    continue
                highest = max(metadata.sequence_id, metadata.highest_sequence_id)
                name = metadata.producer_name
                if highest >= self.persisted.get(name, -1):
                    self.persisted[name] = highest
                    self._last_position[name] = (metadata.sequence_id, entry.position)
                replayed += 1
            position = entries[-1].position
        self.pushed = dict(self.persisted)
        self._since_snapshot = replayed
        if replayed:
            log.info("%s: deduplication replayed %d entries after the snapshot", self.ledger.name, replayed)

    @staticmethod
    async def remove(ledger: "ManagedLedger") -> None:
        """Deduplication is off: drop a cursor left from when it was on (it would hold back trimming)."""
        if CURSOR_NAME in ledger.cursors:
            await ledger.delete_cursor(CURSOR_NAME)

    # ---- publishing --------------------------------------------------------------------------
    def last_sequence_id(self, producer_name: str) -> int:
        """PRODUCER_SUCCESS.last_sequence_id: the highest sequence id seen from producer_name, or -1."""
        return self.pushed.get(producer_name, -1)

    def append(self, producer_name: str, sequence_id: int, highest_sequence_id: int, data: bytes,
               append: Callable[[bytes], tuple[Position, Durability]]) -> tuple[Position, Durability]:
        """append(data) unless the SEND is a duplicate. Returns (position, Durability) as
        PersistentTopic.append does: for a duplicate of an entry still being written, the
        original's; for one already durable, its position when known (else -1:-1) and a settled
        Durability."""
        if producer_name.startswith(self.replicator_prefix):
            metadata = entry_info(data).metadata
            if metadata is not None:
                producer_name, sequence_id = metadata.producer_name, metadata.sequence_id
                highest_sequence_id = metadata.highest_sequence_id
        highest = max(sequence_id, highest_sequence_id)
        last_pushed = self.pushed.get(producer_name)
        if last_pushed is not None and sequence_id <= last_pushed:
            return self._duplicate(producer_name, sequence_id)
        position, durable = append(data)  # raises when the ledger is closed: nothing was pushed
        self.pushed[producer_name] = highest
        key = (producer_name, sequence_id)
        self._in_flight[key] = (position, durable)
        durable.add_done_callback(lambda d: self._durable(d, key, highest, position))
        return position, durable

    def _durable(self, durable: Durability, key: tuple[str, int], highest: int, position: Position) -> None:
        producer_name, sequence_id = key
        if self._in_flight.get(key, (None, None))[1] is durable:
            del self._in_flight[key]
        if durable.error is not None:
            # Not stored: a resend must be accepted again.
            if self.pushed.get(producer_name) == highest:
                self.pushed[producer_name] = self.persisted.get(producer_name, -1)
            return
        if highest >= self.persisted.get(producer_name, -1):
            self.persisted[producer_name] = highest
            self._last_position[producer_name] = (sequence_id, position)
        self._entry_durable(position)

    def _duplicate(self, producer_name: str, sequence_id: int) -> tuple[Position, Durability]:
        in_flight = self._in_flight.get((producer_name, sequence_id))
        if in_flight is not None:
            log.debug("duplicate of in-flight %s/%d: answered when the original is durable", producer_name, sequence_id)
            return in_flight
        last = self._last_position.get(producer_name)
        log.debug("duplicate %s/%d not stored", producer_name, sequence_id)
        done = Durability()
        done.settle()
        if last is not None and last[0] == sequence_id:
            return last[1], done
        return UNKNOWN_POSITION, done

    # ---- snapshots ---------------------------------------------------------------------------
    def _entry_durable(self, position: Position) -> None:
        self._last_durable = position
        self._since_snapshot += 1
        by_time = (self.snapshot_interval_seconds > 0
                   and time.monotonic() - self._last_snapshot_at >= self.snapshot_interval_seconds)
        if self._since_snapshot >= self.entries_interval or by_time:
            self.take_snapshot()

    def take_snapshot(self) -> None:
        """Mark-delete the dedup cursor at the last durable entry with the persisted map as its
        long properties (persisted by the cursor, rate limited; always on close)."""
        if self.cursor is None:
            return
        position = self._last_durable or self.cursor.mark_delete_position
        self.cursor.mark_delete(position, dict(self.persisted))
        self._since_snapshot = 0
        self._last_snapshot_at = time.monotonic()
