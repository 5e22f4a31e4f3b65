"""Admission limits: connections in all and per client address, topics per namespace, producers
per topic, consumers per subscription.

Each refusal carries the error Pulsar gives for it, so clients behave as they do against Pulsar:
- brokerMaxConnections / brokerMaxConnectionsPerIp: ERROR NotAllowedError with request id -1
  before CONNECT, then close (ServerCnx.channelActive, ConnectionController);
- maxTopicsPerNamespace: "Exceed maximum number of topics in namespace." as NotAllowedError on the
  binary protocol and 412 over REST (BrokerService.checkMaxTopicsPerNamespace); partitions count
  one each, as in Pulsar;
- maxProducersPerTopic: ProducerBusy "Topic reached max producers limit"; replicator producers
  are not counted (AbstractTopic.isProducersExceeded);
- maxConsumersPerSubscription: ConsumerBusy "Subscription reached max consumers limit"
  (AbstractTopic.isConsumersExceededOnSubscription);
- maxConcurrentLookupRequest: a PARTITIONED_METADATA past it is answered TooManyRequests "Failed
  due to too many pending lookup requests", which clients retry (ServerCnx lookupSemaphore). LOOKUP
  is answered at once here, so it never waits and never counts.
0 turns a limit off (Pulsar's default). The last three are also namespace policies of those names.
"""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Callable

from minipulsar.broker.errors import ConsumerBusyError, ProducerBusyError, TopicQuotaError
from minipulsar.broker.topic_name import TopicName

if TYPE_CHECKING:
    from minipulsar.broker.namespace_policies import NamespacePolicies


class ConnectionLimits:
    """Counts open connections by client address (the host part of peer_address)."""

    def __init__(self, max_connections: int, max_per_ip: int):
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self._by_host: collections.Counter[str] = collections.Counter()
        self._total = 0

    def admit(self, host: str) -> str | None:
        """Count a new connection from host; the refusal's reason (and nothing counted) when a
        limit is reached."""
        if self.max_connections > 0 and self._total >= self.max_connections:
            return "Reached the maximum number of connections"
        if self.max_per_ip > 0 and self._by_host[host] >= self.max_per_ip:
            return f"Reached the maximum number of connections on address {host}"
        self._total += 1
        self._by_host[host] += 1
        return None

    def release(self, host: str) -> None:
        """An admitted connection closed."""
        self._total -= 1
        self._by_host[host] -= 1
        if not self._by_host[host]:
            del self._by_host[host]


class LookupPermits:
    """Lookups being answered at once, broker-wide; limit: maxConcurrentLookupRequest."""

    def __init__(self, limit: int):
        self.limit = limit
        self.in_flight = 0

    def try_acquire(self) -> bool:
        """Take a permit; False (nothing taken) when limit lookups are in flight."""
        if self.in_flight >= self.limit:
            return False
        self.in_flight += 1
        return True

    def release(self) -> None:
        self.in_flight -= 1


class TopicLimits:
    """The per-namespace, per-topic and per-subscription limits, read from the namespace's policy
    or else the broker's setting at each check (both may change while the broker runs).
    list_topics(namespace): the namespace's persistent topics, partitions by their own names;
    replicator_prefix: Pulsar's replicatorPrefix, which names the producers that never count."""

    def __init__(self, policies: "NamespacePolicies", list_topics: Callable[[str], list[str]],
                 replicator_prefix: str):
        self.policies = policies
        self._list_topics = list_topics
        self._replicator_prefix = replicator_prefix + "."

    def check_new_topics(self, name: TopicName, count: int) -> None:
        """count persistent topics (1, or a partitioned topic's partitions) are about to be
        created in name's namespace; raises TopicQuotaError when that passes maxTopicsPerNamespace."""
        namespace = name.namespace_name
        limit = self.policies.max_topics_per_namespace(namespace)
        if limit > 0 and len(self._list_topics(namespace)) + count > limit:
            raise TopicQuotaError("Exceed maximum number of topics in namespace.")

    def check_producer_room(self, topic, producer_name: str) -> None:
        """Raises ProducerBusyError when topic has maxProducersPerTopic producers of users
        (replicator producers, named with replicatorPrefix, neither count nor are refused)."""
        prefix = self._replicator_prefix
        if producer_name.startswith(prefix):
            return
        limit = self.policies.max_producers_per_topic(topic.name.namespace_name)
        if limit > 0 and sum(not name.startswith(prefix) for name in topic.producers) >= limit:
            raise ProducerBusyError("Topic reached max producers limit")

    def check_consumer_room(self, subscription) -> None:
        """Raises ConsumerBusyError when subscription has maxConsumersPerSubscription consumers."""
        limit = self.policies.max_consumers_per_subscription(subscription.topic.name.namespace_name)
        if limit > 0 and len(subscription.consumers) >= limit:
            raise ConsumerBusyError("Subscription reached max consumers limit")
