"""The Broker: the listening socket, the topics it owns, keep-alive, start-up and clean shutdown.

Use it embedded as an async context manager:

    async with Broker(build_config({"brokerServicePort": 0, "dataDir": tmp})) as broker:
        url = broker.service_url

Shutdown stops accepting, closes every connection, then closes the topics (persisting cursors)
and the ledger factory (releasing the data-dir lock).
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
from pathlib import Path

from minipulsar.broker.background import BackgroundTasks
from minipulsar.broker.config import BrokerConfig, apply_setting
from minipulsar.broker.connection import ServerConnection
from minipulsar.broker.errors import ServiceNotReadyError, TopicNotFoundError
from minipulsar.broker.listeners import AdvertisedListeners
from minipulsar.broker.metadata_store import MetadataStore
from minipulsar.broker.namespaces import Namespaces
from minipulsar.broker.schema_registry import SchemaRegistry
from minipulsar.broker.replication import BrokerReplication
from minipulsar.broker.topic import PersistentTopic
from minipulsar.broker.topic_name import TopicName
from minipulsar.storage import ManagedLedgerFactory

log = logging.getLogger(__name__)


class Broker:
    """config: a BrokerConfig; service_url is known after start()."""

    def __init__(self, config: BrokerConfig):
        self.config = config
        self.factory = ManagedLedgerFactory(Path(config.data_dir) / "ledgers", config.ledger_config())
        self.metadata = MetadataStore(Path(config.data_dir) / "metadata" / "partitioned-topics.json")
        self.topics: dict[str, PersistentTopic] = {}
        self.namespaces = Namespaces(config.extra_namespaces, self._topic_namespaces)
        self.schemas = SchemaRegistry(config.data_dir, config.schema_compatibility_strategy)
        self.listeners = AdvertisedListeners(config.advertised_listeners, config.internal_listener_name, "")
        self.connections: set[ServerConnection] = set()
        self._topic_locks: dict[str, asyncio.Lock] = {}
        self._server: asyncio.base_events.Server | None = None
        self._keepalive: asyncio.Task | None = None
        self._background = BackgroundTasks("broker", log)
        self._producer_names = itertools.count()
        self._instance_id = 0
        self.running = False
        self.replicator_prefix = config.replicator_prefix  # Pulsar replicatorPrefix
        self.replication = BrokerReplication(self)  # peers, their clients; see broker/replication

    @property
    def service_url(self) -> str:
        return self.config.broker_service_url

    async def __aenter__(self) -> "Broker":
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.stop()

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Take the data dir, load metadata, listen; raises DataDirLockedError, OSError (port in use)."""
        await self.factory.start()
        try:
            self.metadata.load()
            self.schemas.load()
            # Generated producer names must not repeat across restarts (reconnecting clients keep theirs).
            self._instance_id = self.metadata.data.get("brokerInstance", -1) + 1
            self.metadata.data["brokerInstance"] = self._instance_id
            await self.metadata.save()
            loop = asyncio.get_running_loop()
            self._server = await loop.create_server(
                lambda: ServerConnection(self), self.config.bind_address, self.config.broker_service_port,
                reuse_address=True,
            )
        except BaseException:
            await self.factory.close()
            raise
        self.config.broker_service_port = self._server.sockets[0].getsockname()[1]
        self._keepalive = loop.create_task(self._keepalive_loop())
        self.running = True
        await self.replication.start()
        log.info("minipulsar broker listening on %s:%d (advertised %s), data dir %s",
                 self.config.bind_address, self.config.broker_service_port, self.service_url,
                 Path(self.config.data_dir).resolve())

    async def stop(self) -> None:
        """Stop accepting, close connections and topics; safe to call twice."""
        if not self.running:
            return
        self.running = False
        self._server.close()
        self._keepalive.cancel()
        for connection in list(self.connections):
            connection.close()
        await asyncio.sleep(0)  # let connection_lost run for the closed transports
        await self._background.wait()
        for topic in list(self.topics.values()):
            await topic.close()
        self.topics.clear()
        await self.replication.close()
        await self.factory.close()
        await self._server.wait_closed()
        log.info("minipulsar broker stopped")

    async def _keepalive_loop(self) -> None:
        interval = self.config.keep_alive_interval_seconds
        while True:
            await asyncio.sleep(interval)
            for connection in list(self.connections):
                connection.keepalive_tick(interval)

    def spawn(self, coro) -> None:
        """Run a background coroutine the broker waits for at shutdown; errors are logged."""
        self._background.spawn(coro)

    # ---- topics ----------------------------------------------------------------------------
    async def get_topic(self, name: TopicName, create: bool) -> PersistentTopic:
        """The loaded topic `name`, opening or (when allowed) creating it; raises TopicNotFoundError."""
        key = str(name)
        topic = self.topics.get(key)
        if topic is not None:
            return topic
        if not self.running:
            raise ServiceNotReadyError("broker is shutting down")
        lock = self._topic_locks.setdefault(key, asyncio.Lock())
        async with lock:
            topic = self.topics.get(key)
            if topic is None:
                topic = await self._load_topic(name, create)
        return topic

    async def _load_topic(self, name: TopicName, create: bool) -> PersistentTopic:
        if name.domain != "persistent":
            raise TopicNotFoundError(f"non-persistent topics are not supported: {name}")
        exists = self.factory.exists(name.storage_name)
        if not exists:
            self.namespaces.check(name)
        if not exists and not (create and self.config.allow_auto_topic_creation):
            raise TopicNotFoundError(f"Topic {name} does not exist")
        ledger = await self.factory.open(name.storage_name)
        topic = PersistentTopic(self, name, ledger)
        await topic.initialize()
        self.topics[str(name)] = topic
        if not exists:
            log.info("created topic %s", name)
        return topic

    async def partitions_of(self, name: TopicName) -> int:
        """Partition count of name (0 = non-partitioned); auto-creates partitioned metadata when
        allowAutoTopicCreationType is 'partitioned'."""
        if name.partition_index >= 0:
            return 0
        partitioned = self.metadata.data.setdefault("partitioned", {})
        if str(name) in partitioned:
            return partitioned[str(name)]
        if self.factory.exists(name.storage_name):
            return 0
        self.namespaces.check(name)
        config = self.config
        if config.allow_auto_topic_creation and config.allow_auto_topic_creation_type == "partitioned":
            partitioned[str(name)] = config.default_num_partitions
            await self.metadata.save()
            log.info("created partitioned topic %s with %d partitions", name, config.default_num_partitions)
            return config.default_num_partitions
        return 0

    def list_topics(self, namespace: str) -> list[str]:
        """Persistent topics of namespace ('tenant/ns'), partitions listed by their own names."""
        names = set()
        for storage_name in self.factory.list_names():
            topic = TopicName.from_storage_name(storage_name)
            if topic.namespace_name == namespace and topic.domain == "persistent":
                names.add(str(topic))
        for full_name, count in self.metadata.data.get("partitioned", {}).items():
            topic = TopicName.parse(full_name)
            if topic.namespace_name == namespace:
                names.update(str(topic.partition(i)) for i in range(count))
        return sorted(names)

    def _topic_namespaces(self) -> set[str]:
        """'tenant/ns' of every topic on disk or in the partitioned-topic metadata."""
        found = set()
        for storage_name in self.factory.list_names():
            found.add(TopicName.from_storage_name(storage_name).namespace_name)
        for full_name in self.metadata.data.get("partitioned", {}):
            found.add(TopicName.parse(full_name).namespace_name)
        return found

    def update_config(self, key: str, value) -> None:
        """Change a dynamic setting while running (dispatcherPauseOnAckStatePersistentEnabled,
        managedLedgerMaxUnackedRangesToPersist, ...); raises ConfigError naming the key."""
        apply_setting(self.config, key, value)
        fresh = self.config.ledger_config()
        for field in dataclasses.fields(fresh):  # ledgers share this object: they see it at once
            setattr(self.factory.config, field.name, getattr(fresh, field.name))
        for topic in self.topics.values():
            for subscription in topic.subscriptions.values():
                subscription.ack_state_gate.recheck()

    def new_producer_name(self) -> str:
        """Pulsar's generated form: <cluster>-<instance>-<counter>."""
        return f"{self.config.cluster_name}-{self._instance_id}-{next(self._producer_names)}"

    def stats(self) -> dict:
        return {str(name): topic.stats() for name, topic in self.topics.items()}
