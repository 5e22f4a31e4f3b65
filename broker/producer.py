"""A producer as the broker sees it, and the in-order delivery of its SEND_RECEIPTs.

The C++ client closes the connection when receipts arrive out of order, so each producer keeps
its publishes in a FIFO and a receipt leaves only when every earlier publish has been answered.
It is the one door to its connection: the topic and the access modes call `disconnect` here.
Source: Pulsar Producer (pendingPublishAcks, disconnect); the C++ client's ProducerImpl::ackReceived
checks that each receipt's sequence id is the oldest one pending.
"""
from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from minipulsar.storage import Position

if TYPE_CHECKING:
    from minipulsar.broker.connection import ServerConnection
    from minipulsar.broker.topic import PersistentTopic


@dataclass(slots=True)
class PendingPublish:
    """One SEND waiting for its entry to be durable: position is known at append time, done and
    error when the entry is on disk or failed."""

    sequence_id: int
    highest_sequence_id: int
    num_messages: int
    size: int
    done: bool = False
    position: Position | None = None
    error: BaseException | None = None
    durable: asyncio.Future | None = None  # the group commit's future (shared by its appends)


def _failure(future: asyncio.Future) -> BaseException | None:
    if future.cancelled():
        return asyncio.CancelledError()
    return future.exception()


class Producer:
    """producer_id: the client's id on its connection; name: unique per topic while connected."""

    def __init__(
        self,
        topic: "PersistentTopic",
        connection: "ServerConnection",
        producer_id: int,
        name: str,
        access_mode: int,
        epoch: int,
        user_provided_name: bool,
        metadata: dict[str, str] | None = None,
    ):
        self.topic = topic
        self.connection = connection
        self.producer_id = producer_id
        self.name = name
        self.access_mode = access_mode
        self.epoch = epoch
        self.user_provided_name = user_provided_name
        self.metadata = metadata or {}
        # PIP-68: the topic_epoch the client sent (a reconnect), and the one the broker answered.
        self.requested_topic_epoch: int | None = None
        self.topic_epoch: int | None = None
        self.ready = True  # False while a WaitForExclusive producer is queued
        self.last_sequence_id = -1  # PRODUCER_SUCCESS.last_sequence_id (deduplication)
        self.schema_version: bytes | None = None  # PRODUCER_SUCCESS.schema_version
        self.closed = False
        self.connected_since = time.time()
        self.msg_in = 0
        self.bytes_in = 0
        # Called with each publish, in send order, once it is durable or failed (the receipt).
        self.on_complete: Callable[[PendingPublish], None] = lambda publish: None
        self._pending: collections.deque[PendingPublish] = collections.deque()
        self._watched: asyncio.Future | None = None  # the last group-commit future with our callback

    def __repr__(self) -> str:
        return f"Producer({self.name!r}, id={self.producer_id}, topic={self.topic.name})"

    @property
    def address(self) -> str:
        return self.connection.peer_address

    def disconnect(self) -> None:
        """The broker closes this producer (CLOSE_PRODUCER); the client reconnects by itself."""
        self.connection.close_producer_by_broker(self.producer_id)

    def close(self) -> None:
        """The client closed it, or its connection went: leave the topic."""
        if not self.closed:
            self.closed = True
            self.topic.remove_producer(self)

    def publish(self, sequence_id: int, highest_sequence_id: int, num_messages: int, data: bytes) -> None:
        """Append data to the topic; on_complete(publish) runs for each publish in send order."""
        pending = PendingPublish(sequence_id, highest_sequence_id, num_messages, len(data))
        self._pending.append(pending)
        try:
            pending.position, pending.durable = self.topic.append(data, self.name, sequence_id, highest_sequence_id)
        except Exception as exc:  # the ledger is closed: answer in order like any failure
            pending.done, pending.error = True, exc
            self._answer_ready()
            return
        if pending.durable.done():  # a duplicate, or a non-persistent topic: answer now, in order
            self._answer_ready()
        # One done-callback per group commit, not one per SEND: its appends share the future.
        elif pending.durable is not self._watched:
            self._watched = pending.durable
            pending.durable.add_done_callback(self._durable)

    def _durable(self, _future: asyncio.Future) -> None:
        self._answer_ready()

    def _answer_ready(self) -> None:
        """Answer, oldest first, every publish whose entry is durable or failed; stop at the first
        one still being written (receipts must leave in send order)."""
        pending = self._pending
        while pending:
            head = pending[0]
            if not head.done:
                if not head.durable.done():
                    return
                self._settle(head, _failure(head.durable))
            pending.popleft()
            self.on_complete(head)

    def _settle(self, pending: PendingPublish, error: BaseException | None) -> None:
        pending.done = True
        pending.error = error
        if error is None:
            self.msg_in += pending.num_messages
            self.bytes_in += pending.size
            self.topic.msg_in_counter += pending.num_messages
            self.topic.bytes_in_counter += pending.size

    def stats(self) -> dict:
        return {
            "producerName": self.name,
            "producerId": self.producer_id,
            "msgInCounter": self.msg_in,
            "bytesInCounter": self.bytes_in,
            "address": self.address,
            "connectedSince": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.connected_since)),
            "accessMode": self.access_mode,
            "metadata": dict(self.metadata),
        }
