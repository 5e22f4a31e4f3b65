"""Acknowledgements: grouping, and batches acknowledged one message at a time.

AckGroupingTracker collects individual acks for up to 100 ms or 1000 ids and sends them as one
ACK with a repeated message_id; a cumulative ack keeps only the newest id. BatchAcker remembers,
per batch entry, which indexes are still unacknowledged: the entry is acknowledged when all are,
or — with batch_index_ack_enabled — each time, with ack_set = the bitset of indexes still
unacknowledged (bit set = not yet acked, Java BitSet.toLongArray layout: proto.entries.ack_set_words).
Source: Pulsar's C++ AckGroupingTrackerEnabled (100 ms / 1000) and BatchMessageAcker; batch-index
acknowledgement and ack_set as in PIP-54 (CommandAck.message_id.ack_set).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from minipulsar.client.message_id import MessageId
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.entries import ack_set_words

log = logging.getLogger(__name__)

GROUP_TIME = 0.1  # seconds (ackGroupingTimeMs = 100)
GROUP_MAX = 1000  # ackGroupingMaxSize


class BatchAcker:
    """Per-entry remaining batch indexes. ack(id) -> None (entry not done), or the ack_set words to
    send (empty list = the whole entry is acknowledged)."""

    def __init__(self):
        self._remaining: dict[tuple[int, int], set[int]] = {}

    def ack(self, message_id: MessageId) -> list[int] | None:
        size = message_id.batch_size()
        if message_id.batch_index() < 0 or size <= 1:
            return []
        key = message_id.entry_key()
        remaining = self._remaining.get(key)
        if remaining is None:
            remaining = self._remaining[key] = set(range(size))
        remaining.discard(message_id.batch_index())
        if not remaining:
            del self._remaining[key]
            return []
        return None

    def partial_ack_set(self, message_id: MessageId) -> list[int]:
        return ack_set_words(self._remaining.get(message_id.entry_key(), set()), message_id.batch_size())

    def forget_up_to(self, key: tuple[int, int]) -> None:
        for entry in [k for k in self._remaining if k <= key]:
            del self._remaining[entry]

    def clear(self) -> None:
        self._remaining.clear()


class AckGroupingTracker:
    """send(command) writes an ACK to the current connection (or returns False when there is none)."""

    def __init__(self, consumer_id: int, send: Callable[[api.BaseCommand], bool]):
        self.consumer_id = consumer_id
        self._send = send
        self._individual: dict[tuple[int, int], api.MessageIdData] = {}
        self._cumulative: api.MessageIdData | None = None
        self._timer: asyncio.TimerHandle | None = None

    def add_individual(self, data: api.MessageIdData) -> None:
        self._individual[(data.ledgerId, data.entryId)] = data
        if len(self._individual) >= GROUP_MAX:
            self.flush()
        else:
            self._arm()

    def add_cumulative(self, data: api.MessageIdData) -> None:
        self._cumulative = data
        self._arm()

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(GROUP_TIME, self.flush)

    def flush(self) -> None:
        """Send what is grouped; kept for the next connection if there is none now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._cumulative is not None:
            ack = api.CommandAck(consumer_id=self.consumer_id, ack_type=api.CommandAck.Cumulative)
            ack.message_id.append(self._cumulative)
            if self._send(api.BaseCommand(type=api.BaseCommand.ACK, ack=ack)):
                self._cumulative = None
        if self._individual:
            ack = api.CommandAck(consumer_id=self.consumer_id, ack_type=api.CommandAck.Individual)
            ack.message_id.extend(self._individual.values())
            if self._send(api.BaseCommand(type=api.BaseCommand.ACK, ack=ack)):
                self._individual.clear()

    def clear(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._individual.clear()
        self._cumulative = None
