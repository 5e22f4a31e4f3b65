"""Topic name normalisation as the client needs it (the client must not import broker/).

"my-topic" -> "persistent://public/default/my-topic"; "tenant/ns/t" -> "persistent://tenant/ns/t";
partitions are "<topic>-partition-<i>". Raises InvalidTopicName. Source: Pulsar TopicName.
"""
from __future__ import annotations

import re

from client.exceptions import InvalidTopicName

PARTITION_SUFFIX = "-partition-"
_PARTITION_RE = re.compile(r"^(.*)-partition-(\d+)$")


def normalize(name: str) -> str:
    """The fully qualified form of name; raises InvalidTopicName."""
    if not isinstance(name, str) or not name:
        raise InvalidTopicName(f"invalid topic name {name!r}")
    domain, sep, rest = name.partition("://")
    if not sep:
        domain, rest = "persistent", name
        parts = rest.split("/")
        if len(parts) == 1:
            parts = ["public", "default", parts[0]]
    else:
        parts = rest.split("/", 2)
    if domain not in ("persistent", "non-persistent") or len(parts) != 3 or not all(parts):
        raise InvalidTopicName(f"invalid topic name {name!r}")
    return f"{domain}://{parts[0]}/{parts[1]}/{parts[2]}"


def partition_name(topic: str, index: int) -> str:
    """'<topic>-partition-<index>'."""
    return f"{topic}{PARTITION_SUFFIX}{index}"


def partition_index(topic: str) -> int:
    """The partition index in a partition's name, -1 for any other topic."""
    match = _PARTITION_RE.match(topic)
    return int(match.group(2)) if match else -1
