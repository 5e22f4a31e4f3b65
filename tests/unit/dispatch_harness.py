"""A real topic, ledger, cursor, subscription and dispatcher, driven without sockets.

Only the client side is a stand-in: RecordingConnection keeps the MESSAGE frames a connection
would have written, so tests can assert exactly what each consumer received.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

from minipulsar.broker.config import build_config
from minipulsar.broker.consumer import Consumer
from minipulsar.broker.server import Broker
from minipulsar.broker.topic import PersistentTopic
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload
from minipulsar.storage import Position


class RecordingConnection:
    """Stands in for a client connection: records what the broker sends. consumer: the one
    Consumer using it (what a real connection finds by consumer id)."""

    def __init__(self, name: str):
        self.peer_address = f"test:{name}"
        self.received: list[Position] = []
        self.writable = True
        self.consumer: Consumer | None = None

    def send_message(self, consumer_id, entry, partition, redelivery_count, consumer_epoch, ack_set) -> None:
        self.received.append(entry.position)

    def is_writable(self) -> bool:
        return self.writable

    def send_active_consumer_change(self, consumer_id, active) -> None:
        pass

    def send_reached_end_of_topic(self, consumer_id) -> None:
        pass

    def close_consumer_by_broker(self, consumer_id) -> None:
        self.consumer.close()


def entry_bytes(key: str | None, sequence_id: int = 0) -> bytes:
    metadata = api.MessageMetadata(producer_name="test", sequence_id=sequence_id, publish_time=1)
    if key is not None:
        metadata.partition_key = key
    return build_headers_and_payload(metadata, f"payload-{sequence_id}".encode())


class Harness:
    """topic: a PersistentTopic on a real managed ledger in folder."""

    def __init__(self, folder: Path, **settings):
        self.broker = Broker(build_config({"dataDir": str(folder), **settings}))
        self.topic: PersistentTopic | None = None
        self._next_id = 0

    async def open(self, rollovers: int = 0) -> "Harness":
        """Open the topic; each rollover closes and reopens it first, so ledger ids start higher."""
        name = TopicName.parse("persistent://public/default/harness")
        await self.broker.factory.start()
        for _ in range(rollovers):
            ledger = await self.broker.factory.open(name.storage_name)
            await ledger.open_cursor("keep", "earliest")  # keeps the (empty) ledgers from trimming
            await ledger.close()
        ledger = await self.broker.factory.open(name.storage_name)
        self.topic = PersistentTopic(self.broker, name, ledger)
        return self

    async def close(self) -> None:
        await self.topic.close()
        await self.broker.factory.close()

    async def publish(self, key: str | None) -> Position:
        self._next_id += 1
        return await self.topic.publish(entry_bytes(key, self._next_id))

    async def subscription(self, name: str = "sub"):
        return await self.topic.subscribe(name, True, "earliest", None)

    def consumer(self, subscription, name: str, sub_type: int, permits: int = 1000, **attrs) -> Consumer:
        self._next_id += 1
        connection = RecordingConnection(name)
        consumer = connection.consumer = Consumer(subscription, connection, self._next_id, name, sub_type)
        for key, value in attrs.items():
            setattr(consumer, key, value)
        consumer.permits = permits
        return consumer


async def settle(dispatcher, rounds: int = 20) -> None:
    """Let the dispatcher's read loop run until it is idle."""
    for _ in range(rounds):
        await asyncio.sleep(0)
        task = dispatcher._read_task
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=5)
    for _ in range(5):
        await asyncio.sleep(0)
