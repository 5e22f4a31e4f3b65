"""A real topic, ledger, cursor, subscription and dispatcher, driven without a broker or sockets.

The topic gets a TopicContext built from the same real parts a Broker builds it from (settings,
namespace policies over a metadata store, limits, schema registry, backlog quotas, replication
clients with no peers). Only the client side is a stand-in: RecordingConnection keeps the MESSAGE
frames a connection would have written, so tests can assert exactly what each consumer received.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from pathlib import Path

from minipulsar.broker.background import BackgroundTasks
from minipulsar.broker.backlog_quota import BacklogQuotas
from minipulsar.broker.config import build_config
from minipulsar.broker.consumer import Consumer
from minipulsar.broker.dispatchers.held_entries import HeldBudget
from minipulsar.broker.limits import TopicLimits
from minipulsar.broker.metadata_store import MetadataStore
from minipulsar.broker.namespace_policies import NamespacePolicies
from minipulsar.broker.namespaces import Namespaces
from minipulsar.broker.replication import ReplicationClients
from minipulsar.broker.schema_registry import SchemaRegistry
from minipulsar.broker.specs import ConsumerSpec, SubscriptionSpec
from minipulsar.broker.topic import PersistentTopic
from minipulsar.broker.topic_context import TopicContext
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload
from minipulsar.storage import ManagedLedgerFactory, Position


def topic_context(folder: Path, **settings) -> tuple[TopicContext, BackgroundTasks]:
    """A TopicContext of real parts over folder (broker.conf settings as keyword arguments), and
    the tasks it spawns (wait for them before the loop ends)."""
    config = build_config({"dataDir": str(folder), **settings})
    metadata = MetadataStore(folder / "metadata" / "partitioned-topics.json")
    namespaces = Namespaces(metadata, config.extra_namespaces, config.cluster_name, set)
    namespaces.create_defaults()
    tasks = BackgroundTasks("harness", logging.getLogger(__name__))

    async def applied(namespace: str, policy: str) -> None:  # no loaded topics to tell here
        return None

    policies = NamespacePolicies(namespaces, config, metadata, peers=dict, applied=applied)
    names = itertools.count()
    context = TopicContext(
        config=config, policies=policies, limits=TopicLimits(policies, lambda namespace: [], config.replicator_prefix),
        held_budget=HeldBudget(lambda: (config.managed_ledger_cache_size_mb << 20) // 2), metadata=metadata,
        schemas=SchemaRegistry(config.data_dir, lambda name: policies.schema_compatibility_strategy(name.namespace_name),
                               lambda name: policies.allow_auto_update_schema(name.namespace_name)),
        backlog_quotas=BacklogQuotas(policies, config),
        replication=ReplicationClients(config, metadata, lambda namespace: None, lambda: None, tasks.spawn),
        spawn=tasks.spawn, new_producer_name=lambda: f"harness-{next(names)}")
    return context, tasks


class RecordingConnection:
    """Stands in for a client connection (ConsumerConnection and ProducerConnection): records what
    the broker sends. consumer: the one Consumer using it (what a real connection finds by consumer
    id); receipts: (producer id, sequence id, position) of each SEND_RECEIPT, send_errors: (producer
    id, sequence id, ServerError) of each SEND_ERROR, in the order written; pending_publishes: SENDs
    counted in by publish_started and not yet out again."""

    def __init__(self, name: str):
        self.peer_address = f"test:{name}"
        self.closed = False
        self.received: list[Position] = []
        self.writable = True
        self.consumer: Consumer | None = None
        self.receipts: list[tuple[int, int, Position]] = []
        self.send_errors: list[tuple[int, int, int]] = []
        self.pending_publishes = 0
        self.closed_producers: list[int] = []

    def publish_started(self, size: int) -> None:
        self.pending_publishes += 1

    def publish_finished(self, size: int) -> None:
        self.pending_publishes -= 1

    def send_receipt(self, producer_id, sequence_id, highest_sequence_id, position) -> None:
        self.receipts.append((producer_id, sequence_id, position))

    def send_send_error(self, producer_id, sequence_id, error, message) -> None:
        self.send_errors.append((producer_id, sequence_id, error))

    def close_producer_by_broker(self, producer_id) -> None:
        self.closed_producers.append(producer_id)

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
    """topic: a PersistentTopic on a real managed ledger in folder, with a TopicContext of real
    parts and no Broker."""

    def __init__(self, folder: Path, **settings):
        self.context, self._tasks = topic_context(folder, **settings)
        self.factory = ManagedLedgerFactory(folder / "ledgers", self.context.config.ledger_config())
        self.topic: PersistentTopic | None = None
        self._next_id = 0

    async def open(self, rollovers: int = 0) -> "Harness":
        """Open the topic; each rollover closes and reopens it first, so ledger ids start higher."""
        name = TopicName.parse("persistent://public/default/harness")
        await self.factory.start()
        for _ in range(rollovers):
            ledger = await self.factory.open(name.storage_name)
            await ledger.open_cursor("keep", "earliest")  # keeps the (empty) ledgers from trimming
            await ledger.close()
        ledger = await self.factory.open(name.storage_name)
        self.topic = PersistentTopic(self.context, name, ledger)
        return self

    async def close(self) -> None:
        await self.topic.close()
        await self._tasks.wait()
        await self.factory.close()

    async def publish(self, key: str | None) -> Position:
        self._next_id += 1
        return await self.topic.publish(entry_bytes(key, self._next_id))

    async def subscription(self, name: str = "sub"):
        return await self.topic.subscribe(SubscriptionSpec(name, initial_position="earliest"))

    def consumer(self, subscription, name: str, sub_type: int, permits: int = 1000, **spec) -> Consumer:
        """A consumer built as SUBSCRIBE builds one (spec: ConsumerSpec fields), holding permits."""
        self._next_id += 1
        connection = RecordingConnection(name)
        consumer = connection.consumer = Consumer(
            subscription, connection, ConsumerSpec(self._next_id, name, sub_type, **spec))
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
