"""The publish buffer: bytes of SENDs the broker holds until they are durable, across all
connections (maxMessagePublishBufferSizeInMB).

When producers outrun the disk, SENDs pile up in memory waiting for their group commit. Past the
limit every connection stops reading from its socket, so clients queue in their own memory and TCP
pushes back; once the buffer drains below half the limit they all read again. A connection that
opens while the buffer is full starts paused. Each connection's own cap on publishes in flight
(maxPendingPublishRequestsPerConnection) still applies beside this one.
Source: Pulsar ServerCnx.startSendOperation / completedSendOperation (pausedConnections).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from minipulsar.broker.connection import ServerConnection

log = logging.getLogger(__name__)

READ_PAUSE_REASON = "publish buffer"


class PublishBuffer:
    """limit_bytes <= 0: no limit. connections: the broker's live set of ServerConnection."""

    def __init__(self, limit_bytes: int, connections: Iterable["ServerConnection"]):
        self.limit = limit_bytes
        self.pending_bytes = 0
        self.full = False
        self.times_full = 0  # how often the limit was reached (stats)
        self._connections = connections

    def add(self, size: int) -> None:
        """A SEND of size bytes arrived; may pause reading on every connection."""
        self.pending_bytes += size
        if not self.full and 0 < self.limit <= self.pending_bytes:
            self.full = True
            self.times_full += 1
            log.warning("publish buffer full (%d bytes pending, maxMessagePublishBufferSizeInMB=%d): "
                        "pausing reads on %d connections", self.pending_bytes, self.limit >> 20,
                        len(self._connections))
            for connection in list(self._connections):
                connection.pause_reading(READ_PAUSE_REASON)

    def release(self, size: int) -> None:
        """A SEND of size bytes was answered (stored or failed); reads resume below half the limit."""
        self.pending_bytes -= size
        if self.full and self.pending_bytes < self.limit // 2:
            self.full = False
            log.info("publish buffer below half (%d bytes pending): resuming reads", self.pending_bytes)
            for connection in list(self._connections):
                connection.resume_reading(READ_PAUSE_REASON)
