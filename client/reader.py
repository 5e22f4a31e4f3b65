"""The public Reader: a non-durable Exclusive subscription ('reader-<10 hex>') that starts at
MessageId.earliest, MessageId.latest or a given id (start_message_id_inclusive decides whether that
id itself is read). Nothing is acknowledged durably; position lives in the client.
Source: C++ lib/ReaderImpl.cc; facts file 6.5.
"""
from __future__ import annotations

import asyncio
import logging

from client.consumer.consumer import Consumer
from client.exceptions import AlreadyClosed
from client.message import Message
from client.message_id import MessageId

log = logging.getLogger(__name__)


class Reader:
    def __init__(self, consumer: Consumer):
        self._consumer = consumer

    def topic(self) -> str:
        return self._consumer.topic()

    def is_connected(self) -> bool:
        return self._consumer.is_connected()

    async def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises Timeout after timeout_millis."""
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
        the official Reader has no such call. Raises OperationNotSupported on partitioned topics."""
        return await self._consumer.get_last_message_id()

    async def has_message_available(self) -> bool:
        """True when read_next() would return a message without waiting for a new publish."""
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
        """Move to a message id (read next, inclusive) or a publish time in ms."""
        await self._consumer.seek(target)

    async def close(self) -> None:
        await self._consumer.close()

    async def __aenter__(self) -> "Reader":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()
