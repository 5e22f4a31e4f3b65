"""The dead-letter topic: where a message goes after max_redeliver_count redeliveries.

A producer on dead_letter_topic (default '<topic>-<subscription>-DLQ', topic without its partition
suffix) is created on first use. Each dead message is published with its payload, key, ordering
key, event time and properties plus REAL_TOPIC (where it came from) and ORIGIN_MESSAGE_ID, then
acknowledged on the original subscription. If publishing fails the message is redelivered as usual
and tried again next time. Source: Java ConsumerImpl processPossibleToDLQ, RetryMessageUtil.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minipulsar.client.options import ConsumerDeadLetterPolicy

if TYPE_CHECKING:
    from minipulsar.client.client import Client
    from minipulsar.client.consumer.partition_consumer import PartitionConsumer
    from minipulsar.client.message import Message

log = logging.getLogger(__name__)

PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"


def default_dead_letter_topic(topic: str, subscription: str) -> str:
    return f"{topic}-{subscription}-DLQ"


class DeadLetterProducer:
    def __init__(self, client: "Client", topic: str, subscription: str, policy: ConsumerDeadLetterPolicy):
        self.client = client
        self.topic = policy.dead_letter_topic or default_dead_letter_topic(topic, subscription)
        self.policy = policy
        self._producer = None
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()

    def publish(self, consumer: "PartitionConsumer", messages: list["Message"]) -> None:
        """Publish messages to the DLQ in the background, then acknowledge them on consumer."""
        task = asyncio.get_running_loop().create_task(self._publish(consumer, messages))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _producer_ready(self):
        async with self._lock:
            if self._producer is None:
                self._producer = await self.client.create_producer(
                    self.topic, _initial_subscription_name=self.policy.initial_subscription_name)
            return self._producer

    async def _publish(self, consumer: "PartitionConsumer", messages: list["Message"]) -> None:
        try:
            producer = await self._producer_ready()
            for message in messages:
                properties = message.properties()
                properties.setdefault(PROPERTY_REAL_TOPIC, message.topic_name())
                mid = message.message_id()
                properties.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, f"{mid.ledger_id()}:{mid.entry_id()}:{mid.partition()}:{mid.batch_index()}")
                await producer.send(message.data(), properties=properties,
                                    partition_key=message.partition_key() or None,
                                    ordering_key=message.ordering_key() or None,
                                    event_timestamp=message.event_timestamp() or None)
            for message in messages:
                consumer.acknowledge(message.message_id())
            log.info("%s: %d message(s) of %s moved to %s", consumer, len(messages),
                     messages[0].message_id(), self.topic)
        except Exception as exc:  # noqa: BLE001 - fall back to a normal redelivery
            log.warning("dead-letter publish to %s failed (%s); redelivering", self.topic, exc)
            consumer.redeliver_without_dead_letters([m.message_id() for m in messages])

    async def close(self) -> None:
        for task in list(self._tasks):
            await asyncio.gather(task, return_exceptions=True)
        if self._producer is not None:
            await self._producer.close()
