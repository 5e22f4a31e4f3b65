"""Namespace policies: the settings a namespace overrides, stored in its Policies (the metadata
store's "namespaces" map, under Pulsar's Policies field names) and applied while the broker runs.

Each policy has the broker-wide setting it overrides; the effective value of a namespace is its
policy when set, else that setting. Applied live: deduplication is switched on or off for the
namespace's loaded topics, the PIP-299 pause and the per-consumer unacked limit are re-checked at
once, retention at once (a trim runs), the message TTL at the next expiry check (every messageExpiryCheckIntervalInMinutes), the
subscription types at the next SUBSCRIBE, the schema compatibility strategy and
isAllowAutoUpdateSchema at the next schema,
delayed delivery for dispatchers created afterwards, the limits on topics, producers and
consumers (broker/limits.py) at the next creation.
Source: Pulsar Policies, NamespacesBase, PersistentTopic.updateBrokerSubscriptionTypesEnabled /
checkMessageExpiry / isDeduplicationEnabled.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from minipulsar.broker.backlog_quota import QUOTA_TYPES, parse_quota
from minipulsar.broker.config import SCHEMA_STRATEGIES

if TYPE_CHECKING:
    from minipulsar.broker.config import BrokerConfig
    from minipulsar.broker.metadata_store import MetadataStore
    from minipulsar.broker.namespaces import Namespaces

log = logging.getLogger(__name__)

SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared", "Key_Failover")


class PolicyError(ValueError):
    """A policy value of the wrong shape or out of range; the message says which."""


def _int_at_least(low: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise PolicyError(f"expected an integer >= {low}, got {value!r}")
        return value
    return parse


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise PolicyError(f"expected true or false, got {value!r}")
    return value


def _subscription_types(value: Any) -> list[str] | None:
    """An empty list means the broker's setting (Pulsar stores an empty set on DELETE)."""
    if not isinstance(value, list) or not all(v in SUBSCRIPTION_TYPES for v in value):
        raise PolicyError(f"expected a list of {', '.join(SUBSCRIPTION_TYPES)}, got {value!r}")
    return list(dict.fromkeys(value)) or None


def _strategy(value: Any) -> str | None:
    """UNDEFINED means the broker's setting, as in Pulsar."""
    if value != "UNDEFINED" and value not in SCHEMA_STRATEGIES:
        raise PolicyError(f"expected UNDEFINED or one of {', '.join(SCHEMA_STRATEGIES)}, got {value!r}")
    return None if value == "UNDEFINED" else value


def _cluster_names(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PolicyError(f"expected a list of cluster names, got {value!r}")
    return sorted(set(value))


def _backlog_quotas(value: Any) -> dict | None:
    """{quota type: BacklogQuota}; an empty map means none (the broker's defaults)."""
    if not isinstance(value, dict) or not all(kind in QUOTA_TYPES for kind in value):
        raise PolicyError(f"expected a map of {', '.join(QUOTA_TYPES)} to BacklogQuota, got {value!r}")
    try:
        return {kind: parse_quota(quota) for kind, quota in value.items()} or None
    except ValueError as exc:
        raise PolicyError(str(exc)) from exc


def _retention(value: Any) -> dict:
    """RetentionPolicies; -1 = unlimited, and both 0 or both non-zero, as Pulsar validates."""
    fields = ("retentionTimeInMinutes", "retentionSizeInMB")
    if not isinstance(value, dict) or not all(isinstance(value.get(f), int) and value[f] >= -1 for f in fields):
        raise PolicyError(f'expected {{"retentionTimeInMinutes": int >= -1, "retentionSizeInMB": int >= -1}}, got {value!r}')
    if (value[fields[0]] == 0) != (value[fields[1]] == 0):
        raise PolicyError("retentionTimeInMinutes and retentionSizeInMB must both be 0 or both be non-zero")
    return {f: value[f] for f in fields}


def _delayed_delivery(value: Any) -> dict:
    """maxDeliveryDelayInMillis is accepted only as 0 (no maximum): no maximum is enforced here."""
    if not isinstance(value, dict) or not isinstance(value.get("active"), bool):
        raise PolicyError(f'expected {{"active": bool, "tickTime": ms}}, got {value!r}')
    tick = value.get("tickTime", 1000)
    _int_at_least(1)(tick)
    if value.get("maxDeliveryDelayInMillis", 0) != 0:
        raise PolicyError("maxDeliveryDelayInMillis is not supported; only 0 (no maximum) is accepted")
    return {"active": value["active"], "tickTime": tick}


@dataclass(frozen=True)
class Policy:
    """field: the Policies JSON field; parse: checks a value (raises PolicyError) and returns it."""

    field: str
    parse: Callable[[Any], Any]


POLICIES = {
    "messageTTL": Policy("message_ttl_in_seconds", _int_at_least(0)),
    "deduplication": Policy("deduplicationEnabled", _bool),
    "subscriptionTypesEnabled": Policy("subscription_types_enabled", _subscription_types),
    "maxUnackedMessagesPerConsumer": Policy("max_unacked_messages_per_consumer", _int_at_least(0)),
    "dispatcherPauseOnAckStatePersistent": Policy("dispatcherPauseOnAckStatePersistentEnabled", _bool),
    "schemaCompatibilityStrategy": Policy("schema_compatibility_strategy", _strategy),
    "delayedDelivery": Policy("delayed_delivery_policies", _delayed_delivery),
    "retention": Policy("retention_policies", _retention),
    "isAllowAutoUpdateSchema": Policy("is_allow_auto_update_schema", _bool),
    "replication": Policy("replication_clusters", _cluster_names),
    "backlogQuota": Policy("backlog_quota_map", _backlog_quotas),
    "maxTopicsPerNamespace": Policy("max_topics_per_namespace", _int_at_least(0)),
    "maxProducersPerTopic": Policy("max_producers_per_topic", _int_at_least(0)),
    "maxConsumersPerSubscription": Policy("max_consumers_per_subscription", _int_at_least(0)),
}


class NamespacePolicies:
    """The effective policies of every namespace: its own where set, else the broker's settings.

    namespaces: where the Policies live; metadata: the store they are saved in; peers(): remote
    cluster name -> service URL (replication clusters must be among them); applied(namespace,
    policy): awaited after a change is stored, so loaded topics take it up."""

    def __init__(self, namespaces: "Namespaces", config: "BrokerConfig", metadata: "MetadataStore",
                 peers: Callable[[], dict[str, str]], applied: Callable[[str, str], Awaitable[None]]):
        self.namespaces = namespaces
        self.config = config
        self._metadata = metadata
        self._peers = peers
        self._applied = applied

    def get(self, namespace: str, name: str) -> Any:
        """The stored value of policy `name` (a key of POLICIES), None when the namespace has none."""
        policies = self.namespaces.policies(namespace) or {}
        return policies.get(POLICIES[name].field)

    async def set(self, namespace: str, name: str, value: Any) -> None:
        """Store and apply a policy; raises PolicyError for a bad value."""
        value = POLICIES[name].parse(value)
        if name == "replication":
            self._check_clusters(namespace, value)
        await self._store(namespace, name, value)

    def _check_clusters(self, namespace: str, clusters: list[str]) -> None:
        """Replication clusters must exist and be allowed for the tenant, as Pulsar checks."""
        local = self.config.cluster_name
        peers = self._peers()
        unknown = [c for c in clusters if c != local and c not in peers]
        if unknown:
            raise PolicyError(f"Invalid cluster id(s) {unknown}: no such cluster with a broker service URL")
        tenant = namespace.split("/", 1)[0]
        allowed = (self.namespaces.tenant_info(tenant) or {}).get("allowedClusters", [])
        refused = [c for c in clusters if c not in allowed]
        if refused:
            raise PolicyError(f"Cluster(s) {refused} not in the list of allowed clusters {allowed} of tenant {tenant}")

    async def remove(self, namespace: str, name: str) -> None:
        """Back to the broker's setting; dispatcherPauseOnAckStatePersistent stores false instead,
        as Pulsar does."""
        await self._store(namespace, name, False if name == "dispatcherPauseOnAckStatePersistent" else None)

    async def _store(self, namespace: str, name: str, value: Any) -> None:
        policies = dict(self.namespaces.policies(namespace) or {})
        if value is None:
            policies.pop(POLICIES[name].field, None)
        else:
            policies[POLICIES[name].field] = value
        self.namespaces.put_namespace(namespace, policies)
        await self._metadata.save()
        log.info("namespace %s: %s = %r", namespace, name, value)
        await self._applied(namespace, name)

    def _effective(self, namespace: str, name: str, default: Any) -> Any:
        value = self.get(namespace, name)
        return default if value is None else value

    # ---- effective values, read where they apply -------------------------------------------
    def message_ttl_seconds(self, namespace: str) -> int:
        """0 = no TTL (ttlDurationDefaultInSeconds)."""
        return self._effective(namespace, "messageTTL", self.config.ttl_duration_default_in_seconds)

    def deduplication_enabled(self, namespace: str) -> bool:
        return self._effective(namespace, "deduplication", self.config.broker_deduplication_enabled)

    def subscription_types_enabled(self, namespace: str) -> list[str]:
        default = [t.strip() for t in self.config.subscription_types_enabled.split(",") if t.strip()]
        return self._effective(namespace, "subscriptionTypesEnabled", default)

    def max_unacked_messages_per_consumer(self, namespace: str) -> int:
        """0 = no limit (maxUnackedMessagesPerConsumer)."""
        return self._effective(namespace, "maxUnackedMessagesPerConsumer",
                               self.config.max_unacked_messages_per_consumer)

    def dispatcher_pause_on_ack_state_persistent(self, namespace: str) -> bool:
        return self._effective(namespace, "dispatcherPauseOnAckStatePersistent",
                               self.config.dispatcher_pause_on_ack_state_persistent_enabled)

    def schema_compatibility_strategy(self, namespace: str) -> str:
        return self._effective(namespace, "schemaCompatibilityStrategy", self.config.schema_compatibility_strategy)

    def retention(self, namespace: str) -> tuple[int, int]:
        """(minutes, MB) (defaultRetentionTimeInMinutes, defaultRetentionSizeInMB)."""
        config = self.config
        value = self.get(namespace, "retention")
        if value is None:
            return config.default_retention_time_in_minutes, config.default_retention_size_in_mb
        return value["retentionTimeInMinutes"], value["retentionSizeInMB"]

    def allow_auto_update_schema(self, namespace: str) -> bool:
        """Whether producers may add schema versions (isAllowAutoUpdateSchemaEnabled)."""
        return self._effective(namespace, "isAllowAutoUpdateSchema", self.config.is_allow_auto_update_schema_enabled)

    def max_topics_per_namespace(self, namespace: str) -> int:
        """0 = no limit (maxTopicsPerNamespace)."""
        return self._effective(namespace, "maxTopicsPerNamespace", self.config.max_topics_per_namespace)

    def max_producers_per_topic(self, namespace: str) -> int:
        """0 = no limit (maxProducersPerTopic)."""
        return self._effective(namespace, "maxProducersPerTopic", self.config.max_producers_per_topic)

    def max_consumers_per_subscription(self, namespace: str) -> int:
        """0 = no limit (maxConsumersPerSubscription)."""
        return self._effective(namespace, "maxConsumersPerSubscription",
                               self.config.max_consumers_per_subscription)

    def delayed_delivery(self, namespace: str) -> tuple[bool, int]:
        """(active, tick time in ms) (delayedDeliveryEnabled, delayedDeliveryTickTimeMillis)."""
        config = self.config
        value = self._effective(namespace, "delayedDelivery", {
            "active": config.delayed_delivery_enabled, "tickTime": config.delayed_delivery_tick_time_millis})
        return value["active"], value["tickTime"]
