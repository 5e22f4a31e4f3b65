"""Tenants and namespaces: which 'tenant/namespace' names exist on this broker.

Apache Pulsar refuses topics of a tenant or namespace that was never created (the namespace
policies node is missing) and answers TopicNotFound. Until minipulsar has an admin API, the
namespaces that exist are:
  * `public/default` and `pulsar/system`, which a Pulsar standalone creates at start-up;
  * those listed in `extraNamespaces` (minipulsar's own key: "tenant/ns,tenant2/ns2");
  * any namespace that already holds a topic on disk or in the partitioned-topic metadata
    (data written before this check existed keeps working).
Source: Pulsar PulsarStandalone (default namespaces), NamespaceService / TopicResources checks.
"""
from __future__ import annotations

import logging
import re
import struct
from typing import Callable, Iterable

import crc32c

from minipulsar.broker.config import ConfigError
from minipulsar.broker.errors import TopicNotFoundError
from minipulsar.broker.topic_name import TopicName

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
    """configured: the extraNamespaces value; known_topic_namespaces(): namespaces of existing topics."""

    def __init__(self, configured: str, known_topic_namespaces: Callable[[], Iterable[str]]):
        self._configured = set(DEFAULT_NAMESPACES)
        for item in configured.split(","):
            item = item.strip().strip("/")
            if not item:
                continue
            if item.count("/") != 1 or not all(item.split("/")):
                raise ConfigError(f"config key extraNamespaces: {item!r} is not of the form tenant/namespace")
            self._configured.add(item)
        self._known_topic_namespaces = known_topic_namespaces

    def exists(self, namespace: str) -> bool:
        """True when 'tenant/namespace' exists (configured or holding topics)."""
        return namespace in self._configured or namespace in set(self._known_topic_namespaces())

    def tenant_exists(self, tenant: str) -> bool:
        return any(ns.split("/", 1)[0] == tenant for ns in self._all())

    def _all(self) -> set[str]:
        return self._configured | set(self._known_topic_namespaces())

    def check(self, name: TopicName) -> None:
        """Raise TopicNotFoundError when the topic's tenant or namespace does not exist."""
        if name.namespace_name in self._configured:
            return
        if self.exists(name.namespace_name):
            return
        if not self.tenant_exists(name.tenant):
            raise TopicNotFoundError(f"Tenant {name.tenant} does not exist (topic {name})")
        raise TopicNotFoundError(f"Namespace {name.namespace_name} does not exist (topic {name})")

    def check_namespace(self, namespace: str) -> None:
        """Raise TopicNotFoundError when 'tenant/namespace' does not exist."""
        if not self.exists(namespace):
            raise TopicNotFoundError(f"Namespace {namespace} does not exist")
