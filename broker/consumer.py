"""A consumer as the broker sees it: one client consumer handle on one subscription.

It holds the permits the client granted with FLOW (counted in messages: a batch of N costs N,
and permits may go below zero when a batch is larger than what was left, as in Pulsar) and the
pending acks: entries sent to it and not yet acknowledged, so they can be redelivered when it
closes or asks for redelivery. Source: Pulsar Consumer.java (pendingAcks, messagePermits).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Iterable

from sortedcontainers import SortedDict

from storage import Entry, Position

if TYPE_CHECKING:
    from broker.connection import ServerConnection
    from broker.subscription import Subscription


class Consumer:
    """consumer_id: the client's id on its connection; priority_level: lower is preferred (Pulsar)."""

    def __init__(
        self,
        subscription: "Subscription",
        connection: "ServerConnection",
        consumer_id: int,
        name: str,
        sub_type: int,
        priority_level: int = 0,
        epoch: int | None = None,
        metadata: dict[str, str] | None = None,
    ):
        self.subscription = subscription
        self.connection = connection
        self.consumer_id = consumer_id
        self.name = name
        self.sub_type = sub_type
        self.priority_level = priority_level
        self.epoch = epoch
        self.metadata = metadata or {}
        self.permits = 0
        self.pending_acks: SortedDict = SortedDict()  # Position -> messages in that entry
        self.closed = False
        self.connected_since = time.time()
        self.msg_out = 0
        self.bytes_out = 0
        self.msg_redelivered = 0

    def __repr__(self) -> str:
        return f"Consumer({self.name!r}, id={self.consumer_id}, sub={self.subscription.name!r})"

    @property
    def address(self) -> str:
        return self.connection.peer_address

    @property
    def unacked_messages(self) -> int:
        return sum(self.pending_acks.values())

    def can_receive(self) -> bool:
        """True when the client has permits and its socket is not backed up."""
        return not self.closed and self.permits > 0 and self.connection.is_writable()

    def add_permits(self, permits: int) -> None:
        self.permits += permits

    def send_entries(self, entries: Iterable[tuple[Entry, int]], redelivery_counts: dict[Position, int]) -> None:
        """Write a MESSAGE per (entry, message count); charge permits; remember them as pending acks."""
        for entry, num_messages in entries:
            count = redelivery_counts.get(entry.position, 0)
            self.connection.send_message(self, entry, count)
            self.pending_acks[entry.position] = num_messages
            self.permits -= num_messages
            self.msg_out += num_messages
            self.bytes_out += len(entry.data)
            if count:
                self.msg_redelivered += num_messages

    def remove_pending(self, positions: Iterable[Position]) -> None:
        for position in positions:
            self.pending_acks.pop(position, None)

    def remove_pending_up_to(self, position: Position) -> None:
        """Drop pending acks at or below position (a cumulative ack)."""
        for key in list(self.pending_acks.irange(maximum=position)):
            del self.pending_acks[key]

    def take_pending(self, positions: Iterable[Position] | None = None) -> list[Position]:
        """Remove and return pending positions: those listed that are pending, or all when None."""
        if positions is None:
            taken = list(self.pending_acks.keys())
            self.pending_acks.clear()
            return taken
        taken = [p for p in positions if p in self.pending_acks]
        self.remove_pending(taken)
        return taken

    def stats(self) -> dict:
        """Pulsar ConsumerStats fields (names as in the admin API)."""
        return {
            "consumerName": self.name,
            "availablePermits": self.permits,
            "unackedMessages": self.unacked_messages,
            "msgOutCounter": self.msg_out,
            "bytesOutCounter": self.bytes_out,
            "address": self.address,
            "connectedSince": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.connected_since)),
            "priorityLevel": self.priority_level,
            "metadata": dict(self.metadata),
        }
