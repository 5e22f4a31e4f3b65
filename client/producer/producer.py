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

from minipulsar.client.exceptions import AlreadyClosed
from minipulsar.client.handler import start_all
from minipulsar.client.message_id import MessageId
from minipulsar.client.options import PartitionsRoutingMode
from minipulsar.client.producer.batch import PendingMessage
from minipulsar.client.producer.partition_producer import PartitionProducer, ProducerConfig
from minipulsar.client.producer.router import Router
from minipulsar.client.topic_name import partition_name

if TYPE_CHECKING:
    from minipulsar.client.client import Client

log = logging.getLogger(__name__)


def _millis(value) -> int:
    """timedelta or milliseconds -> int milliseconds."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


class Producer:
    """A producer (pulsar.Producer with coroutines); made by Client.create_producer, not directly.

    Arguments:
        client (Client): the client that owns it.
        topic (str): fully qualified topic name.
        conf (ProducerConfig): the create_producer options.
        num_partitions (int): partitions of the topic; 0 for a non-partitioned topic.
        routing_mode (PartitionsRoutingMode): partition choice for messages without a key.
    """

    def __init__(self, client: "Client", topic: str, conf: ProducerConfig, num_partitions: int,
                 routing_mode: PartitionsRoutingMode):
        self._client = client
        self._topic = topic
        self._conf = conf
        if num_partitions:
            self._impls = [PartitionProducer(client, partition_name(topic, i), conf, i) for i in range(num_partitions)]
            self._router = Router(routing_mode, num_partitions, conf.batching_enabled,
                                  conf.batching_max_messages, conf.batching_max_publish_delay_ms, conf.hashing_scheme)
        else:
            self._impls = [PartitionProducer(client, topic, conf)]
            self._router = None
        self._closed = False

    async def _start(self) -> "Producer":
        await start_all(self._impls)
        return self

    # ---- the official API ------------------------------------------------------------------
    def topic(self) -> str:
        """The fully qualified topic name."""
        return self._topic

    def producer_name(self) -> str:
        """The producer name (the broker's choice unless producer_name was given)."""
        return self._impls[0].name or ""

    def last_sequence_id(self) -> int:
        """The highest sequence id the broker has confirmed (-1 before the first receipt)."""
        return max(impl.last_sequence_id for impl in self._impls)

    def is_connected(self) -> bool:
        """True when open and every partition producer has a connection."""
        return not self._closed and all(impl.cnx is not None for impl in self._impls)

    async def send(self, content, properties: dict[str, str] | None = None, partition_key: str | None = None,
                   ordering_key: str | None = None, sequence_id: int | None = None,
                   replication_clusters: list[str] | None = None, disable_replication: bool = False,
                   event_timestamp: int | None = None, deliver_at: int | None = None,
                   deliver_after: datetime.timedelta | int | None = None) -> MessageId:
        """Publish one message and return its MessageId once the broker has stored it.

        Arguments:
            content (object): the value, encoded by the producer's schema (bytes for BytesSchema,
                str for StringSchema). No default.
            properties (dict[str, str] | None): message properties. Default: None.
            partition_key (str | None): the key; picks the partition of a partitioned topic and the
                consumer on Key_Shared. Default: None.
            ordering_key (str | bytes | None): the key Key_Shared dispatch uses before
                partition_key. Default: None.
            sequence_id (int | None): the message's sequence id. Default: None (the next one).
            replication_clusters (list[str] | None): clusters to replicate to. Default: None (all).
            disable_replication (bool): do not replicate this message. Default: False.
            event_timestamp (int | None): milliseconds since the epoch. Default: None (unset).
            deliver_at (int | None): milliseconds since the epoch; delay delivery until then (the
                message is sent outside any batch). Default: None.
            deliver_after (datetime.timedelta | int | None): delay delivery by this long (an int
                is milliseconds); overrides deliver_at. Default: None.

        Returns:
            MessageId: where the broker stored the message.

        Raises:
            AlreadyClosed: the producer is closed (also when it closes while the send is pending).
            Timeout: no receipt within send_timeout_millis.
            MessageTooBig: the message exceeds the broker's max_message_size.
            ProducerQueueIsFull: max_pending_messages are pending and block_if_queue_full is False.
            ChecksumError: the broker rejected the message's checksum.
            ProducerFenced, TopicTerminated: the producer can no longer publish.
            TypeError: content does not suit the schema.
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
        """Queue one message without waiting for its receipt.

        Returns once the message is queued (with block_if_queue_full, after waiting for room).

        Arguments:
            content (object): the value, encoded by the producer's schema. No default.
            callback (Callable[[Exception | None, MessageId | None], None] | None): called with
                (None, message_id) on success or (exception, None) on failure. Default: None.
            properties (dict[str, str] | None): as in send(). Default: None.
            partition_key (str | None): as in send(). Default: None.
            ordering_key (str | bytes | None): as in send(). Default: None.
            sequence_id (int | None): as in send(). Default: None (the next one).
            replication_clusters (list[str] | None): as in send(). Default: None (all).
            disable_replication (bool): as in send(). Default: False.
            event_timestamp (int | None): milliseconds since the epoch. Default: None.
            deliver_at (int | None): milliseconds since the epoch, as in send(). Default: None.
            deliver_after (datetime.timedelta | int | None): as in send() (int = ms). Default: None.

        Returns:
            asyncio.Future: resolves to the MessageId, or fails with Timeout, ChecksumError,
            AlreadyClosed, ProducerFenced or TopicTerminated.

        Raises:
            AlreadyClosed: the producer is closed.
            MessageTooBig: the message exceeds the broker's max_message_size.
            ProducerQueueIsFull: max_pending_messages are pending and block_if_queue_full is False.
            ProducerFenced, TopicTerminated: the producer can no longer publish.
            TypeError: content does not suit the schema.
        """
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
        """Send every batched message now and wait until every message sent so far has its receipt
        or has failed. Raises nothing: failures reach each message's future or callback."""
        await asyncio.gather(*(impl.flush() for impl in self._impls))

    async def close(self) -> None:
        """Flush (bounded by send_timeout_millis, at least 1 s), then CLOSE_PRODUCER; messages still
        pending fail with AlreadyClosed. Idempotent; raises nothing."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(*(impl.close() for impl in self._impls), return_exceptions=True)
        self._client._forget(self)

    async def __aenter__(self) -> "Producer":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()
