"""The public Consumer: one PartitionConsumer per partition of every subscribed topic, all feeding
one MessageQueue, behind the API of pulsar.Consumer with coroutines.

Acknowledgement calls take a Message or a MessageId and are routed to the partition consumer the
message came from (by its topic, else its partition). `async for msg in consumer` receives forever.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from client.consumer.message_queue import MessageQueue
from client.consumer.partition_consumer import ConsumerConfig, PartitionConsumer
from client.exceptions import AlreadyClosed, OperationNotSupported
from client.handler import start_all
from client.message import Message
from client.message_id import MessageId
from client.topic_name import partition_name

if TYPE_CHECKING:
    from client.client import Client

log = logging.getLogger(__name__)


def _message_id(message: Message | MessageId) -> MessageId:
    return message.message_id() if isinstance(message, Message) else message


class Consumer:
    """topics: [(fully qualified topic, number of partitions)]."""

    def __init__(self, client: "Client", topics: list[tuple[str, int]], conf: ConsumerConfig, dead_letters_for=None):
        self._client = client
        self._conf = conf
        self._topics = topics
        self._queue = MessageQueue()
        handles = [(partition_name(t, i), i, t) for t, n in topics for i in range(n)] if topics else []
        handles += [(t, -1, t) for t, n in topics if n == 0]
        per_handle = conf.receiver_queue_size
        if len(handles) > 1:
            per_handle = max(1, min(conf.receiver_queue_size, 50000 // len(handles)))
        self._impls = [
            PartitionConsumer(client, name, conf, self._queue, partition, per_handle,
                              dead_letters_for(base) if dead_letters_for else None)
            for name, partition, base in handles
        ]
        self._by_topic = {impl.topic: impl for impl in self._impls}
        self._closed = False

    async def _start(self) -> "Consumer":
        await start_all(self._impls)
        return self

    def _impl_for(self, message_id: MessageId) -> PartitionConsumer:
        topic = message_id.topic_name()
        if topic in self._by_topic:
            return self._by_topic[topic]
        if len(self._impls) == 1:
            return self._impls[0]
        matches = [i for i in self._impls if i.partition == message_id.partition()]
        if len(matches) == 1:
            return matches[0]
        raise OperationNotSupported(f"cannot tell which topic message id {message_id} belongs to")

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosed("consumer is closed")

    # ---- the official API ------------------------------------------------------------------
    def topic(self) -> str:
        return ",".join(t for t, _ in self._topics)

    def subscription_name(self) -> str:
        return self._conf.subscription_name

    def consumer_name(self) -> str:
        return self._impls[0].consumer_name

    def is_connected(self) -> bool:
        return not self._closed and all(impl.cnx is not None for impl in self._impls)

    async def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises Timeout after timeout_millis, AlreadyClosed once closed."""
        if self._closed:
            raise AlreadyClosed("consumer is closed")
        items = self._queue._items
        if items:  # fast path: no waiting, no extra coroutine
            message = items.popleft()
            message._owner.message_taken(message)
            return message
        return await self._queue.get(None if timeout_millis is None else timeout_millis / 1000.0)

    def __aiter__(self) -> "Consumer":
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.receive()
        except AlreadyClosed:
            raise StopAsyncIteration from None

    async def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (grouped, sent within 100 ms)."""
        if self._closed:
            raise AlreadyClosed("consumer is closed")
        if isinstance(message, Message):
            message._owner.acknowledge(message._message_id)
        else:
            self._impl_for(message).acknowledge(message)

    async def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge everything up to message on its partition; Exclusive and Failover only."""
        self._check_open()
        message_id = _message_id(message)
        self._impl_for(message_id).acknowledge_cumulative(message_id)

    async def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Have message redelivered after negative_ack_redelivery_delay_ms."""
        self._check_open()
        message_id = _message_id(message)
        self._impl_for(message_id).negative_acknowledge(message_id)

    async def redeliver_unacknowledged_messages(self) -> None:
        """Every unacknowledged message is sent again (queued ones are dropped first)."""
        self._check_open()
        for impl in self._impls:
            impl.redeliver_all()

    async def seek(self, target: MessageId | int) -> None:
        """Reset the subscription to a message id, or to a publish time in ms (every partition)."""
        self._check_open()
        if isinstance(target, MessageId):
            if len(self._impls) > 1 and target.partition() < 0 and target not in (MessageId.earliest, MessageId.latest):
                raise OperationNotSupported("seek by message id needs a single topic or a partitioned id")
            impls = self._impls if target in (MessageId.earliest, MessageId.latest) or len(self._impls) == 1 else [self._impl_for(target)]
        else:
            impls = self._impls
        await asyncio.gather(*(impl.seek(target) for impl in impls))

    async def get_last_message_id(self) -> MessageId:
        """The id of the last message in the topic (single-topic, non-partitioned consumers)."""
        self._check_open()
        if len(self._impls) != 1:
            raise OperationNotSupported("get_last_message_id needs a single non-partitioned topic")
        return await self._impls[0].get_last_message_id()

    async def unsubscribe(self) -> None:
        """Delete the subscription on the broker and close this consumer."""
        self._check_open()
        await asyncio.gather(*(impl.unsubscribe() for impl in self._impls))
        await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(*(impl.close() for impl in self._impls), return_exceptions=True)
        self._queue.close()
        self._client._forget(self)

    async def __aenter__(self) -> "Consumer":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()
