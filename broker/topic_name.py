"""Topic names: persistent://tenant/namespace/local-name, with Pulsar's short forms.

"my-topic" -> persistent://public/default/my-topic; "tenant/ns/my-topic" -> persistent://tenant/ns/my-topic.
A partition of a partitioned topic is "<name>-partition-<i>". Source: Pulsar TopicName.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from broker.errors import InvalidTopicNameError

PARTITION_SUFFIX = "-partition-"
_PARTITION_RE = re.compile(r"^(.*)-partition-(\d+)$")
_BAD_CHARS = re.compile(r"[\x00-\x1f/]")


@dataclass(frozen=True)
class TopicName:
    """A parsed, fully qualified topic name. partition_index is -1 for a non-partition topic."""

    domain: str
    tenant: str
    namespace: str
    local_name: str

    @classmethod
    def parse(cls, name: str) -> "TopicName":
        """Parse a full or short topic name; raises InvalidTopicNameError."""
        if not name or len(name) > 1024:
            raise InvalidTopicNameError(f"invalid topic name {name!r}")
        domain, sep, rest = name.partition("://")
        if not sep:
            domain, rest = "persistent", name
            parts = rest.split("/")
            if len(parts) == 1:
                parts = ["public", "default", parts[0]]
        else:
            parts = rest.split("/", 2)
        if domain not in ("persistent", "non-persistent"):
            raise InvalidTopicNameError(f"invalid topic domain in {name!r}")
        if len(parts) != 3 or not all(parts) or any(_BAD_CHARS.search(p) for p in parts[:2]):
            raise InvalidTopicNameError(f"invalid topic name {name!r}: expected tenant/namespace/topic")
        if _BAD_CHARS.search(parts[2].replace("/", "")) or ".." in parts[2]:
            raise InvalidTopicNameError(f"invalid characters in topic name {name!r}")
        return cls(domain, parts[0], parts[1], parts[2])

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace}/{self.local_name}"

    @property
    def namespace_name(self) -> str:
        return f"{self.tenant}/{self.namespace}"

    @property
    def partition_index(self) -> int:
        match = _PARTITION_RE.match(self.local_name)
        return int(match.group(2)) if match else -1

    @property
    def partitioned_topic_name(self) -> "TopicName":
        """The parent partitioned topic of a partition (itself for a non-partition)."""
        match = _PARTITION_RE.match(self.local_name)
        return TopicName(self.domain, self.tenant, self.namespace, match.group(1)) if match else self

    def partition(self, index: int) -> "TopicName":
        return TopicName(self.domain, self.tenant, self.namespace, f"{self.local_name}{PARTITION_SUFFIX}{index}")

    @property
    def storage_name(self) -> str:
        """The managed-ledger name: tenant/namespace/domain/local-name, as Pulsar names its ledgers."""
        return f"{self.tenant}/{self.namespace}/{self.domain}/{self.local_name}"

    @classmethod
    def from_storage_name(cls, name: str) -> "TopicName":
        tenant, namespace, domain, local = name.split("/", 3)
        return cls(domain, tenant, namespace, local)
