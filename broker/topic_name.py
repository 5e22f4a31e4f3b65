"""Topic names in the broker: a parsed, fully qualified persistent://tenant/namespace/local-name.

Parsing and the short forms live in proto.topic_name (shared with the bundled client).
Source: Pulsar TopicName.
"""
from __future__ import annotations

from dataclasses import dataclass

from minipulsar.broker.errors import InvalidTopicNameError
from minipulsar.proto.topic_name import partition_index, partition_name, partitioned_base, split_topic_name


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
        try:
            return cls(*split_topic_name(name))
        except ValueError as exc:
            raise InvalidTopicNameError(str(exc)) from None

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace}/{self.local_name}"

    @property
    def namespace_name(self) -> str:
        return f"{self.tenant}/{self.namespace}"

    @property
    def partition_index(self) -> int:
        return partition_index(self.local_name)

    @property
    def partitioned_topic_name(self) -> "TopicName":
        """The parent partitioned topic of a partition (itself for a non-partition)."""
        return TopicName(self.domain, self.tenant, self.namespace, partitioned_base(self.local_name))

    def partition(self, index: int) -> "TopicName":
        return TopicName(self.domain, self.tenant, self.namespace, partition_name(self.local_name, index))

    @property
    def storage_name(self) -> str:
        """The managed-ledger name: tenant/namespace/domain/local-name, as Pulsar names its ledgers."""
        return f"{self.tenant}/{self.namespace}/{self.domain}/{self.local_name}"

    @classmethod
    def from_storage_name(cls, name: str) -> "TopicName":
        tenant, namespace, domain, local = name.split("/", 3)
        return cls(domain, tenant, namespace, local)
