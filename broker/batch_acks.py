"""Batch-index acknowledgement (acknowledgmentAtBatchIndexLevelEnabled): partly acked batches.

An ACK whose MessageIdData carries a non-empty ack_set acknowledges only some messages of a batch
entry. The ack_set is a Java BitSet packed into int64 words (bit i = bit i%64 of word i/64) in
which a SET bit means "not yet acknowledged". Per entry the subscription keeps the AND of every
ack_set it received (a cleared bit never comes back); when no bit is left the whole entry is
acknowledged. Entries dispatched again (redelivery, a reconnecting consumer) carry the kept words
as CommandMessage.ack_set, so the client skips the indexes already acknowledged, and the consumer
is charged permits only for the messages still set.
The state is kept in memory (Pulsar persists it with the cursor; a restart here redelivers the
whole batch, which Pulsar also does when the index state is not persisted).
Source: Pulsar PersistentAcknowledgmentsGroupingTracker / ManagedCursorImpl.batchDeletedIndexes,
Consumer.getBatchIndexesAcks.
"""
from __future__ import annotations

from typing import Iterable

from minipulsar.proto.entries import signed_words, unsigned_words
from minipulsar.storage import Position


class BatchAckSets:
    """Position -> ack_set words (unsigned in memory, signed int64 on the wire)."""

    def __init__(self) -> None:
        self._sets: dict[Position, list[int]] = {}

    def __len__(self) -> int:
        return len(self._sets)

    def record(self, position: Position, ack_set: Iterable[int]) -> bool:
        """Merge a partial ack; True when every index of the entry is now acknowledged."""
        words = unsigned_words(ack_set)
        current = self._sets.get(position)
        if current is not None:
            length = max(len(current), len(words))
            current = current + [0] * (length - len(current))
            words = words + [0] * (length - len(words))
            words = [a & b for a, b in zip(current, words)]
        if not any(words):
            self._sets.pop(position, None)
            return True
        self._sets[position] = words
        return False

    def ack_set(self, position: Position) -> list[int] | None:
        """The words for CommandMessage.ack_set (signed int64), None when the entry has no partial ack."""
        words = self._sets.get(position)
        return signed_words(words) if words is not None else None

    def unacked_count(self, position: Position, num_messages: int) -> int:
        """Messages of the entry still unacknowledged (num_messages when it has no partial ack)."""
        words = self._sets.get(position)
        if words is None:
            return num_messages
        return sum(bin(w).count("1") for w in words) or num_messages

    def discard(self, positions: Iterable[Position]) -> None:
        for position in positions:
            self._sets.pop(position, None)

    def discard_up_to(self, position: Position) -> None:
        """Forget entries at or below position (the mark-delete position passed them)."""
        for key in [p for p in self._sets if p <= position]:
            del self._sets[key]

    def clear(self) -> None:
        self._sets.clear()
