"""What PRODUCER and SUBSCRIBE ask for, in the domain's terms.

Handlers translate a command into one of these specs and hand it to the topic (attach_producer,
attach_consumer, subscribe), so the topic tree never sees a protobuf command and a unit test can
ask for a producer or consumer without a socket. Field meanings are CommandProducer's and
CommandSubscribe's (PulsarApi.proto).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import EARLIEST, Position


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    """What a PRODUCER command asks for. name None: the broker generates one; access_mode: the
    ProducerAccessMode (PIP-68); topic_epoch: the epoch a reconnecting exclusive producer brings
    (None: none); schema: the producer's Schema (None: none, or type None)."""

    producer_id: int
    name: str | None
    access_mode: int = api.Shared
    topic_epoch: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    schema: api.Schema | None = None


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """What a SUBSCRIBE asks for about the consumer itself. sub_type: CommandSubscribe.SubType;
    priority_level: lower is preferred (Pulsar); epoch: CommandSubscribe.consumer_epoch (None:
    absent); read_compacted: the compacted view first; key_shared_mode (AUTO_SPLIT 0 / STICKY 1),
    hash_ranges ((start, end) inclusive slots of STICKY) and allow_out_of_order: KeySharedMeta."""

    consumer_id: int
    name: str
    sub_type: int = api.CommandSubscribe.Exclusive
    priority_level: int = 0
    epoch: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    read_compacted: bool = False
    key_shared_mode: int = api.AUTO_SPLIT
    hash_ranges: tuple[tuple[int, int], ...] = ()
    allow_out_of_order: bool = False


@dataclass(frozen=True, slots=True)
class SubscriptionSpec:
    """What a SUBSCRIBE asks for about the subscription. durable: a cursor kept on disk, created at
    initial_position ("latest" | "earliest"); otherwise a reader's cursor whose first entry is start
    (inclusive; EARLIEST for the beginning, None for the end). replicate_state: PIP-33's tri-state
    replicate_subscription_state (None: not given)."""

    name: str
    durable: bool = True
    initial_position: str = "latest"
    start: Position | None = None
    replicate_state: bool | None = None

    @property
    def starts_at_earliest(self) -> bool:
        """Whether the subscription starts before every entry (a read_compacted consumer then reads
        the whole compacted view first)."""
        return self.initial_position == "earliest" if self.durable else self.start == EARLIEST
