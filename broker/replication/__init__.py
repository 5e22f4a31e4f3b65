"""Geo-replication between broker instances and PIP-33 replicated subscriptions.

Modules: clusters (settings), clients (per broker: one client per remote cluster),
topic_replication (per topic: the hooks), replicator (copying entries to one remote cluster),
remote_producer (the bundled client's producer, sending stored entries), misdirection (refusing
and reporting a replicator that reached the wrong cluster), markers (marker entries),
snapshot_controller (the snapshot protocol), snapshot_cache (per-subscription snapshots).
See docs/replication.md.
"""
from minipulsar.broker.replication.clients import ReplicationClients
from minipulsar.broker.replication.markers import last_data_position
from minipulsar.broker.replication.topic_replication import REPLICATED_SUBSCRIPTION_PROPERTY, TopicReplication, is_replicated

__all__ = ["REPLICATED_SUBSCRIPTION_PROPERTY", "ReplicationClients", "TopicReplication", "is_replicated",
           "last_data_position"]
