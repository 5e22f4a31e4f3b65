"""A reader of whole entries: the bundled client's reader, minus turning entries into messages.

A range reader only needs each entry's bytes and position; building a ``Message`` and a
``MessageId`` per message, queueing each and taking each back one coroutine call at a time is most
of what a pure-Python reader spends on small messages. ``EntryReader`` keeps everything else of
the client's reader — lookup, the non-durable Exclusive subscription starting after a position,
flow control, re-subscribing after a lost connection from the last entry taken — by using the
client's own partition consumer and replacing only what it does with each received entry: the
entry is queued as it came (``RawEntry``), and its permits go back once the caller has taken it
and knows how many messages it held.

The bundled client has no public API for this; a ``Reader.read_entries()`` there would replace
this module.
"""
from __future__ import annotations

import asyncio
import collections
from typing import NamedTuple

from minipulsar.client import Client, ConsumerType, InitialPosition, MessageId, Timeout
from minipulsar.client.consumer.partition_consumer import ConsumerConfig, PartitionConsumer
from minipulsar.client.topic_name import partition_index

from minipulsar.pipeline.offsets import Position


class RawEntry(NamedTuple):
    """One entry as the broker sent it: its position and its headers and payload."""

    ledger_id: int
    entry_id: int
    data: bytes


class _EntryQueue:
    """What the partition consumer pushes into: entries in arrival order, one waiting reader."""

    def __init__(self):
        self._items: collections.deque[RawEntry] = collections.deque()
        self._waiter: asyncio.Future | None = None

    def __len__(self) -> int:
        return len(self._items)

    def put(self, entry: RawEntry) -> None:
        self._items.append(entry)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def get(self, timeout: float) -> RawEntry:
        if not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._waiter
            except TimeoutError:
                raise Timeout("no entry within the timeout") from None
            finally:
                self._waiter = None
        return self._items.popleft()

    # The partition consumer drops its queued messages on a reconnect, a seek or close (the broker
    # sends them again); every queued entry is that one consumer's.
    def remove_owner(self, owner) -> int:
        dropped = len(self._items)
        self._items.clear()
        return dropped

    def has_messages_from(self, owner) -> bool:
        return bool(self._items)


class _EntryConsumer(PartitionConsumer):
    """The client's partition consumer, queueing each received entry undecoded."""

    def on_message(self, cnx, command, data: bytes | None) -> None:
        if command.HasField("consumer_epoch") and command.consumer_epoch < self.epoch:
            self._return_permits(1)  # from before a redeliver-all; the broker sends it again
            return
        self.queue.put(RawEntry(command.message_id.ledgerId, command.message_id.entryId, data or b""))

    def entry_taken(self, entry: RawEntry, messages: int) -> None:
        """The caller consumed entry, which held messages messages: resume after it on a
        reconnect, and give the broker its permits back."""
        self.last_dequeued = MessageId(self.partition, entry.ledger_id, entry.entry_id)
        self._return_permits(messages)


class EntryReader:
    """Entries of one topic partition after ``start`` (whole entries: an entry whose batch
    ``start`` ends inside is delivered whole). Made by ``open``; close with ``close``."""

    def __init__(self, consumer: _EntryConsumer):
        self._consumer = consumer

    @classmethod
    async def open(cls, client: Client, topic: str, start: Position, queue_messages: int) -> "EntryReader":
        """Subscribe to topic (a partition name) after start; queue_messages is the flow-control
        window in messages. Raises what creating a reader raises (TopicNotFound, Timeout, ...)."""
        partition = partition_index(topic)
        start_id = MessageId.earliest if start.is_earliest else start.message_id(partition)
        conf = ConsumerConfig(
            subscription_name=f"reader-{client.random_name()}", consumer_type=ConsumerType.Exclusive,
            receiver_queue_size=queue_messages, durable=False, start_message_id=start_id,
            initial_position=InitialPosition.Earliest if start.is_earliest else InitialPosition.Latest)
        consumer = _EntryConsumer(client, topic, conf, _EntryQueue(), partition, queue_messages)
        await consumer.start()
        return cls(consumer)

    async def next_entry(self, timeout_ms: int) -> RawEntry:
        """The next entry; raises Timeout when none arrives within timeout_ms."""
        return await self._consumer.queue.get(timeout_ms / 1000.0)

    def taken(self, entry: RawEntry, messages: int) -> None:
        """Report entry consumed (see _EntryConsumer.entry_taken); call once per entry."""
        self._consumer.entry_taken(entry, messages)

    async def last_position(self) -> Position:
        """The partition's last message id, as the broker says now."""
        return Position.of(await self._consumer.get_last_message_id())

    async def close(self) -> None:
        await self._consumer.close()
