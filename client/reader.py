"""The public Reader: a non-durable Exclusive subscription ('reader-<10 hex>') that starts at
MessageId.earliest, MessageId.latest or a given id (start_message_id_inclusive decides whether that
id itself is read). Nothing is acknowledged durably; position lives in the client.
Source: Pulsar's C++ ReaderImpl (Java ReaderImpl).
"""
from __future__ import annotations

import asyncio
import logging

from minipulsar.client.consumer.consumer import Consumer
from minipulsar.client.exceptions import AlreadyClosed
from minipulsar.client.message import Message
from minipulsar.client.message_id import MessageId

log = logging.getLogger(__name__)


class Reader:
    """A reader (pulsar.Reader with coroutines); made by Client.create_reader, not directly.

    Arguments:
        consumer (Consumer): the consumer of the reader's non-durable subscription.
    """

    def __init__(self, consumer: Consumer):
        self._consumer = consumer

    def topic(self) -> str:
        """The fully qualified topic name."""
        return self._consumer.topic()

    def is_connected(self) -> bool:
        """True when open and connected (every partition)."""
        return self._consumer.is_connected()

    def has_reached_end_of_topic(self) -> bool:
        """True once every partition was terminated and read to its end (Java's
        Reader.hasReachedEndOfTopic; the official Python Reader has no such call)."""
        return self._consumer.has_reached_end_of_topic()

    async def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message, waiting for one if none is queued.

        Arguments:
            timeout_millis (int | None): milliseconds to wait. Default: None (wait forever).

        Raises:
            AlreadyClosed: the reader is closed (also when it closes while waiting).
            Timeout: no message within timeout_millis.
        """
        return await self._consumer.receive(timeout_millis)

    def __aiter__(self) -> "Reader":
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.read_next()
        except AlreadyClosed:
            raise StopAsyncIteration from None

    async def get_last_message_id(self) -> MessageId:
        """The id of the topic's last message (entry id -1 when it never held one); an extension:
        the official Reader has no such call.

        Raises:
            AlreadyClosed: the reader is closed.
            OperationNotSupported: the topic is partitioned.
            Timeout: not connected, or no answer within operation_timeout_seconds.
            ConnectError: the connection dropped before the answer.
        """
        return await self._consumer.get_last_message_id()

    async def has_message_available(self) -> bool:
        """True when read_next() would return a message without waiting for a new publish
        (asks GET_LAST_MESSAGE_ID of every partition unless a message is already queued).

        Raises:
            AlreadyClosed: the reader is closed.
            Timeout: not connected, or no answer within operation_timeout_seconds.
            ConnectError: the connection dropped before the answer.
        """
        consumer = self._consumer
        consumer._check_open()
        if len(consumer._queue):
            return True
        results = await asyncio.gather(*(self._partition_has_more(impl) for impl in consumer._impls))
        return any(results)

    @staticmethod
    async def _partition_has_more(impl) -> bool:
        last = await impl.get_last_message_id()
        if last.entry_id() < 0 or last.ledger_id() < 0:
            return False
        if impl.queue.has_messages_from(impl):
            return True
        if impl.last_dequeued is not None:
            return last._key() > impl.last_dequeued._key()
        start = impl.start_message_id
        if start is None or start.ledger_id() < 0:
            return True
        if start.ledger_id() == MessageId.latest.ledger_id():
            return False
        if impl.start_inclusive:
            return last._key() >= start._key()
        return last._key() > start._key()

    async def seek(self, target: MessageId | int) -> None:
        """Move the reader; the next read_next() returns the sought message itself (by id), or
        the first message published at or after the time.

        Arguments:
            target (MessageId | int): a message id (MessageId.earliest / .latest included), or a
                publish time in milliseconds since the epoch. No default.

        Raises:
            AlreadyClosed: the reader is closed.
            OperationNotSupported: a non-partitioned id on a partitioned topic.
            Timeout: not connected, or no answer within operation_timeout_seconds.
            ConnectError: the connection dropped before the answer.
        """
        await self._consumer.seek(target)

    async def close(self) -> None:
        """Close the reader (its subscription disappears with it). Idempotent; raises nothing."""
        await self._consumer.close()

    async def __aenter__(self) -> "Reader":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()
