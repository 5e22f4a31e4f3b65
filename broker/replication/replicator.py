"""The replicator: copies one topic's entries to the same topic in one remote cluster.

State: a durable cursor ``pulsar.repl.<remote>`` on the local topic and a RemoteProducer named
``pulsar.repl.<local>--><remote>`` on the remote broker. The loop reads entries after the cursor's
read position while fewer than replicationProducerQueueSize are in flight, and for each entry:

1. replicated-subscription markers whose replicated_from is this replicator's remote cluster go
   to the topic's snapshot controller (requests are answered, responses and updates applied);
2. an entry whose replicated_from is set is not sent again (no loops, no ping-pong);
3. an entry whose replicate_to is non-empty and does not name the remote is skipped;
4. every other entry is sent with its original metadata plus replicated_from = <local>.

Skipped entries are acknowledged on the cursor at once, sent ones when their receipt comes back,
so the backlog shrinks and nothing is lost: after a restart the cursor re-reads whatever was not
confirmed (a remote that stored an entry but whose receipt was lost gets it again: at-least-once).
While the remote is down or unreachable the producer reconnects with back-off (100 ms doubling to
replicationMaxBackoffIntervalSeconds, 5 s), so catch-up starts at most that long after the remote
is back; a dead connection is found by the client's keep-alive (keepAliveIntervalSeconds) and
dropped at once. The backlog grows meanwhile and is sent in order once the remote is back.
A remote broker that refuses the producer because it is the wrong cluster (see misdirection) is
reported with an ERROR naming the settings to fix, and retried with the same back-off.
Source: Pulsar PersistentReplicator / GeoPersistentReplicator.replicateEntries (PIP-33).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING

from minipulsar.broker.entry_info import entry_info
from minipulsar.broker.replication.markers import REPLICATED_SUBSCRIPTION_MARKERS
from minipulsar.broker.replication.misdirection import (LOG_INTERVAL, is_refusal, refusal_advice,
                                                         replicator_producer_name)
from minipulsar.broker.replication.remote_producer import RemoteProducer
from minipulsar.broker.stats_rates import RateMeter
from minipulsar.broker.stats_shapes import REPLICATOR_ZERO
from minipulsar.client.backoff import Backoff
from minipulsar.client.exceptions import AlreadyClosed
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import build_headers_and_payload, split_headers_and_payload
from minipulsar.storage import Entry, ManagedCursor, StorageError

if TYPE_CHECKING:
    from minipulsar.broker.replication.topic_replication import TopicReplication

log = logging.getLogger(__name__)

READ_BATCH = 100  # entries per cursor read


class Replicator:
    """One (topic, remote cluster) pair. start() opens the cursor and runs the loop; close() stops."""

    def __init__(self, owner: "TopicReplication", remote: str):
        self.owner = owner
        self.topic = owner.topic
        self.remote = remote
        config = owner.config
        self.local = config.cluster_name
        prefix = config.replicator_prefix
        self.cursor_name = f"{prefix}.{remote}"
        self.producer_name = replicator_producer_name(prefix, self.local, remote)
        self.queue_size = config.replication_producer_queue_size
        self.max_backoff = float(config.replication_max_backoff_interval_seconds)
        self._last_refusal_log = -LOG_INTERVAL
        self.cursor: ManagedCursor | None = None
        self.producer: RemoteProducer | None = None
        self._in_flight: collections.deque[tuple[float, int]] = collections.deque()  # (publish ms, seq)
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._closed = False
        self.msg_out = 0
        self.bytes_out = 0
        self.rates = RateMeter(2)  # msg/s, bytes/s of msg_out, bytes_out (the broker's stats timer)

    def __repr__(self) -> str:
        return f"Replicator({self.topic.name} -> {self.remote})"

    @property
    def connected(self) -> bool:
        return self.producer is not None and self.producer.connected

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Open (or create, at the earliest entry) the cursor and start the replication loop."""
        self.cursor = await self.topic.ledger.open_cursor(self.cursor_name, "earliest")
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        """Stop reading and close the producer; unconfirmed entries stay in the cursor's backlog."""
        self._closed = True
        self._wake.set()
        if self.cursor is not None:
            self.cursor.set_inactive()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.producer is not None:
            await self.producer.close_now()

    def wake(self) -> None:
        """New entries were written, or room was made in the producer queue."""
        self._wake.set()

    # ---- the loop --------------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            await self._connect()
            self.cursor.rewind()
            self.cursor.set_active()  # new entries are cached for it (Pulsar: once the replicator has its producer)
            while not self._closed:
                self._wake.clear()
                room = self.queue_size - len(self._in_flight)
                if room <= 0 or not self.cursor.has_more_entries():
                    await self._wake.wait()
                    continue
                try:
                    entries = await self.cursor.read_entries(min(room, READ_BATCH))
                except StorageError:
                    log.exception("%s: read failed; retrying in 1 s", self)
                    await asyncio.sleep(1.0)
                    continue
                for entry in entries:
                    self._replicate(entry)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug must be loud; the topic keeps working without this replicator
            log.exception("%s: replication loop failed", self)

    async def _connect(self) -> None:
        """Create the producer on the remote broker, retrying with back-off until it exists."""
        client = self.owner.clients.client_for(self.remote)
        backoff = Backoff(0.1, self.max_backoff)
        while not self._closed:
            producer = RemoteProducer(client, str(self.topic.name), self.producer_name, self.queue_size,
                                      on_refused=self._refused)
            try:
                await producer.start()
                self.producer = producer
                log.info("%s: connected as %s", self, self.producer_name)
                return
            except Exception as exc:  # noqa: BLE001 - the remote may be down; keep trying
                await producer.close_now()
                delay = backoff.next()
                if is_refusal(exc):
                    self._refused(exc)
                else:
                    log.info("%s: cannot create the remote producer (%s); retrying in %.1f s", self, exc, delay)
                await asyncio.sleep(delay)

    def _refused(self, exc: Exception) -> None:
        """The broker we reached is not the remote cluster: an ERROR naming the settings to fix,
        at most once a minute (the replicator keeps retrying with its back-off meanwhile)."""
        now = time.monotonic()
        level = logging.DEBUG
        if now - self._last_refusal_log >= LOG_INTERVAL:
            level, self._last_refusal_log = logging.ERROR, now
        url = self.owner.clients.peers().get(self.remote, "?")
        log.log(level, "%s: %s; %s; retrying with back-off (at most %g s apart)", self, exc,
                refusal_advice(self.remote, url), self.max_backoff)

    def _replicate(self, entry: Entry) -> None:
        info = entry_info(entry.data)
        metadata = info.metadata
        if metadata is None:
            self.cursor.delete([entry.position])  # unparsable: never dispatched, never replicated
            return
        if metadata.replicated_from:
            if metadata.replicated_from == self.remote and info.marker_type in REPLICATED_SUBSCRIPTION_MARKERS:
                self.owner.received_marker(self.remote, entry, metadata)
            self.cursor.delete([entry.position])
            return
        if metadata.replicate_to and self.remote not in metadata.replicate_to:
            self.cursor.delete([entry.position])
            return
        metadata.replicated_from = self.local
        try:
            payload = entry.data[split_headers_and_payload(entry.data).payload_offset:]
        except FrameError:
            self.cursor.delete([entry.position])
            return
        data = build_headers_and_payload(metadata, bytes(payload))
        try:
            future = self.producer.send_entry(data, info.num_messages)
        except AlreadyClosed:
            return
        token = (metadata.publish_time, id(future))
        self._in_flight.append(token)
        position, size, count = entry.position, len(data), info.num_messages
        future.add_done_callback(lambda f: self._sent(f, token, position, size, count))

    def _sent(self, future: asyncio.Future, token, position, size: int, count: int) -> None:
        try:
            self._in_flight.remove(token)
        except ValueError:
            pass
        if future.cancelled() or future.exception() is not None:
            return  # closing: the entry stays in the backlog
        if self.cursor is not None and not self._closed:
            self.cursor.delete([position])
        self.msg_out += count
        self.bytes_out += size
        self._wake.set()

    # ---- stats -----------------------------------------------------------------------------
    def stats(self) -> dict:
        """Pulsar ReplicatorStats (broker/stats_shapes.py); the inbound fields are filled by the
        topic from the remote's replicator producer. msgOutCounter, bytesOutCounter and
        producerName are ours (msgOutCount and bytesOutCount are Pulsar's names)."""
        rate, throughput = self.rates.rates
        delay = 0.0
        if self._in_flight:
            delay = max(0.0, time.time() - self._in_flight[0][0] / 1000.0)
        connected = self.connected
        stats = {
            **REPLICATOR_ZERO,
            "msgRateOut": rate,
            "msgOutCount": self.msg_out,
            "msgThroughputOut": throughput,
            "bytesOutCount": self.bytes_out,
            "replicationBacklog": self.cursor.number_of_entries_in_backlog() if self.cursor else 0,
            "connected": connected,
            "replicationDelayInSeconds": int(delay),
            "inboundConnection": None,  # None: no such connection (the REST answer leaves it out, as Pulsar)
            "outboundConnection": self.producer.cnx.logical_url if connected else None,
            "msgOutCounter": self.msg_out,
            "bytesOutCounter": self.bytes_out,
            "producerName": self.producer_name,
        }
        return stats
