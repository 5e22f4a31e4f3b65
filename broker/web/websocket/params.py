"""The query parameters of a WebSocket session, read as Pulsar's handlers read them.

Integers parse as Java's Integer.parseInt / Long.parseLong (an optional sign and digits, within
range), booleans as Boolean.parseBoolean ("true" in any case; anything else is false), enums by
their exact Java names; the first value of a repeated parameter counts. Each function returns the
keyword arguments of the bundled client's factory; a bad value raises InvalidParam with Pulsar's
message (answered 400 "Invalid query params: ..."). Defaults are Pulsar's WebSocket defaults, which
are the Java client's: batching off, SinglePartition routing, JavaStringHash, a producer queue that
refuses rather than blocks when full, receiverQueueSize at most 1000.
Source: Pulsar ProducerHandler.getProducerBuilder, ConsumerHandler.getConsumerConfiguration,
ReaderHandler (getReceiverQueueSize, getMessageId).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from minipulsar.broker.web.websocket.formats import decode_message_id
from minipulsar.client import (CompressionType, ConsumerDeadLetterPolicy, ConsumerType, HashingScheme,
                               InitialPosition, MessageId, PartitionsRoutingMode, SubscriptionMode)

MAX_RECEIVER_QUEUE_SIZE = 1000  # Pulsar caps a WebSocket consumer's or reader's queue here
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT_RANGE, _LONG_RANGE = 1 << 31, 1 << 63

SUBSCRIPTION_TYPES = {"Exclusive": ConsumerType.Exclusive, "Shared": ConsumerType.Shared,
                      "Failover": ConsumerType.Failover, "Key_Shared": ConsumerType.KeyShared,
                      "Key_Failover": ConsumerType.KeyFailover}  # the last one is minipulsar's own
SUBSCRIPTION_MODES = {"Durable": SubscriptionMode.Durable, "NonDurable": SubscriptionMode.NonDurable}
INITIAL_POSITIONS = {"Latest": InitialPosition.Latest, "Earliest": InitialPosition.Earliest}
# CustomPartition needs a Java router class: Pulsar ignores it and keeps SinglePartition.
ROUTING_MODES = {"SinglePartition": PartitionsRoutingMode.UseSinglePartition,
                 "RoundRobinPartition": PartitionsRoutingMode.RoundRobinDistribution, "CustomPartition": None}
COMPRESSION_TYPES = {"NONE": CompressionType.NONE, "LZ4": CompressionType.LZ4, "ZLIB": CompressionType.ZLib,
                     "ZSTD": CompressionType.ZSTD, "SNAPPY": CompressionType.SNAPPY}
HASHING_SCHEMES = {"JavaStringHash": HashingScheme.JavaStringHash, "Murmur3_32Hash": HashingScheme.Murmur3_32Hash}


class InvalidParam(ValueError):
    """A query parameter Pulsar would refuse; the message is Pulsar's."""


class Query:
    """The parameters of one request (first value of each), read with Java's rules."""

    def __init__(self, query: Mapping[str, str]):
        self._query = query

    def text(self, name: str) -> str | None:
        return self._query.get(name)

    def integer(self, name: str, bits: int = 32) -> int | None:
        value = self._query.get(name)
        if value is None:
            return None
        limit = _INT_RANGE if bits == 32 else _LONG_RANGE
        if not _INTEGER.fullmatch(value) or not -limit <= int(value) < limit:
            raise InvalidParam(f'For input string: "{value}"')
        return int(value)

    def boolean(self, name: str) -> bool | None:
        value = self._query.get(name)
        return None if value is None else value.lower() == "true"

    def choice(self, name: str, names: dict, message: str | None = None):
        value = self._query.get(name)
        if value is None:
            return None
        if value not in names:
            raise InvalidParam(message.format(value) if message else f"Invalid {name} {value}")
        return names[value]


def _at_least(value: int | None, minimum: int, message: str) -> int | None:
    if value is not None and value < minimum:
        raise InvalidParam(message)
    return value


def _given(**options) -> dict:
    return {key: value for key, value in options.items() if value is not None}


def producer_options(query: Mapping[str, str]) -> dict:
    """create_producer keyword arguments; raises InvalidParam."""
    q = Query(query)
    routing = q.choice("messageRoutingMode", ROUTING_MODES)
    delay = _at_least(q.integer("batchingMaxPublishDelay"), 1, "configured value for batch delay must be at least 1ms")
    options = _given(
        producer_name=q.text("producerName"),
        initial_sequence_id=q.integer("initialSequenceId", 64),
        send_timeout_millis=_at_least(q.integer("sendTimeoutMillis"), 0, "sendTimeout needs to be >= 0"),
        batching_enabled=q.boolean("batchingEnabled"),
        batching_max_messages=_at_least(q.integer("batchingMaxMessages"), 1, "batchingMaxMessages needs to be > 0"),
        max_pending_messages=_at_least(q.integer("maxPendingMessages"), 0, "maxPendingMessages needs to be >= 0"),
        batching_max_publish_delay_ms=delay,
        compression_type=q.choice("compressionType", COMPRESSION_TYPES),
        hashing_scheme=q.choice("hashingScheme", HASHING_SCHEMES,
                                "No enum constant org.apache.pulsar.client.api.HashingScheme.{}"),
    )
    return {"batching_enabled": False, "block_if_queue_full": False, "hashing_scheme": HashingScheme.JavaStringHash,
            "message_routing_mode": routing or PartitionsRoutingMode.UseSinglePartition, **options}


@dataclass(frozen=True)
class DeliveryOptions:
    """create: the keyword arguments of subscribe or create_reader; pull_mode: deliver only what
    `permit` commands allow; max_pending: messages on the socket not yet acknowledged, in push
    mode (the receiver queue size, at least 1)."""

    create: dict
    pull_mode: bool
    max_pending: int


def consumer_options(query: Mapping[str, str], topic: str, subscription: str) -> DeliveryOptions:
    """What a consumer session asks for; raises InvalidParam."""
    q = Query(query)
    queue = _at_least(q.integer("receiverQueueSize"), 0, "receiverQueueSize needs to be >= 0")
    queue = MAX_RECEIVER_QUEUE_SIZE if queue is None else min(queue, MAX_RECEIVER_QUEUE_SIZE)
    ack_timeout = q.integer("ackTimeoutMillis", 64)
    if ack_timeout and ack_timeout < 1000:
        raise InvalidParam("Ack timeout should be greater than 1000 ms")
    subscribe = _given(
        consumer_type=q.choice("subscriptionType", SUBSCRIPTION_TYPES),
        subscription_mode=q.choice("subscriptionMode", SUBSCRIPTION_MODES),
        initial_position=q.choice("subscriptionInitialPosition", INITIAL_POSITIONS),
        consumer_name=q.text("consumerName"),
        priority_level=_at_least(q.integer("priorityLevel"), 0, "priorityLevel needs to be >= 0"),
        negative_ack_redelivery_delay_ms=_at_least(q.integer("negativeAckRedeliveryDelay"), 0,
                                                   "redeliveryDelay needs to be >= 0"),
        unacked_messages_timeout_ms=ack_timeout or None,
        dead_letter_policy=_dead_letter_policy(q, topic, subscription),
    )
    subscribe["receiver_queue_size"] = queue
    pull_mode = bool(q.boolean("pullMode"))
    return DeliveryOptions(subscribe, pull_mode, 0 if pull_mode else max(queue, 1))


def _dead_letter_policy(q: Query, topic: str, subscription: str) -> ConsumerDeadLetterPolicy | None:
    count, dead_letter_topic = q.integer("maxRedeliverCount"), q.text("deadLetterTopic")
    if count is None and dead_letter_topic is None:
        return None
    if not count or count < 1:
        raise InvalidParam("MaxRedeliverCount must be > 0.")
    return ConsumerDeadLetterPolicy(count, dead_letter_topic or f"{topic}-{subscription}-DLQ")


def reader_options(query: Mapping[str, str]) -> DeliveryOptions:
    """What a reader session asks for (create_reader's start_message_id included); raises
    InvalidParam."""
    q = Query(query)
    queue = _at_least(q.integer("receiverQueueSize"), 0, "receiverQueueSize needs to be >= 0")
    queue = MAX_RECEIVER_QUEUE_SIZE if queue is None else min(queue, MAX_RECEIVER_QUEUE_SIZE)
    create = _given(start_message_id=_start(q.text("messageId")), reader_name=q.text("readerName"),
                    receiver_queue_size=queue)
    return DeliveryOptions(create, False, max(queue, 1))


def _start(value: str | None) -> MessageId:
    if value is None or not value.strip() or value == "latest":
        return MessageId.latest
    if value == "earliest":
        return MessageId.earliest
    try:
        return decode_message_id(value)
    except ValueError as exc:
        raise InvalidParam(str(exc)) from None
