"""Tenants and namespaces: which exist, with their TenantInfo and namespace policies.

Apache Pulsar refuses topics of a tenant or namespace that was never created (the namespace
policies node is missing) and answers TopicNotFound. Tenants and namespaces are created and
deleted through the admin API (broker/web/tenants.py) and kept in the broker's metadata store.
At start-up, as a Pulsar standalone does, the tenants `public` and `pulsar` and the namespaces
`public/default` and `pulsar/system` are created when missing, with those listed in
`extraNamespaces` (minipulsar's own key: "tenant/ns,tenant2/ns2"). A namespace that holds a topic on
disk or in the partitioned-topic metadata exists too (data written before namespaces were
recorded keeps working).
Source: Pulsar PulsarStandalone (default namespaces), TenantsBase / NamespacesBase, TenantInfo.
"""
from __future__ import annotations

import logging
import re
import struct
from typing import TYPE_CHECKING, Callable, Iterable

import crc32c

from minipulsar.broker.config import ConfigError
from minipulsar.broker.errors import TopicNotFoundError
from minipulsar.broker.topic_name import TopicName

if TYPE_CHECKING:
    from minipulsar.broker.metadata_store import MetadataStore

log = logging.getLogger(__name__)

DEFAULT_NAMESPACES = ("public/default", "pulsar/system")


def topics_hash(topics: Iterable[str]) -> str:
    """GET_TOPICS_OF_NAMESPACE topics_hash: CRC32C of the sorted names joined by ',', printed as
    Guava's HashCode.toString() does (the 4 bytes little-endian, lower-case hex).
    Source: Pulsar TopicList.calculateHash."""
    checksum = crc32c.crc32c(",".join(sorted(topics)).encode("utf-8"))
    return struct.pack("<I", checksum).hex()


def remove_domain_scheme(pattern: str) -> str:
    """'persistent://public/default/a.*' -> 'public/default/a.*' (Pulsar TopicList.removeTopicDomainScheme)."""
    if "://" not in pattern:
        return pattern
    prefix, rest = pattern.split("://", 1)
    for domain in ("non-persistent", "persistent"):
        if prefix.endswith(domain):
            return prefix[: -len(domain)] + rest
    raise ValueError(f"Does not support topic domain: {prefix}")


def filter_topics(topics: Iterable[str], pattern: str) -> list[str]:
    """Topics whose name without scheme (partitions by their parent's name) fully matches pattern.
    Raises re.error or ValueError for a bad pattern. Source: Pulsar TopicList.filterTopics."""
    regex = re.compile(remove_domain_scheme(pattern))
    kept = []
    for name in topics:
        parent = TopicName.parse(name).partitioned_topic_name
        if regex.fullmatch(str(parent).split("://", 1)[1]):
            kept.append(name)
    return kept


class Namespaces:
    """store: the broker's MetadataStore (keys "tenants" and "namespaces"); configured: the
    extraNamespaces value; cluster: this broker's cluster name (default allowedClusters);
    known_topic_namespaces(): namespaces of existing topics."""

    def __init__(self, store: "MetadataStore", configured: str, cluster: str,
                 known_topic_namespaces: Callable[[], Iterable[str]]):
        self._store = store
        self._cluster = cluster
        self._defaults = list(DEFAULT_NAMESPACES)
        for item in configured.split(","):
            item = item.strip().strip("/")
            if not item:
                continue
            if item.count("/") != 1 or not all(item.split("/")):
                raise ConfigError(f"config key extraNamespaces: {item!r} is not of the form tenant/namespace")
            self._defaults.append(item)
        self._known_topic_namespaces = known_topic_namespaces

    @property
    def _tenants(self) -> dict[str, dict]:
        return self._store.data.setdefault("tenants", {})

    @property
    def _namespaces(self) -> dict[str, dict]:
        return self._store.data.setdefault("namespaces", {})

    def create_defaults(self) -> bool:
        """Create the standalone tenants and namespaces that are missing; True when any was."""
        created = False
        for namespace in self._defaults:
            tenant = namespace.split("/", 1)[0]
            if tenant not in self._tenants:
                self._tenants[tenant] = new_tenant_info([self._cluster])
                created = True
            if namespace not in self._namespaces:
                self._namespaces[namespace] = {}
                created = True
        return created

    # ---- queries -------------------------------------------------------------------------
    def tenants(self) -> list[str]:
        return sorted(set(self._tenants) | {ns.split("/", 1)[0] for ns in self._all()})

    def tenant_info(self, tenant: str) -> dict | None:
        """TenantInfo {"adminRoles": [...], "allowedClusters": [...]}, None when unknown."""
        if tenant in self._tenants:
            return self._tenants[tenant]
        return new_tenant_info([self._cluster]) if self.tenant_exists(tenant) else None

    def namespaces_of(self, tenant: str) -> list[str]:
        return sorted(ns for ns in self._all() if ns.split("/", 1)[0] == tenant)

    def policies(self, namespace: str) -> dict | None:
        """The namespace's stored policies (Pulsar Policies fields), None when it does not exist."""
        if namespace in self._namespaces:
            return self._namespaces[namespace]
        return {} if self.exists(namespace) else None

    def exists(self, namespace: str) -> bool:
        """True when 'tenant/namespace' exists (created or holding topics)."""
        return namespace in self._namespaces or namespace in set(self._known_topic_namespaces())

    def tenant_exists(self, tenant: str) -> bool:
        return tenant in self._tenants or any(ns.split("/", 1)[0] == tenant for ns in self._all())

    def _all(self) -> set[str]:
        return set(self._namespaces) | set(self._known_topic_namespaces())

    def check(self, name: TopicName) -> None:
        """Raise TopicNotFoundError when the topic's tenant or namespace does not exist."""
        if self.exists(name.namespace_name):
            return
        if not self.tenant_exists(name.tenant):
            raise TopicNotFoundError(f"Tenant {name.tenant} does not exist (topic {name})")
        raise TopicNotFoundError(f"Namespace {name.namespace_name} does not exist (topic {name})")

    def check_namespace(self, namespace: str) -> None:
        """Raise TopicNotFoundError when 'tenant/namespace' does not exist."""
        if not self.exists(namespace):
            raise TopicNotFoundError(f"Namespace {namespace} does not exist")

    # ---- changes (the caller saves the store) ----------------------------------------------
    def put_tenant(self, tenant: str, info: dict) -> None:
        self._tenants[tenant] = info

    def remove_tenant(self, tenant: str) -> None:
        self._tenants.pop(tenant, None)

    def put_namespace(self, namespace: str, policies: dict) -> None:
        self._namespaces[namespace] = policies

    def remove_namespace(self, namespace: str) -> None:
        self._namespaces.pop(namespace, None)


def new_tenant_info(allowed_clusters: list[str], admin_roles: list[str] | None = None) -> dict:
    """Pulsar's TenantInfo JSON."""
    return {"adminRoles": list(admin_roles or []), "allowedClusters": list(allowed_clusters)}
