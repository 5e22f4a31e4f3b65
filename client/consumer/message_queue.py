"""The receiver queue of a consumer: messages pushed by the partition consumers (in arrival order),
taken by receive(). Waiting receivers are woken in FIFO order. Taking a message tells its owning
partition consumer, which returns a permit to the broker (see PartitionConsumer.message_taken).
"""
from __future__ import annotations

import asyncio
import collections

from minipulsar.client.exceptions import AlreadyClosed, Timeout
from minipulsar.client.message import Message


class MessageQueue:
    def __init__(self):
        self._items: collections.deque[Message] = collections.deque()
        self._getters: collections.deque[asyncio.Future] = collections.deque()
        self.closed = False

    def __len__(self) -> int:
        return len(self._items)

    def put(self, message: Message) -> None:
        self._items.append(message)
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                break

    async def get(self, timeout: float | None = None) -> Message:
        """The oldest message; raises Timeout after timeout seconds, AlreadyClosed after close()."""
        while not self._items:
            if self.closed:
                raise AlreadyClosed("consumer closed")
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                async with asyncio.timeout(timeout):
                    await getter
            except TimeoutError:
                raise Timeout("receive timed out") from None
            finally:
                if not getter.done():
                    getter.cancel()
        message = self._items.popleft()
        message._owner.message_taken(message)
        return message

    def has_messages_from(self, owner) -> bool:
        return any(m._owner is owner for m in self._items)

    def remove_owner(self, owner) -> int:
        """Drop every queued message of owner (a seek, a redelivery or a reconnect); returns how many."""
        kept = collections.deque(m for m in self._items if m._owner is not owner)
        removed = len(self._items) - len(kept)
        self._items = kept
        return removed

    def close(self) -> None:
        self.closed = True
        for getter in self._getters:
            if not getter.done():
                getter.set_result(None)
        self._getters.clear()
