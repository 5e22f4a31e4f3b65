"""The connection as a producer and a consumer see it: the few calls each makes through its door.

A Producer and a Consumer are the one door to their client connection (Pulsar's Producer and
Consumer hold their ServerCnx the same way). These protocols name exactly what they call, so the
topic tree depends on them rather than on ServerConnection, and a test can drive a topic with a
connection of its own that records what would have been written.
"""
from __future__ import annotations

from typing import Protocol

from minipulsar.storage import Entry, Position


class ProducerConnection(Protocol):
    """What a Producer calls on its connection."""

    peer_address: str  # 'host:port' of the client
    client_version: str  # CONNECT.client_version (stats' clientVersion)
    closed: bool

    def publish_started(self, size: int) -> None:
        """A SEND of size bytes is being stored (the connection's and the broker's back-pressure)."""

    def publish_finished(self, size: int) -> None:
        """That SEND was answered."""

    def send_receipt(self, producer_id: int, sequence_id: int, highest_sequence_id: int, position: Position) -> None:
        """SEND_RECEIPT for a durable entry at position ((-1, -1) for a duplicate of unknown position)."""

    def send_send_error(self, producer_id: int, sequence_id: int, error: int, message: str) -> None:
        """SEND_ERROR with a ServerError value."""

    def close_producer_by_broker(self, producer_id: int) -> None:
        """CLOSE_PRODUCER; the client reconnects by itself."""


class ConsumerConnection(Protocol):
    """What a Consumer calls on its connection."""

    peer_address: str
    client_version: str
    closed: bool

    def send_message(self, consumer_id: int, entry: Entry, partition: int, redelivery_count: int,
                     consumer_epoch: int | None, ack_set: list[int] | None) -> None:
        """MESSAGE = command + the stored entry bytes, unchanged."""

    def is_writable(self) -> bool:
        """False while the socket is backed up."""

    def send_active_consumer_change(self, consumer_id: int, active: bool) -> None:
        """ACTIVE_CONSUMER_CHANGE (Failover)."""

    def send_reached_end_of_topic(self, consumer_id: int) -> None:
        """REACHED_END_OF_TOPIC (a terminated topic, all read)."""

    def close_consumer_by_broker(self, consumer_id: int) -> None:
        """CLOSE_CONSUMER; the client reconnects by itself."""
