"""Topic name normalisation for the client; parsing is shared with the broker in proto.topic_name.

"my-topic" -> "persistent://public/default/my-topic"; "tenant/ns/t" -> "persistent://tenant/ns/t";
partitions are "<topic>-partition-<i>". Raises InvalidTopicName. Source: Pulsar TopicName.
"""
from __future__ import annotations

from minipulsar.client.exceptions import InvalidTopicName
from minipulsar.proto.topic_name import PARTITION_SUFFIX, full_topic_name, partition_index, partition_name

__all__ = ["PARTITION_SUFFIX", "normalize", "partition_index", "partition_name"]


def normalize(name: str) -> str:
    """The fully qualified form of name; raises InvalidTopicName."""
    try:
        return full_topic_name(name)
    except ValueError as exc:
        raise InvalidTopicName(str(exc)) from None
