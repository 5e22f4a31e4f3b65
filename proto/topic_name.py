"""Topic names as the protocol carries them: persistent://tenant/namespace/local-name.

Short forms expand as Pulsar's TopicName does: "my-topic" -> persistent://public/default/my-topic,
"tenant/ns/my-topic" -> persistent://tenant/ns/my-topic. A partition of a partitioned topic is
"<name>-partition-<i>". Shared by the broker and the bundled client; errors are ValueError, which
each side turns into its own exception type.
"""
from __future__ import annotations

import re

PARTITION_SUFFIX = "-partition-"
_PARTITION_RE = re.compile(r"^(.*)-partition-(\d+)$")
_BAD_CHARS = re.compile(r"[\x00-\x1f]")
DOMAINS = ("persistent", "non-persistent")


def split_topic_name(name: str) -> tuple[str, str, str, str]:
    """(domain, tenant, namespace, local name) of a full or short name; raises ValueError."""
    if not isinstance(name, str) or not name or len(name) > 1024:
        raise ValueError(f"invalid topic name {name!r}")
    domain, sep, rest = name.partition("://")
    if not sep:
        domain, rest = "persistent", name
        parts = rest.split("/")
        if len(parts) == 1:
            parts = ["public", "default", parts[0]]
    else:
        parts = rest.split("/", 2)
    if domain not in DOMAINS:
        raise ValueError(f"invalid topic domain in {name!r}")
    if len(parts) != 3 or not all(parts) or "/" in parts[0] + parts[1]:
        raise ValueError(f"invalid topic name {name!r}: expected tenant/namespace/topic")
    if _BAD_CHARS.search(name) or ".." in parts[2]:
        raise ValueError(f"invalid characters in topic name {name!r}")
    return domain, parts[0], parts[1], parts[2]


def full_topic_name(name: str) -> str:
    """'domain://tenant/namespace/local-name' of a full or short name; raises ValueError."""
    domain, tenant, namespace, local = split_topic_name(name)
    return f"{domain}://{tenant}/{namespace}/{local}"


def partition_index(name: str) -> int:
    """The partition index in a partition's (local or full) name, -1 for any other topic."""
    match = _PARTITION_RE.match(name)
    return int(match.group(2)) if match else -1


def partitioned_base(name: str) -> str:
    """The partitioned topic a partition belongs to (name itself when it is not a partition)."""
    match = _PARTITION_RE.match(name)
    return match.group(1) if match else name


def partition_name(topic: str, index: int) -> str:
    """'<topic>-partition-<index>'."""
    return f"{topic}{PARTITION_SUFFIX}{index}"
