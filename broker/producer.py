"""A producer as the broker sees it: its sends, their in-order SEND_RECEIPTs, its counters.

The C++ client closes the connection when receipts arrive out of order, so each producer keeps
its publishes in a FIFO and a receipt leaves only when every earlier publish has been answered.
It is the one door to its connection: it counts each send in the connection's back-pressure
(publish_started / publish_finished) and writes its own receipts and errors there, and the
topic and the access modes call `disconnect` here. Source: Pulsar Producer (pendingPublishAcks,
MessagePublishContext.completed, disconnect); the C++ client's ProducerImpl::ackReceived checks
that each receipt's sequence id is the oldest one pending.
"""
from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minipulsar.broker.errors import BrokerError
from minipulsar.broker.stats_rates import RateMeter
from minipulsar.broker.stats_shapes import PUBLISHER_ZERO, average_size
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Durability, Position

if TYPE_CHECKING:
    from minipulsar.broker.connection_protocols import ProducerConnection
    from minipulsar.broker.specs import ProducerSpec
    from minipulsar.broker.topic import PersistentTopic

log = logging.getLogger(__name__)


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
    durable: Durability | None = None  # its share of a group commit (shared by the share's appends)


class Producer:
    """spec.producer_id: the client's id on its connection; name: unique per topic while connected."""

    # Slots: with a thousand topics every group's report answers a thousand producers, few of them
    # still in the processor's caches (storage.ledger.ManagedLedger's __slots__ says why).
    __slots__ = ("topic", "connection", "producer_id", "name", "access_mode", "metadata", "requested_topic_epoch",
                 "topic_epoch", "ready", "last_sequence_id", "schema_version", "closed", "connected_since",
                 "msg_in", "bytes_in", "rates", "_pending", "_watched", "_on_durable")

    def __init__(self, topic: "PersistentTopic", connection: "ProducerConnection", spec: ProducerSpec, name: str):
        self.topic = topic
        self.connection = connection
        self.producer_id = spec.producer_id
        self.name = name
        self.access_mode = spec.access_mode
        self.metadata = dict(spec.metadata)
        # PIP-68: the topic_epoch the client sent (a reconnect), and the one the broker answered.
        self.requested_topic_epoch = spec.topic_epoch
        self.topic_epoch: int | None = None
        self.ready = True  # False while a WaitForExclusive producer is queued
        self.last_sequence_id = -1  # PRODUCER_SUCCESS.last_sequence_id (deduplication)
        self.schema_version: bytes | None = None  # PRODUCER_SUCCESS.schema_version
        self.closed = False
        self.connected_since = time.time()
        self.msg_in = 0  # messages and bytes made durable (Pulsar's msgInCounter / bytesInCounter)
        self.bytes_in = 0
        self.rates = RateMeter(2)  # msg/s, bytes/s of msg_in, bytes_in (the broker's stats timer)
        self._pending: collections.deque[PendingPublish] = collections.deque()
        self._watched: Durability | None = None  # the last group-commit share with our callback
        # _answer_ready bound once: a bound method made per share would be freed cold at its report.
        # (A cycle through this producer: the collector frees a closed one.)
        self._on_durable = self._answer_ready

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
        """Append data to the topic; the receipt or error goes to the connection in send order."""
        pending = PendingPublish(sequence_id, highest_sequence_id, num_messages, len(data))
        self._pending.append(pending)
        self.connection.publish_started(pending.size)
        try:
            pending.position, pending.durable = self.topic.append(data, self.name, sequence_id, highest_sequence_id)
        except Exception as exc:  # the ledger is closed: answer in order like any failure
            pending.done, pending.error = True, exc
            self._answer_ready()
            return
        if pending.durable.settled:  # a duplicate, or a non-persistent topic: answer now, in order
            self._answer_ready()
        # One done-callback per group commit share, not one per SEND: its appends share the
        # Durability, whose callbacks run in the turn that hears the journal's report.
        elif pending.durable is not self._watched:
            self._watched = pending.durable
            pending.durable.add_done_callback(self._on_durable)

    def _answer_ready(self, _durable: Durability | None = None) -> None:
        """Answer, oldest first, every publish whose entry is durable or failed; stop at the first
        one still being written (receipts must leave in send order). Also the done-callback of a
        group commit share (_durable: that share)."""
        if _durable is self._watched:  # it holds its share's entries: let go of them with it
            self._watched = None
        pending = self._pending
        while pending:
            head = pending[0]
            if not head.done:
                durable = head.durable
                if not durable.settled:
                    return
                head.done, head.error = True, durable.error
                if head.error is None:
                    self.msg_in += head.num_messages
                    self.bytes_in += head.size
            pending.popleft()
            self._answer(head)

    def _answer(self, publish: PendingPublish) -> None:
        """SEND_RECEIPT with the entry's position ((-1, -1) for a duplicate of unknown position)
        or SEND_ERROR with the failure's ServerError (PersistenceError for a storage failure)."""
        connection = self.connection
        connection.publish_finished(publish.size)
        error = publish.error
        if error is None:
            connection.send_receipt(self.producer_id, publish.sequence_id, publish.highest_sequence_id,
                                    publish.position)
            return
        log.error("%s: publish failed: %s", self, error)
        code = error.server_error if isinstance(error, BrokerError) else api.PersistenceError
        connection.send_send_error(self.producer_id, publish.sequence_id, code, f"failed to persist entry: {error}")

    def stats(self) -> dict:
        """Pulsar PublisherStats (broker/stats_shapes.py); msgInCounter and bytesInCounter are ours."""
        rate, throughput = self.rates.rates
        return {
            **PUBLISHER_ZERO,
            "accessMode": ACCESS_MODE_NAMES.get(self.access_mode, str(self.access_mode)),
            "msgRateIn": rate,
            "msgThroughputIn": throughput,
            "averageMsgSize": average_size(throughput, rate),
            "producerId": self.producer_id,
            "producerName": self.name,
            "address": self.address,
            "connectedSince": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.connected_since)),
            "clientVersion": getattr(self.connection, "client_version", ""),
            "metadata": dict(self.metadata),
            "msgInCounter": self.msg_in,
            "bytesInCounter": self.bytes_in,
        }


# ProducerAccessMode values (PulsarApi.proto) -> the names Pulsar's stats show.
ACCESS_MODE_NAMES = {api.Shared: "Shared", api.Exclusive: "Exclusive", api.WaitForExclusive: "WaitForExclusive",
                     api.ExclusiveWithFencing: "ExclusiveWithFencing"}
