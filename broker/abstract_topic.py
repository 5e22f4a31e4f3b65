"""AbstractTopic: what persistent and non-persistent topics share: attaching producers and consumers.

Producers by name:
a producer name is unique on a topic while connected (ProducerBusyError otherwise), and a leaving
producer also leaves the topic's access-mode bookkeeping. Producers count what they publish; the
topic's msgInCounter / bytesInCounter are their sums plus what producers that left had counted.
Attaching a producer runs Pulsar's checks in Pulsar's order: termination, backlog quota, schema,
the name, the producer limit, then the access mode (ServerCnx.handleProducer, AbstractTopic.addProducer).
Attaching a consumer checks its schema, opens the subscription (a durable cursor or a reader's)
and admits the consumer to it (subscription types, limits, exclusivity; ServerCnx.handleSubscribe,
PersistentTopic.subscribe). Source: Pulsar AbstractTopic (addProducer, removeProducer,
msgInCounter, bytesInCounter).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from minipulsar.broker.consumer import Consumer
from minipulsar.broker.errors import NotAllowedError, ProducerBusyError
from minipulsar.broker.message_id import INT64_MAX
from minipulsar.broker.producer import Producer
from minipulsar.broker.specs import ConsumerSpec, ProducerSpec
from minipulsar.broker.stats_shapes import average_size
from minipulsar.proto import PulsarApi_pb2 as api

if TYPE_CHECKING:
    from minipulsar.broker.access_modes import ProducerAccess
    from minipulsar.broker.connection_protocols import ConsumerConnection, ProducerConnection
    from minipulsar.broker.specs import SubscriptionSpec
    from minipulsar.broker.topic_context import TopicContext


class AbstractTopic:
    """Base of PersistentTopic and NonPersistentTopic. context: what the topic sees of its broker;
    `producers` (name -> Producer) starts empty. The subclasses set `name`, `access`
    (ProducerAccess), `deduplication` and `persistent`, and define `check_not_terminated()`,
    `is_idle()`, `subscribe()` and `consumer_closed()`."""

    # Slots here and in both kinds of topic: with a thousand topics every SEND and every group's
    # report touch a topic few of whose fields are still in the processor's caches, and a slot is
    # one memory access less than an instance dict's values (docs/performance.md, "Counting
    # instead of timing, and slots").
    __slots__ = ("producers", "access", "context", "last_active", "_removed_msg_in", "_removed_bytes_in",
                 "_removed_msg_out", "_removed_bytes_out")

    producers: dict[str, "Producer"]
    access: "ProducerAccess"
    context: "TopicContext"
    last_active: float  # time.monotonic() when last seen in use (broker/inactive_topics.py)

    def __init__(self, context: "TopicContext") -> None:
        self.context = context
        self.producers = {}
        self.last_active = time.monotonic()  # broker/inactive_topics.py
        self._removed_msg_in = self._removed_bytes_in = 0  # msgInCounter / bytesInCounter of producers that left
        self._removed_msg_out = self._removed_bytes_out = 0  # msgOutCounter / bytesOutCounter of removed subscriptions

    @property
    def msg_in_counter(self) -> int:
        """Messages published since the topic loaded (Pulsar's msgInCounter)."""
        return self._removed_msg_in + sum(p.msg_in for p in self.producers.values())

    @property
    def bytes_in_counter(self) -> int:
        """Bytes published since the topic loaded (Pulsar's bytesInCounter)."""
        return self._removed_bytes_in + sum(p.bytes_in for p in self.producers.values())

    def traffic_stats(self, replication: dict) -> dict:
        """The TopicStats fields both kinds of topic compute alike, as Pulsar's getStats: in-rates
        summed over producers (replicators' producers included, listed under replication instead
        of publishers), out-rates over subscriptions and replicators, counters since load."""
        publishers = [p.stats() for p in self.producers.values()]
        subscriptions = {name: s.stats() for name, s in self.subscriptions.items()}
        rate_in = sum((p["msgRateIn"] for p in publishers), 0.0)
        throughput_in = sum((p["msgThroughputIn"] for p in publishers), 0.0)
        prefix = self.context.replicator_prefix + "."
        _add_inbound_replication(publishers, replication, prefix)
        return {
            "msgRateIn": rate_in,
            "msgThroughputIn": throughput_in,
            "msgRateOut": sum((s["msgRateOut"] for s in subscriptions.values()), 0.0)
            + sum((r["msgRateOut"] for r in replication.values()), 0.0),
            "msgThroughputOut": sum((s["msgThroughputOut"] for s in subscriptions.values()), 0.0)
            + sum((r["msgThroughputOut"] for r in replication.values()), 0.0),
            "bytesInCounter": self.bytes_in_counter,
            "msgInCounter": self.msg_in_counter,
            "bytesOutCounter": sum(s["bytesOutCounter"] for s in subscriptions.values()) + self._removed_bytes_out,
            "msgOutCounter": sum(s["msgOutCounter"] for s in subscriptions.values()) + self._removed_msg_out,
            "averageMsgSize": average_size(throughput_in, rate_in),
            "publishers": [p for p in publishers if not p["producerName"].startswith(prefix)],
            "waitingPublishers": len(self.access.waiting),
            "subscriptions": subscriptions,
            "replication": replication,
        }

    def keep_counters_of(self, subscription) -> None:
        """A subscription is removed: what it sent still counts in msgOutCounter / bytesOutCounter
        (Pulsar's msgOutFromRemovedSubscriptions)."""
        self._removed_msg_out += subscription.msg_out_counter
        self._removed_bytes_out += subscription.bytes_out_counter

    async def attach_producer(self, connection: "ProducerConnection", spec: ProducerSpec,
                              registered: Callable[[Producer], None],
                              queued: Callable[[Producer], None]) -> Producer | None:
        """The producer spec asks for, admitted to this topic; None when it or its connection
        closed while it was being admitted. registered(producer) runs once it exists (the
        connection can then close it), queued(producer) when a WaitForExclusive producer has to
        wait; when this raises, the caller forgets what registered() saw. Raises NotAllowedError, TopicTerminatedError, ProducerBlockedQuotaExceeded*,
        IncompatibleSchemaError, ProducerBusyError, ProducerFencedError."""
        context = self.context
        producer = Producer(self, connection, spec, spec.name or context.new_producer_name())
        self.check_not_terminated()  # TopicTerminatedError
        if self.persistent:
            await context.backlog_quotas.check_producer(self)  # ProducerBlockedQuotaExceeded*
        if self.deduplication is not None:
            producer.last_sequence_id = self.deduplication.last_sequence_id(producer.name)
        if spec.topic_epoch is not None and spec.topic_epoch > INT64_MAX:
            # the next epoch must still fit PRODUCER_SUCCESS (int64)
            raise NotAllowedError(f"topic_epoch {spec.topic_epoch} is out of range")
        if spec.schema is not None and spec.schema.type != api.Schema.Type.Value("None"):
            producer.schema_version = await context.schemas.add_or_get(self.name, spec.schema)  # IncompatibleSchema
        if connection.closed:
            return None
        if producer.name in self.producers:
            self.add_producer(producer)  # raises ProducerBusy before the access mode takes the topic
        registered(producer)
        producer.ready = False
        try:
            producer.topic_epoch = await self.access.admit(producer, lambda: queued(producer))
            if producer.closed or connection.closed:
                self.access.removed(producer)  # it left while the epoch was being written
                return None
            self.add_producer(producer)
        except BaseException:
            self.access.removed(producer)
            raise
        producer.ready = True
        return producer

    def add_producer(self, producer: "Producer") -> None:
        """Register producer; raises ProducerBusyError when its name is taken on this topic or the
        topic has maxProducersPerTopic producers (broker/limits.py)."""
        existing = self.producers.get(producer.name)
        if existing is not None and existing is not producer:
            raise ProducerBusyError(f"Producer with name '{producer.name}' is already connected to topic {self.name}")
        if existing is None:
            self.context.limits.check_producer_room(self, producer.name)
        self.producers[producer.name] = producer

    def remove_producer(self, producer: "Producer") -> None:
        if self.producers.get(producer.name) is producer:
            del self.producers[producer.name]
            self._removed_msg_in += producer.msg_in
            self._removed_bytes_in += producer.bytes_in
            self.last_active = time.monotonic()  # broker/inactive_topics.py
        self.access.removed(producer)

    async def attach_consumer(self, connection: "ConsumerConnection", subscription_spec: "SubscriptionSpec",
                              spec: ConsumerSpec, schema: api.Schema | None = None) -> Consumer | None:
        """The consumer spec asks for, attached to the subscription subscription_spec names (created
        when missing); None when its connection closed meanwhile. Raises IncompatibleSchemaError,
        NotAllowedError, ConsumerBusyError, ConsumerAssignError."""
        if schema is not None and schema.type != api.Schema.Type.Value("None"):
            await self.context.schemas.check_for_consumer(self.name, schema, self.is_idle())  # IncompatibleSchema
        subscription = await self.subscribe(subscription_spec, spec.sub_type, spec.read_compacted)
        consumer = Consumer(subscription, connection, spec)
        if connection.closed:
            return None
        try:
            subscription.add_consumer(consumer)
        except Exception:
            await self.consumer_closed(subscription)
            raise
        return consumer


REPLICATOR_NAME_DELIMITER = "-->"  # Pulsar's REPL_PRODUCER_NAME_DELIMITER: <prefix>.<from>--><to>


def _add_inbound_replication(publishers: list[dict], replication: dict, prefix: str) -> None:
    """A replicator producer of a remote cluster publishing here shows in that cluster's
    ReplicatorStats as msgRateIn, msgInCount, ... and inboundConnection, as in Pulsar."""
    for publisher in publishers:
        if not publisher["producerName"].startswith(prefix):
            continue
        remote = publisher["producerName"][len(prefix):].split(REPLICATOR_NAME_DELIMITER)[0]
        stats = replication.get(remote)
        if stats is not None:
            stats["msgRateIn"] += publisher["msgRateIn"]
            stats["msgThroughputIn"] += publisher["msgThroughputIn"]
            stats["msgInCount"] += publisher["msgInCounter"]
            stats["bytesInCount"] += publisher["bytesInCounter"]
            stats["inboundConnection"] = publisher["address"]
            stats["inboundConnectedSince"] = publisher["connectedSince"]
