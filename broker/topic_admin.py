"""What the admin API does to topics: create, delete and unload them, and set partition counts.

A topic with connected producers or consumers is deleted only with force, which disconnects them
first (TopicBusyError otherwise, 412 on the REST API); unloading closes a topic and disconnects its
clients, which reconnect and load it again. Partitioned metadata lives in the broker's metadata
store; a partitioned topic's partitions are topics of their own. The partition count only grows.
Source: Pulsar PersistentTopicsBase (createNonPartitionedTopic, deleteTopic, unloadTopic,
createPartitionedTopic, updatePartitionedTopic, deletePartitionedTopic).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minipulsar.broker.errors import (NotAllowedError, PartitionCountError, TopicBusyError, TopicExistsError,
                                      TopicNotFoundError)
from minipulsar.broker.access_modes import EPOCHS_KEY
from minipulsar.broker.topic import TERMINATED_KEY
from minipulsar.broker.topic_name import TopicName

if TYPE_CHECKING:
    from minipulsar.broker.broker import Broker
    from minipulsar.broker.topic import PersistentTopic

log = logging.getLogger(__name__)


class TopicAdmin:
    """broker: the Broker whose topics are administered."""

    def __init__(self, broker: "Broker"):
        self.broker = broker

    @property
    def _partitioned(self) -> dict[str, int]:
        return self.broker.metadata.data.setdefault("partitioned", {})

    def exists(self, name: TopicName) -> bool:
        """A non-partitioned topic (or partition) with a ledger, or a loaded non-persistent one."""
        if name.domain == "non-persistent":
            return str(name) in self.broker.non_persistent_topics
        return self.broker.factory.exists(name.storage_name)

    def partitioned_topics(self, namespace: str) -> list[str]:
        return sorted(n for n in self._partitioned if TopicName.parse(n).namespace_name == namespace)

    # ---- non-partitioned topics ------------------------------------------------------------
    async def create(self, name: TopicName) -> None:
        """Raises TopicExistsError, TopicNotFoundError (unknown namespace)."""
        self.broker.namespaces.check(name)
        if self.exists(name) or str(name) in self._partitioned:
            raise TopicExistsError(f"This topic already exists: {name}")
        await self.broker.get_topic(name, create=True, explicit=True)

    async def delete(self, name: TopicName, force: bool) -> None:
        """Raises TopicNotFoundError, TopicBusyError (clients connected and not force)."""
        if not self.exists(name):
            raise TopicNotFoundError(f"Topic {name} not found")
        topic = self._loaded(name)
        if topic is not None:
            if _connected(topic) and not force:
                raise TopicBusyError(f"Topic has active producers/subscriptions: {name}")
            await self._close(topic)
        if name.domain == "non-persistent":
            return
        await self.broker.factory.delete(name.storage_name)
        metadata = self.broker.metadata.data
        forgotten = [metadata.get(key, {}).pop(str(name), None) for key in (TERMINATED_KEY, EPOCHS_KEY)]
        if any(value is not None for value in forgotten):  # a re-created topic starts afresh
            await self.broker.metadata.save()
        log.info("deleted topic %s", name)

    async def unload(self, name: TopicName) -> None:
        """Close the topic; its clients reconnect and load it again. Raises TopicNotFoundError."""
        if not self.exists(name):
            raise TopicNotFoundError(f"Topic {name} not found")
        topic = self._loaded(name)
        if topic is not None:
            await self._close(topic)
            log.info("unloaded topic %s", name)

    def _loaded(self, name: TopicName):
        """The loaded PersistentTopic or NonPersistentTopic of name, or None."""
        loaded = self.broker.topics if name.domain == "persistent" else self.broker.non_persistent_topics
        return loaded.get(str(name))

    async def _close(self, topic) -> None:
        """Disconnect its clients and close it; a persistent topic under its lock (broker/topic_locks.py),
        so whatever asks for it meanwhile (a client reconnecting, a stats request) waits and loads it
        afresh instead of reopening the ledger being closed."""
        for producer in list(topic.producers.values()):
            producer.disconnect()
        for subscription in list(topic.subscriptions.values()):
            subscription.disconnect_consumers()
        if not topic.persistent:
            self.broker.non_persistent_topics.pop(str(topic.name), None)
            await topic.close()
            return
        async with self.broker.topic_locks.hold(str(topic.name)):
            self.broker.topics.pop(str(topic.name), None)
            await topic.close()

    # ---- partitioned topics ----------------------------------------------------------------
    async def create_partitioned(self, name: TopicName, partitions: int) -> None:
        """Raises PartitionCountError (count < 1), NotAllowedError (a partition's name), TopicExistsError."""
        self.broker.namespaces.check(name)
        if name.partition_index >= 0:
            raise NotAllowedError(f"{name} is a partition's name; a partitioned topic cannot have it")
        if partitions < 1:
            raise PartitionCountError(f"Number of partitions should be more than 0, not {partitions}")
        if str(name) in self._partitioned or self.exists(name):
            raise TopicExistsError(f"This topic already exists: {name}")
        self.broker.limits.check_new_topics(name, partitions)  # TopicQuotaError
        self._partitioned[str(name)] = partitions
        await self.broker.metadata.save()
        log.info("created partitioned topic %s with %d partitions", name, partitions)

    async def update_partitions(self, name: TopicName, partitions: int) -> None:
        """Grow the partition count; raises TopicNotFoundError, PartitionCountError (not larger)."""
        current = self._partitioned.get(str(name))
        if current is None:
            raise TopicNotFoundError(f"Partitioned topic {name} not found")
        if partitions <= current:
            raise PartitionCountError(f"Number of new partitions must be greater than existing number of partitions "
                                  f"({partitions} <= {current})")
        self.broker.limits.check_new_topics(name, partitions - current)  # TopicQuotaError
        self._partitioned[str(name)] = partitions
        await self.broker.metadata.save()

    async def delete_partitioned(self, name: TopicName, force: bool) -> None:
        """Delete every partition, then the metadata; raises TopicNotFoundError, TopicBusyError."""
        count = self._partitioned.get(str(name))
        if count is None:
            raise TopicNotFoundError(f"Partitioned topic {name} not found")
        partitions = [name.partition(i) for i in range(count)]
        busy = [p for p in partitions if (t := self._loaded(p)) is not None and _connected(t)]
        if busy and not force:
            raise TopicBusyError(f"Topic has active producers/subscriptions: {busy[0]}")
        for partition in partitions:
            if self.exists(partition):
                await self.delete(partition, force=True)
        del self._partitioned[str(name)]
        await self.broker.metadata.save()


def _connected(topic: "PersistentTopic") -> bool:
    return bool(topic.producers) or any(s.consumers for s in topic.subscriptions.values())
