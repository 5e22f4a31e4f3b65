"""TopicContext: what the topic tree sees of its broker.

Topics, their subscriptions, dispatchers, producers and consumers are handed this object instead
of the Broker: exactly the settings, namespace policies, limits, budgets, stores and task spawner
they use, and nothing of the topic registry, the connections or the lifecycle, which stay the
Broker's (Pulsar's BrokerService). One context serves every topic of a broker; a unit test builds
its own from the same real parts, with no Broker and no socket.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Coroutine

if TYPE_CHECKING:
    from minipulsar.broker.backlog_quota import BacklogQuotas
    from minipulsar.broker.config import BrokerConfig
    from minipulsar.broker.dispatchers.held_entries import HeldBudget
    from minipulsar.broker.limits import TopicLimits
    from minipulsar.broker.metadata_store import MetadataStore
    from minipulsar.broker.namespace_policies import NamespacePolicies
    from minipulsar.broker.replication import ReplicationClients
    from minipulsar.broker.schema_registry import SchemaRegistry


@dataclass(frozen=True, slots=True)
class TopicContext:
    """config: the broker's settings (read at each use: some change at run time);
    policies: effective namespace policies; limits: maxProducersPerTopic /
    maxConsumersPerSubscription; held_budget: bytes all dispatchers may keep parsed for
    redelivery; metadata: the store of topic epochs and terminated topics; schemas: the schema
    registry producers and consumers are checked against; backlog_quotas: producer admission
    under backlog quotas; replication: remote clusters and their clients; spawn(coroutine): run
    in the background, awaited at broker shutdown, errors logged; new_producer_name(): Pulsar's
    generated producer name, unique across restarts."""

    config: "BrokerConfig"
    policies: "NamespacePolicies"
    limits: "TopicLimits"
    held_budget: "HeldBudget"
    metadata: "MetadataStore"
    schemas: "SchemaRegistry"
    backlog_quotas: "BacklogQuotas"
    replication: "ReplicationClients"
    spawn: Callable[[Coroutine], None]
    new_producer_name: Callable[[], str]

    @property
    def replicator_prefix(self) -> str:
        """Pulsar's replicatorPrefix: names replicator cursors and producers."""
        return self.config.replicator_prefix
