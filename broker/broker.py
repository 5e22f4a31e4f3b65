"""The Broker (Pulsar's BrokerService): the listening sockets, the registry of the topics it owns,
the periodic jobs over them, keep-alive, start-up and clean shutdown.

Topics do not see the Broker: they get one TopicContext (broker/topic_context.py) with the
settings, policies, limits, budgets and stores they use.

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
import time
from pathlib import Path

from minipulsar.broker.background import BackgroundTasks
from minipulsar.broker.backlog_quota import BacklogQuotas
from minipulsar.broker.config import PORT_OFF, BrokerConfig, apply_setting
from minipulsar.broker.connection import ServerConnection
from minipulsar.broker.dispatchers.held_entries import HeldBudget
from minipulsar.broker.errors import NotAllowedError, ServiceNotReadyError, TopicNotFoundError
from minipulsar.broker.functions_worker import start_functions_worker
from minipulsar.broker.inactive_topics import InactiveTopics
from minipulsar.broker.limits import ConnectionLimits, LookupPermits, TopicLimits
from minipulsar.broker.listeners import AdvertisedListeners
from minipulsar.broker.metadata_store import MetadataStore
from minipulsar.broker.namespace_policies import NamespacePolicies
from minipulsar.broker.namespaces import Namespaces
from minipulsar.broker.non_persistent_topic import NonPersistentTopic
from minipulsar.broker.publish_buffer import PublishBuffer
from minipulsar.broker.replication import ReplicationClients
from minipulsar.broker.replication.misdirection import warn_if_advertised_loopback
from minipulsar.broker.schema_registry import SchemaRegistry
from minipulsar.broker.security.service import BrokerSecurity
from minipulsar.broker.stats_rates import update_rates
from minipulsar.broker.topic import PersistentTopic
from minipulsar.broker.topic_admin import TopicAdmin
from minipulsar.broker.topic_context import TopicContext
from minipulsar.broker.topic_locks import TopicLocks
from minipulsar.broker.topic_name import TopicName
from minipulsar.broker.web.server import WebService
from minipulsar.storage import ManagedLedgerFactory

log = logging.getLogger(__name__)
DEFAULT_NAMESPACE = "public/default"


class Broker:
    """config: a BrokerConfig; service_url is known after start()."""

    def __init__(self, config: BrokerConfig):
        self.config = config
        self.factory = ManagedLedgerFactory(Path(config.data_dir) / "ledgers", config.ledger_config())
        self.metadata = MetadataStore(Path(config.data_dir) / "metadata" / "partitioned-topics.json")
        self.topics: dict[str, PersistentTopic] = {}
        self.non_persistent_topics: dict[str, NonPersistentTopic] = {}  # in memory only (PIP-2)
        self.namespaces = Namespaces(self.metadata, config.extra_namespaces, config.cluster_name, self._topic_namespaces)
        self.policies = NamespacePolicies(self.namespaces, config, self.metadata,
                                          peers=lambda: self.replication.peers(), applied=self.apply_namespace_policies)
        self.schemas = SchemaRegistry(config.data_dir,
                                      lambda name: self.policies.schema_compatibility_strategy(name.namespace_name),
                                      lambda name: self.policies.allow_auto_update_schema(name.namespace_name))
        self.listeners = AdvertisedListeners(config.advertised_listeners, config.internal_listener_name, "")
        # authentication, authorization, TLS (broker/security); raises ConfigError naming the key
        self.security = BrokerSecurity(config, self.namespaces, self.metadata)
        self._tls_server: asyncio.base_events.Server | None = None
        self.connections: set[ServerConnection] = set()
        self.connection_limits = ConnectionLimits(config.broker_max_connections, config.broker_max_connections_per_ip)
        # Entries dispatchers hold back for redelivery, kept parsed (broker/dispatchers/held_entries.py).
        self.held_budget = HeldBudget(lambda: (self.config.managed_ledger_cache_size_mb << 20) // 2)
        self.publish_buffer = PublishBuffer(config.max_message_publish_buffer_size_in_mb << 20, self.connections)
        self.limits = TopicLimits(self.policies, self.list_topics, config.replicator_prefix)
        self.lookup_permits = LookupPermits(config.max_concurrent_lookup_request)
        self.inactive_topics = InactiveTopics(self)
        self.topic_locks = TopicLocks()  # loading and closing a persistent topic (broker/topic_admin.py)
        self._server: asyncio.base_events.Server | None = None
        self._keepalive: asyncio.Task | None = None
        self._periodic: list[asyncio.Task] = []  # message expiry and backlog quota checks
        self.backlog_quotas = BacklogQuotas(self.policies, config)
        self._background = BackgroundTasks("broker", log)
        self._producer_names = itertools.count()
        self._instance_id = 0
        self.running = False
        self.replicator_prefix = config.replicator_prefix  # Pulsar replicatorPrefix
        self.replication = ReplicationClients(  # peers and their clients; see broker/replication
            config, self.metadata, lambda namespace: self.policies.get(namespace, "replication"),
            self.security.broker_client_authentication, self.spawn)
        self.topic_context = TopicContext(
            config=config, policies=self.policies, limits=self.limits, held_budget=self.held_budget,
            metadata=self.metadata, schemas=self.schemas, backlog_quotas=self.backlog_quotas,
            replication=self.replication, spawn=self.spawn, new_producer_name=self.new_producer_name)
        self.web = WebService(self)  # admin REST, HTTP lookup, metrics (broker/web)
        self.topic_admin = TopicAdmin(self)
        self.functions = None  # the function worker (minipulsar.functions), once started

    @property
    def service_url(self) -> str:
        """The plain pulsar:// URL, or the pulsar+ssl:// one when brokerServicePort is off."""
        return self.config.broker_service_url or self.service_url_tls or ""

    @property
    def web_service_url(self) -> str:
        """http://<advertised host>:<web port> (the bound port once started); the https:// URL
        when webServicePort is off."""
        if self.config.web_service_port == PORT_OFF:
            return self.web_service_url_tls or ""
        return f"http://{self.config.advertised_host}:{self.web.port or self.config.web_service_port}"

    @property
    def service_url_tls(self) -> str | None:
        """pulsar+ssl://<advertised host>:<brokerServicePortTls> once started; None without that port."""
        return self.listeners.default_url_tls

    @property
    def web_service_url_tls(self) -> str | None:
        """https://<advertised host>:<webServicePortTls> once started; None without that port."""
        return f"https://{self.config.advertised_host}:{self.web.port_tls}" if self.web.port_tls else None

    async def __aenter__(self) -> "Broker":
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.stop()

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Take the data dir, load metadata, listen; raises DataDirLockedError, OSError (port in use)."""
        started = time.monotonic()
        await self.factory.start()
        try:
            self.metadata.load()
            self.schemas.load()
            # Generated producer names must not repeat across restarts (reconnecting clients keep theirs).
            self._instance_id = self.metadata.data.get("brokerInstance", -1) + 1
            self.metadata.data["brokerInstance"] = self._instance_id
            self.namespaces.create_defaults()
            for key, value in self.metadata.data.get("dynamicConfiguration", {}).items():
                apply_setting(self.config, key, value)  # changed through the admin API earlier
            await self.metadata.save()
            loop = asyncio.get_running_loop()
            await self._start_web_service()
            self.running = True  # before the binary port accepts: its first client is served at once
            if self.config.broker_service_port != PORT_OFF:
                self._server = await loop.create_server(
                    lambda: ServerConnection(self), self.config.bind_address, self.config.broker_service_port,
                    reuse_address=True,
                )
                self.config.broker_service_port = self._server.sockets[0].getsockname()[1]
            await self._start_tls_listener()
        except BaseException:
            self.running = False
            if self._server is not None:
                self._server.close()
            await self.web.stop()
            await self.factory.close()
            raise
        self._keepalive = loop.create_task(self._keepalive_loop())
        self.security.start()  # TLS certificate reloads
        self._periodic = [
            loop.create_task(self._every(lambda: self.config.message_expiry_check_interval_in_minutes * 60,
                                         self.expire_messages_by_ttl, "message expiry")),
            loop.create_task(self._every(lambda: self.config.backlog_quota_check_interval_in_seconds,
                                         self.check_backlog_quotas, "backlog quota")),
            loop.create_task(self._every(lambda: self.config.broker_service_compaction_monitor_interval_in_seconds,
                                         self.compact_topics_over_threshold, "compaction threshold")),
            loop.create_task(self._every(lambda: self.config.broker_delete_inactive_topics_frequency_seconds,
                                         self.inactive_topics.check, "inactive topics")),
            loop.create_task(self._every(lambda: self.config.stats_update_frequency_in_secs,
                                         self.update_stats_rates, "stats rates")),
        ]
        warn_if_advertised_loopback(self.config, self.replication.peers())
        await self.load_replicated_topics()
        try:  # after the binary port listens: function instances connect to it
            self.functions = await start_functions_worker(self)
        except BaseException:
            await self.stop()
            raise
        port = self.config.broker_service_port if self._server is not None else self.config.broker_service_port_tls
        log.info("minipulsar broker listening on %s:%s (advertised %s), data dir %s",
                 self.config.bind_address, port, self.service_url,
                 Path(self.config.data_dir).resolve())
        # Pulsar's PulsarService line, which Testcontainers modules and scripts wait for
        log.info("messaging service is ready, bootstrap_seconds=%.3f, bootstrap service port = %s, broker url= %s, "
                 "cluster=%s", time.monotonic() - started, self.web.port or self.web.port_tls, self.service_url,
                 self.config.cluster_name)
        # Pulsar's standalone sets public/default's policies (its replication clusters) once its
        # broker is up and logs this line, which Testcontainers' Go module and many set-ups wait for;
        # here public/default's policies were loaded (or created) above.
        if self.namespaces.exists(DEFAULT_NAMESPACE):
            log.info("Successfully updated the policies on namespace %s", DEFAULT_NAMESPACE)

    async def _start_tls_listener(self) -> None:
        """Listen on brokerServicePortTls when set; LOOKUP then also answers its pulsar+ssl:// URL."""
        port = self.security.broker_port_tls
        if port is None:
            return
        self._tls_server = await asyncio.get_running_loop().create_server(
            lambda: ServerConnection(self), self.config.bind_address, port, ssl=self.security.tls.context,
            reuse_address=True)
        port = self._tls_server.sockets[0].getsockname()[1]
        self.config.broker_service_port_tls = str(port)
        self.listeners.default_url_tls = f"pulsar+ssl://{self.config.advertised_host}:{port}"
        log.info("TLS binary listener on %s:%d", self.config.bind_address, port)

    async def _start_web_service(self) -> None:
        try:
            await self.web.start()
        except OSError as exc:
            raise OSError(exc.errno, f"webServicePort {self.config.web_service_port}: {exc.strerror}") from exc

    async def stop(self) -> None:
        """Stop accepting, close connections and topics; safe to call twice."""
        if not self.running:
            return
        if self.functions is not None:  # first: instances flush outputs and close consumers on a live broker
            await self.functions.stop()
            self.functions = None
        self.running = False
        if self._server is not None:
            self._server.close()
        if self._tls_server is not None:
            self._tls_server.close()
        self.security.stop()
        await self.web.stop()
        self._keepalive.cancel()
        for task in self._periodic:
            task.cancel()
        for connection in list(self.connections):
            connection.close()
        await asyncio.sleep(0)  # let connection_lost run for the closed transports
        await self._background.wait()
        # All at once: each ledger seals on its own writer thread, and one after the other 10,000
        # topics took longer than a container's stop grace period.
        topics = list(self.topics.values())
        results = await asyncio.gather(*(topic.close() for topic in topics), return_exceptions=True)
        for topic, result in zip(topics, results):
            if isinstance(result, Exception):
                log.error("closing %s failed: %s", topic.name, result)
        self.topics.clear()
        self.non_persistent_topics.clear()
        await self.replication.close()
        await self.factory.close()
        for server in (self._server, self._tls_server):
            if server is not None:
                await server.wait_closed()
        log.info("minipulsar broker stopped")

    async def _keepalive_loop(self) -> None:
        interval = self.config.keep_alive_interval_seconds
        while True:
            await asyncio.sleep(interval)
            for connection in list(self.connections):
                connection.keepalive_tick(interval)

    async def _every(self, seconds, check, what: str) -> None:
        """Run check() every seconds() seconds (read each time: the setting may change)."""
        while True:
            await asyncio.sleep(seconds())
            try:
                await check()
            except Exception:  # one bad topic must not end the checks for good
                log.exception("%s check failed", what)

    async def update_stats_rates(self) -> None:
        """The stats timer (Pulsar's BrokerService.updateRates): every loaded topic's producers,
        consumers, subscriptions and replicators compute their rates over the last interval."""
        update_rates(itertools.chain(self.topics.values(), self.non_persistent_topics.values()))

    async def expire_messages_by_ttl(self) -> int:
        """Acknowledge, on every subscription of every loaded topic whose namespace has a message
        TTL, what was published longer ago than the TTL; returns how many subscriptions moved.
        Source: Pulsar BrokerService.checkMessageExpiry."""
        moved = 0
        for topic in list(self.topics.values()):
            ttl = self.policies.message_ttl_seconds(topic.name.namespace_name)
            if ttl > 0:
                for subscription in list(topic.subscriptions.values()):
                    moved += await subscription.expire_messages(ttl)
        return moved

    async def compact_topics_over_threshold(self) -> int:
        """Start compacting every loaded topic whose bytes after its compaction horizon exceed
        brokerServiceCompactionThresholdInBytes (0 = off); returns how many started.
        Source: Pulsar BrokerService.checkCompaction / PersistentTopic.checkCompaction."""
        threshold = self.config.broker_service_compaction_threshold_in_bytes
        return sum(topic.compaction.check_threshold(threshold) for topic in list(self.topics.values()))

    async def check_backlog_quotas(self) -> None:
        """Enforce the backlog quotas on every loaded topic (Pulsar BrokerService.monitorBacklogQuota)."""
        await self.backlog_quotas.check_all(self.topics.values())

    async def apply_namespace_policies(self, namespace: str, policy: str) -> None:
        """The namespace's `policy` changed: its loaded topics take it up now; a change of its
        replication clusters also starts and stops replicators (which lists the stored topics)."""
        for topic in list(self.topics.values()):
            if topic.name.namespace_name == namespace:
                await topic.apply_policies()
        if policy == "replication":
            await self.reconfigure_replication()

    async def reconfigure_replication(self) -> None:
        """Clusters or replication policies changed: every loaded topic starts and stops its
        replicators to match, and stored topics of namespaces that now replicate are loaded."""
        for topic in list(self.topics.values()):
            await topic.replication.update()
        await self.load_replicated_topics()

    async def load_replicated_topics(self) -> None:
        """Load every stored topic of a replicated namespace: topics load lazily, on their first
        lookup, producer or consumer, but a replicated topic must run while nobody uses it here, or
        its replication backlog would wait for a client."""
        for storage_name in self.factory.list_names():
            name = TopicName.from_storage_name(storage_name)
            if name.domain == "persistent" and str(name) not in self.topics \
                    and self.replication.remotes_for(name.namespace_name):
                try:
                    await self.get_topic(name, create=False)
                except Exception:  # noqa: BLE001 - one bad topic must not stop the broker
                    log.exception("cannot load replicated topic %s", name)

    def spawn(self, coro) -> None:
        """Run a background coroutine the broker waits for at shutdown; errors are logged."""
        self._background.spawn(coro)

    # ---- topics ----------------------------------------------------------------------------
    async def get_topic(self, name: TopicName, create: bool,
                        explicit: bool = False) -> PersistentTopic | NonPersistentTopic:
        """The loaded topic `name`, opening or creating it: when create and allowAutoTopicCreation,
        or when explicit (the admin API creates it). Raises TopicNotFoundError, NotAllowedError
        (a non-persistent topic while enableNonPersistentTopics is off)."""
        if name.domain == "non-persistent":
            return self._non_persistent_topic(name, create, explicit)
        key = str(name)
        topic = self.topics.get(key)
        if topic is not None:
            return topic
        if not self.running:
            raise ServiceNotReadyError("broker is shutting down")
        async with self.topic_locks.hold(key):
            topic = self.topics.get(key)
            if topic is None:
                topic = await self._load_topic(name, create, explicit)
        return topic

    def _non_persistent_topic(self, name: TopicName, create: bool, explicit: bool) -> NonPersistentTopic:
        topic = self.non_persistent_topics.get(str(name))
        if topic is not None:
            return topic
        if not self.config.enable_non_persistent_topics:
            raise NotAllowedError(f"Non-persistent topics are not enabled (enableNonPersistentTopics): {name}")
        if not self.running:
            raise ServiceNotReadyError("broker is shutting down")
        self.namespaces.check(name)
        if not explicit and not (create and self.config.allow_auto_topic_creation):
            raise TopicNotFoundError(f"Topic {name} does not exist")
        topic = self.non_persistent_topics[str(name)] = NonPersistentTopic(self.topic_context, name)
        log.info("created non-persistent topic %s", name)
        return topic

    async def _load_topic(self, name: TopicName, create: bool, explicit: bool) -> PersistentTopic:
        exists = self.factory.exists(name.storage_name)
        if not exists:
            self.namespaces.check(name)
        if not exists and not explicit and not (create and self.config.allow_auto_topic_creation):
            raise TopicNotFoundError(f"Topic {name} does not exist")
        if not exists and not self._listed_partition(name):
            self.limits.check_new_topics(name, 1)  # TopicQuotaError
        ledger = await self.factory.open(name.storage_name, self.policies.retention(name.namespace_name))
        topic = PersistentTopic(self.topic_context, name, ledger)
        await topic.initialize()
        self.topics[str(name)] = topic
        if not exists:
            log.info("created topic %s", name)
        return topic

    async def partitions_of(self, name: TopicName) -> int:
        """Partition count of name (0 = non-partitioned); auto-creates partitioned metadata when
        allowAutoTopicCreationType is 'partitioned'."""
        count = self.partition_count(name)
        if count or name.partition_index >= 0 or self.factory.exists(name.storage_name):
            return count
        self.namespaces.check(name)
        config = self.config
        if config.allow_auto_topic_creation and config.allow_auto_topic_creation_type == "partitioned":
            self.limits.check_new_topics(name, config.default_num_partitions)  # TopicQuotaError
            self.metadata.data.setdefault("partitioned", {})[str(name)] = config.default_num_partitions
            await self.metadata.save()
            log.info("created partitioned topic %s with %d partitions", name, config.default_num_partitions)
            return config.default_num_partitions
        return 0

    def partition_count(self, name: TopicName) -> int:
        """Partitions in name's partitioned metadata; 0 for a partition or a non-partitioned topic."""
        if name.partition_index >= 0:
            return 0
        return self.metadata.data.get("partitioned", {}).get(str(name), 0)

    def _listed_partition(self, name: TopicName) -> bool:
        """A partition its partitioned topic's metadata already counts (list_topics lists it)."""
        return 0 <= name.partition_index < self.partition_count(name.partitioned_topic_name)

    def list_topics(self, namespace: str, domain: str = "persistent") -> list[str]:
        """Topics of namespace ('tenant/ns') in domain ("persistent": those stored; "non-persistent":
        those loaded), partitions listed by their own names."""
        if domain == "persistent":
            names = {str(t) for t in map(TopicName.from_storage_name, self.factory.list_names())
                     if t.namespace_name == namespace and t.domain == domain}
        else:
            names = {key for key, t in self.non_persistent_topics.items() if t.name.namespace_name == namespace}
        for full_name, count in self.metadata.data.get("partitioned", {}).items():
            topic = TopicName.parse(full_name)
            if topic.namespace_name == namespace and topic.domain == domain:
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
