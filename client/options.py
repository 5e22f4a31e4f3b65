"""Option enums and policy objects, named as in the official `pulsar` package.

Enum values equal the protocol's where the protocol has one (CompressionType, ConsumerType =
CommandSubscribe.SubType, InitialPosition, KeySharedMode). ConsumerType.KeyFailover (4) is
minipulsar's own subscription type. reject_unsupported() is how the factories refuse official
options the bundled client does not implement.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from minipulsar.client.exceptions import InvalidConfiguration
from minipulsar.proto import PulsarApi_pb2 as api


class CompressionType(enum.IntEnum):
    """Payload compression of a producer (the protocol's CompressionType): NONE, LZ4 (package lz4),
    ZLib (standard library), ZSTD (package zstandard), SNAPPY (package python-snappy)."""

    NONE = api.NONE
    LZ4 = api.LZ4
    ZLib = api.ZLIB
    ZSTD = api.ZSTD
    SNAPPY = api.SNAPPY


class ConsumerType(enum.IntEnum):
    """Subscription type (CommandSubscribe.SubType): Exclusive, Shared, Failover, KeyShared, and
    KeyFailover (minipulsar's SubType 4: key ranges, one active consumer per range)."""

    Exclusive = api.CommandSubscribe.Exclusive
    Shared = api.CommandSubscribe.Shared
    Failover = api.CommandSubscribe.Failover
    KeyShared = api.CommandSubscribe.Key_Shared
    KeyFailover = api.CommandSubscribe.Key_Failover


class InitialPosition(enum.IntEnum):
    """Where a new subscription starts: Latest (after the last message) or Earliest."""

    Latest = api.CommandSubscribe.Latest
    Earliest = api.CommandSubscribe.Earliest


class BatchingType(enum.IntEnum):
    """Default: one batch for all messages; KeyBased: one batch per key (ordering key, else partition key)."""

    Default = 0
    KeyBased = 1


class PartitionsRoutingMode(enum.IntEnum):
    """How a partitioned producer picks a partition for messages without a partition key:
    UseSinglePartition (one random partition for the producer's life) or RoundRobinDistribution."""

    UseSinglePartition = 0
    RoundRobinDistribution = 1


class HashingScheme(enum.IntEnum):
    """How a producer picks the partition of a keyed message (the C++ client's HashingScheme
    values; client.hashing): BoostHash (the official Python client's default), JavaStringHash (the
    Java client's default), Murmur3_32Hash."""

    BoostHash = 0
    JavaStringHash = 1
    Murmur3_32Hash = 2


class SubscriptionMode(enum.IntEnum):
    """Whether a consumer's subscription is kept (Java's SubscriptionMode): Durable (a cursor
    kept on disk) or NonDurable (a cursor that lives with its consumers, as a reader's)."""

    Durable = 0
    NonDurable = 1


class KeySharedMode(enum.IntEnum):
    """Key_Shared hash-range assignment (the protocol's KeySharedMode): AutoSplit (the broker
    splits the range) or Sticky (the consumer declares its ranges)."""

    AutoSplit = api.AUTO_SPLIT
    Sticky = api.STICKY


@dataclass
class ConsumerKeySharedPolicy:
    """Key_Shared options of a consumer, sent as SUBSCRIBE.keySharedMeta (Pulsar's KeySharedPolicy).

    Arguments:
        key_shared_mode (KeySharedMode): AutoSplit or Sticky. Default: AutoSplit.
        allow_out_of_order_delivery (bool): let a joining consumer receive keys at once, without
            the ordering guarantee of PIP-282. Default: False.
        sticky_ranges (list[tuple[int, int]] | None): hash ranges (start, end), inclusive, within
            [0, 65535]; required with Sticky, refused with AutoSplit. Default: None.

    Raises:
        InvalidConfiguration: a range lies outside [0, 65535] or has start > end, Sticky mode has no
            ranges, or AutoSplit mode has ranges.
    """

    key_shared_mode: KeySharedMode = KeySharedMode.AutoSplit
    allow_out_of_order_delivery: bool = False
    sticky_ranges: list[tuple[int, int]] | None = None

    def __post_init__(self):
        for start, end in self.sticky_ranges or ():
            if not 0 <= start <= end <= 65535:
                raise InvalidConfiguration(f"sticky range ({start}, {end}) must lie in [0, 65535]")
        if self.key_shared_mode == KeySharedMode.Sticky and not self.sticky_ranges:
            raise InvalidConfiguration("Sticky mode needs sticky_ranges")
        if self.key_shared_mode != KeySharedMode.Sticky and self.sticky_ranges:
            raise InvalidConfiguration("sticky_ranges apply only to key_shared_mode=KeySharedMode.Sticky")

    def to_proto(self) -> api.KeySharedMeta:
        """The KeySharedMeta of SUBSCRIBE (hash ranges only in Sticky mode)."""
        meta = api.KeySharedMeta(keySharedMode=int(self.key_shared_mode),
                                 allowOutOfOrderDelivery=self.allow_out_of_order_delivery)
        if self.key_shared_mode == KeySharedMode.Sticky:
            for start, end in self.sticky_ranges:
                meta.hashRanges.add(start=start, end=end)
        return meta


@dataclass
class ConsumerDeadLetterPolicy:
    """Where a message goes after too many redeliveries (Pulsar's DeadLetterPolicy).

    Arguments:
        max_redeliver_count (int): redeliveries after which the next redelivery publishes the
            message to the dead-letter topic instead (so it is delivered max_redeliver_count + 1
            times); at least 1. No default.
        dead_letter_topic (str | None): Default: None ('<topic>-<subscription>-DLQ').
        initial_subscription_name (str | None): subscription created on the dead-letter topic with
            its producer (PRODUCER.initial_subscription_name). Default: None (none).

    Raises:
        InvalidConfiguration: max_redeliver_count < 1.
    """

    max_redeliver_count: int
    dead_letter_topic: str | None = None
    initial_subscription_name: str | None = None

    def __post_init__(self):
        if self.max_redeliver_count < 1:
            raise InvalidConfiguration("max_redeliver_count must be >= 1")


def _is_default(value, default) -> bool:
    """True when value leaves an option at its default: None, a false value where the default is
    false too, or a value equal to the default (official enums compare by their int value)."""
    if value is None or value is default or (not value and not default):
        return True
    try:
        return bool(value == default) or int(value) == int(default)
    except (TypeError, ValueError):
        return False


def reject_unsupported(**options: tuple[object, object]) -> None:
    """Refuse official options the bundled client accepts but does not implement.

    Arguments:
        **options (tuple[object, object]): name=(value given, official default), one per option.

    Raises:
        InvalidConfiguration: naming the first option whose value is not its default.
    """
    for name, (value, default) in options.items():
        if not _is_default(value, default):
            raise InvalidConfiguration(
                f"{name}={value!r} is not supported by the bundled client (only the default {default!r})")
