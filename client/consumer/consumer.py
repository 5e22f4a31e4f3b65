"""The public Consumer: one PartitionConsumer per partition of every subscribed topic, all feeding
one MessageQueue, behind the API of pulsar.Consumer with coroutines.

Acknowledgement calls take a Message or a MessageId and are routed to the partition consumer the
message came from (by its topic, else its partition). `async for msg in consumer` receives forever.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minipulsar.client.consumer.message_queue import MessageQueue
from minipulsar.client.consumer.partition_consumer import ConsumerConfig, PartitionConsumer
from minipulsar.client.exceptions import AlreadyClosed, OperationNotSupported
from minipulsar.client.handler import start_all
from minipulsar.client.message import Message
from minipulsar.client.message_id import MessageId
from minipulsar.client.topic_name import partition_name

if TYPE_CHECKING:
    from minipulsar.client.client import Client

log = logging.getLogger(__name__)


def _message_id(message: Message | MessageId) -> MessageId:
    return message.message_id() if isinstance(message, Message) else message


class Consumer:
    """A consumer (pulsar.Consumer with coroutines); made by Client.subscribe, not directly.

    Arguments:
        client (Client): the client that owns it.
        topics (list[tuple[str, int]]): (fully qualified topic, number of partitions; 0 when not
            partitioned) for every subscribed topic.
        conf (ConsumerConfig): the subscribe options.
        dead_letters_for (Callable[[str], DeadLetterProducer] | None): the dead-letter producer of
            a topic. Default: None (no dead-letter policy).
    """

    def __init__(self, client: "Client", topics: list[tuple[str, int]], conf: ConsumerConfig, dead_letters_for=None):
        self._client = client
        self._conf = conf
        self._topics = topics
        self._queue = MessageQueue()
        handles = [(partition_name(t, i), i, t) for t, n in topics for i in range(n)] if topics else []
        handles += [(t, -1, t) for t, n in topics if n == 0]
        per_handle = conf.receiver_queue_size
        if len(handles) > 1:
            total = conf.max_total_receiver_queue_size_across_partitions
            per_handle = max(1, min(conf.receiver_queue_size, total // len(handles)))
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
        """The subscribed topic names, comma-separated."""
        return ",".join(t for t, _ in self._topics)

    def subscription_name(self) -> str:
        """The subscription name."""
        return self._conf.subscription_name

    def consumer_name(self) -> str:
        """The consumer name (given, or 10 random hex characters)."""
        return self._impls[0].consumer_name

    def has_reached_end_of_topic(self) -> bool:
        """True once every topic (partition) of this consumer was terminated and read to its end:
        the broker sent REACHED_END_OF_TOPIC (Pulsar's Consumer.hasReachedEndOfTopic)."""
        return all(impl.reached_end_of_topic for impl in self._impls)

    def is_connected(self) -> bool:
        """True when open and every partition consumer has a connection."""
        return not self._closed and all(impl.cnx is not None for impl in self._impls)

    async def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message, waiting for one if none is queued.

        Arguments:
            timeout_millis (int | None): milliseconds to wait. Default: None (wait forever).

        Raises:
            AlreadyClosed: the consumer is closed (also when it closes while waiting).
            Timeout: no message within timeout_millis.
        """
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
        """Acknowledge one message. Acks are grouped and sent within 100 ms (kept across a
        reconnect); a batch entry is acknowledged once all its messages are.

        Arguments:
            message (Message | MessageId): the message or its id. No default.

        Raises:
            AlreadyClosed: the consumer is closed.
            OperationNotSupported: a bare MessageId whose topic cannot be told on a multi-topic consumer.
        """
        if self._closed:
            raise AlreadyClosed("consumer is closed")
        if isinstance(message, Message):
            message._owner.acknowledge(message._message_id)
        else:
            self._impl_for(message).acknowledge(message)

    async def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to and including this one, on its partition (Exclusive
        and Failover subscriptions only).

        Arguments:
            message (Message | MessageId): the last message to acknowledge. No default.

        Raises:
            AlreadyClosed: the consumer is closed.
            OperationNotSupported: a bare MessageId whose topic cannot be told on a multi-topic consumer.
            CumulativeAcknowledgementNotAllowedError: the subscription is Shared, KeyShared or KeyFailover.
        """
        self._check_open()
        message_id = _message_id(message)
        self._impl_for(message_id).acknowledge_cumulative(message_id)

    async def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Have the message redelivered after negative_ack_redelivery_delay_ms (on Exclusive and
        Failover subscriptions every unacknowledged message comes again).

        Arguments:
            message (Message | MessageId): the message or its id. No default.

        Raises:
            AlreadyClosed: the consumer is closed.
            OperationNotSupported: a bare MessageId whose topic cannot be told on a multi-topic consumer.
        """
        self._check_open()
        message_id = _message_id(message)
        self._impl_for(message_id).negative_acknowledge(message_id)

    async def redeliver_unacknowledged_messages(self) -> None:
        """Have every unacknowledged message sent again (queued ones are dropped first).

        Raises:
            AlreadyClosed: the consumer is closed.
        """
        self._check_open()
        for impl in self._impls:
            impl.redeliver_all()

    async def seek(self, target: MessageId | int) -> None:
        """Reset the subscription (SEEK); the consumer then subscribes again and receives from
        the sought message itself (by id) or from the first message published after the time.

        Arguments:
            target (MessageId | int): a message id (MessageId.earliest / .latest reset every
                partition), or a publish time in milliseconds since the epoch (every partition).
                No default.

        Raises:
            AlreadyClosed: the consumer is closed.
            OperationNotSupported: a non-partitioned id on a consumer of several topics or partitions.
            Timeout: not connected, or no answer within operation_timeout_seconds.
            ConnectError: the connection dropped before the answer.
            PulsarException: the broker's error for the SEEK.
        """
        self._check_open()
        if isinstance(target, MessageId):
            if len(self._impls) > 1 and target.partition() < 0 and target not in (MessageId.earliest, MessageId.latest):
                raise OperationNotSupported("seek by message id needs a single topic or a partitioned id")
            impls = self._impls if target in (MessageId.earliest, MessageId.latest) or len(self._impls) == 1 else [self._impl_for(target)]
        else:
            impls = self._impls
        await asyncio.gather(*(impl.seek(target) for impl in impls))

    async def get_last_message_id(self) -> MessageId:
        """The id of the last message in the topic (GET_LAST_MESSAGE_ID); entry id -1 when the
        topic never held one. Single non-partitioned topics only.

        Raises:
            AlreadyClosed: the consumer is closed.
            OperationNotSupported: several topics or partitions.
            Timeout: not connected, or no answer within operation_timeout_seconds.
            ConnectError: the connection dropped before the answer.
        """
        self._check_open()
        if len(self._impls) != 1:
            raise OperationNotSupported("get_last_message_id needs a single non-partitioned topic")
        return await self._impls[0].get_last_message_id()

    async def unsubscribe(self) -> None:
        """Delete the subscription on the broker (UNSUBSCRIBE), then close this consumer.

        Raises:
            AlreadyClosed: the consumer is closed.
            Timeout: not connected, or no answer within operation_timeout_seconds.
            ConnectError: the connection dropped before the answer.
            PulsarException: the broker's error for the UNSUBSCRIBE.
        """
        self._check_open()
        await asyncio.gather(*(impl.unsubscribe() for impl in self._impls))
        await self.close()

    async def close(self) -> None:
        """Flush pending acks, CLOSE_CONSUMER on every partition, and end receive() and
        iteration. Idempotent; raises nothing."""
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
