"""The public Producer: one PartitionProducer per partition (or one for a plain topic) behind the
API of pulsar.Producer, with coroutines.

send() waits for the receipt and returns the MessageId; send_async() returns, once the message is
queued, an asyncio.Future of the MessageId (and calls callback(exception_or_None, message_id) if
given) so many sends can be in flight. Partitions are chosen by client.producer.router.
"""
from __future__ import annotations

import asyncio
import datetime
import logging
import time
from typing import TYPE_CHECKING, Callable

from client.exceptions import AlreadyClosed
from client.handler import start_all
from client.message_id import MessageId
from client.options import PartitionsRoutingMode
from client.producer.batch import PendingMessage
from client.producer.partition_producer import PartitionProducer, ProducerConfig
from client.producer.router import Router
from client.topic_name import partition_name

if TYPE_CHECKING:
    from client.client import Client

log = logging.getLogger(__name__)


def _millis(value) -> int:
    """timedelta or milliseconds -> int milliseconds."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


class Producer:
    """topic: fully qualified name; num_partitions: 0 for a non-partitioned topic."""

    def __init__(self, client: "Client", topic: str, conf: ProducerConfig, num_partitions: int,
                 routing_mode: PartitionsRoutingMode):
        self._client = client
        self._topic = topic
        self._conf = conf
        self._num_partitions = num_partitions
        if num_partitions:
            self._impls = [PartitionProducer(client, partition_name(topic, i), conf, i) for i in range(num_partitions)]
            self._router = Router(routing_mode, num_partitions, conf.batching_enabled,
                                  conf.batching_max_messages, conf.batching_max_publish_delay_ms)
        else:
            self._impls = [PartitionProducer(client, topic, conf)]
            self._router = None
        self._closed = False

    async def _start(self) -> "Producer":
        await start_all(self._impls)
        return self

    # ---- the official API ------------------------------------------------------------------
    def topic(self) -> str:
        return self._topic

    def producer_name(self) -> str:
        return self._impls[0].name or ""

    def last_sequence_id(self) -> int:
        return max(impl.last_sequence_id for impl in self._impls)

    def is_connected(self) -> bool:
        return not self._closed and all(impl.cnx is not None for impl in self._impls)

    async def send(self, content, properties: dict[str, str] | None = None, partition_key: str | None = None,
                   ordering_key: str | None = None, sequence_id: int | None = None,
                   replication_clusters: list[str] | None = None, disable_replication: bool = False,
                   event_timestamp: int | None = None, deliver_at: int | None = None,
                   deliver_after: datetime.timedelta | int | None = None) -> MessageId:
        """Publish one message and return its MessageId once the broker has stored it.

        Raises Timeout (send_timeout_millis), MessageTooBig, ProducerQueueIsFull, AlreadyClosed.
        """
        future = await self.send_async(
            content, None, properties=properties, partition_key=partition_key, ordering_key=ordering_key,
            sequence_id=sequence_id, replication_clusters=replication_clusters,
            disable_replication=disable_replication, event_timestamp=event_timestamp,
            deliver_at=deliver_at, deliver_after=deliver_after)
        return await future

    async def send_async(self, content, callback: Callable | None = None, properties: dict[str, str] | None = None,
                         partition_key: str | None = None, ordering_key: str | None = None,
                         sequence_id: int | None = None, replication_clusters: list[str] | None = None,
                         disable_replication: bool = False, event_timestamp: int | None = None,
                         deliver_at: int | None = None,
                         deliver_after: datetime.timedelta | int | None = None) -> asyncio.Future:
        """Queue one message; returns a Future of its MessageId (see send for the errors)."""
        if self._closed:
            raise AlreadyClosed(f"producer on {self._topic} is closed")
        payload = self._conf.schema.encode(content)
        if deliver_after is not None:
            deliver_at = int(time.time() * 1000) + _millis(deliver_after)
        if disable_replication:
            replication_clusters = ["__local__"]
        msg = PendingMessage(
            payload, asyncio.get_running_loop().create_future(), properties=properties,
            partition_key=partition_key, ordering_key=ordering_key, event_time=event_timestamp,
            sequence_id=sequence_id, deliver_at=deliver_at, replication_clusters=replication_clusters,
            callback=callback)
        impl = self._impls[self._router.choose(partition_key)] if self._router else self._impls[0]
        return await impl.send_async(msg)

    async def flush(self) -> None:
        """Send every batched message now and wait for all receipts."""
        await asyncio.gather(*(impl.flush() for impl in self._impls))

    async def close(self) -> None:
        """Flush, then close on the broker; idempotent."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(*(impl.close() for impl in self._impls), return_exceptions=True)
        self._client._forget(self)

    async def __aenter__(self) -> "Producer":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()
