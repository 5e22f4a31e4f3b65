"""Option enums and policy objects, named as in the official `pulsar` package.

Enum values equal the protocol's where the protocol has one (CompressionType, ConsumerType =
CommandSubscribe.SubType, InitialPosition, KeySharedMode). ConsumerType.KeyFailover (4) is
minipulsar's own subscription type.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from client.exceptions import InvalidConfiguration
from proto import PulsarApi_pb2 as api


class CompressionType(enum.IntEnum):
    NONE = api.NONE
    LZ4 = api.LZ4
    ZLib = api.ZLIB
    ZSTD = api.ZSTD
    SNAPPY = api.SNAPPY


class ConsumerType(enum.IntEnum):
    Exclusive = api.CommandSubscribe.Exclusive
    Shared = api.CommandSubscribe.Shared
    Failover = api.CommandSubscribe.Failover
    KeyShared = api.CommandSubscribe.Key_Shared
    KeyFailover = api.CommandSubscribe.Key_Failover


class InitialPosition(enum.IntEnum):
    Latest = api.CommandSubscribe.Latest
    Earliest = api.CommandSubscribe.Earliest


class BatchingType(enum.IntEnum):
    """Default: one batch for all messages; KeyBased: one batch per key (ordering key, else partition key)."""

    Default = 0
    KeyBased = 1


class PartitionsRoutingMode(enum.IntEnum):
    """How a partitioned producer picks a partition for messages without a partition key."""

    UseSinglePartition = 0
    RoundRobinDistribution = 1


class KeySharedMode(enum.IntEnum):
    AutoSplit = api.AUTO_SPLIT
    Sticky = api.STICKY


@dataclass
class ConsumerKeySharedPolicy:
    """Key_Shared options: mode, allow_out_of_order_delivery, and sticky_ranges [(start, end)]
    inclusive in [0, 65535] (Sticky mode only). Source: C++ KeySharedPolicy."""

    key_shared_mode: KeySharedMode = KeySharedMode.AutoSplit
    allow_out_of_order_delivery: bool = False
    sticky_ranges: list[tuple[int, int]] | None = None

    def __post_init__(self):
        for start, end in self.sticky_ranges or ():
            if not 0 <= start <= end <= 65535:
                raise InvalidConfiguration(f"sticky range ({start}, {end}) must lie in [0, 65535]")
        if self.key_shared_mode == KeySharedMode.Sticky and not self.sticky_ranges:
            raise InvalidConfiguration("Sticky mode needs sticky_ranges")

    def to_proto(self) -> api.KeySharedMeta:
        meta = api.KeySharedMeta(keySharedMode=int(self.key_shared_mode),
                                 allowOutOfOrderDelivery=self.allow_out_of_order_delivery)
        if self.key_shared_mode == KeySharedMode.Sticky:
            for start, end in self.sticky_ranges:
                meta.hashRanges.add(start=start, end=end)
        return meta


@dataclass
class ConsumerDeadLetterPolicy:
    """After max_redeliver_count redeliveries a message goes to dead_letter_topic (default
    '<topic>-<subscription>-DLQ') instead of back to the consumer. Source: Java DeadLetterPolicy."""

    max_redeliver_count: int
    dead_letter_topic: str | None = None
    initial_subscription_name: str | None = None

    def __post_init__(self):
        if self.max_redeliver_count < 1:
            raise InvalidConfiguration("max_redeliver_count must be >= 1")
