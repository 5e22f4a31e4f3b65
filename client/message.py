"""Message: what a consumer or reader receives. Accessors are named as in `pulsar.Message`.

Built by the consumer from one entry (or one message of a batch entry): payload bytes, the
metadata fields that apply to this message (for batches, SingleMessageMetadata overrides the
entry's key, properties and event time), the MessageId and the broker's redelivery_count.
"""
from __future__ import annotations

from typing import Any

from minipulsar.client.message_id import MessageId


class Message:
    """One received message (pulsar.Message); built by the consumer, not by applications.

    Arguments:
        data (bytes): the payload. No default.
        message_id (MessageId): where the message lives. No default.
        topic (str): the (partition) topic it came from. No default.
        properties (dict[str, str] | None): message properties. Default: None (empty).
        partition_key (str): Default: "" (none).
        ordering_key (bytes): Default: b"" (none).
        publish_time (int): milliseconds since the epoch. Default: 0.
        event_time (int): milliseconds since the epoch; 0 = unset. Default: 0.
        redelivery_count (int): times the broker delivered it before. Default: 0.
        schema (Schema | None): decodes value(). Default: None (value() returns the bytes).
        schema_version (bytes): Default: b"".
        producer_name (str): Default: "".
        sequence_id (int): the producer's sequence id; -1 when unknown. Default: -1.
        owner (PartitionConsumer | None): the consumer acks and permits go to. Default: None.
    """

    __slots__ = ("_data", "_properties", "_partition_key", "_ordering_key", "_publish_time", "_event_time",
                 "_message_id", "_redelivery_count", "_topic", "_schema", "_schema_version", "_producer_name",
                 "_sequence_id", "_owner")

    def __init__(self, data: bytes, message_id: MessageId, topic: str, properties: dict[str, str] | None = None,
                 partition_key: str = "", ordering_key: bytes = b"", publish_time: int = 0, event_time: int = 0,
                 redelivery_count: int = 0, schema=None, schema_version: bytes = b"", producer_name: str = "",
                 sequence_id: int = -1, owner: Any = None):
        self._data = data
        self._message_id = message_id
        self._topic = topic
        self._properties = properties or {}
        self._partition_key = partition_key
        self._ordering_key = ordering_key
        self._publish_time = publish_time
        self._event_time = event_time
        self._redelivery_count = redelivery_count
        self._schema = schema
        self._schema_version = schema_version
        self._producer_name = producer_name
        self._sequence_id = sequence_id
        self._owner = owner  # the single-topic consumer that received it (acks and permits go there)

    def data(self) -> bytes:
        """The payload bytes."""
        return self._data

    def value(self):
        """The payload decoded by the consumer's schema (bytes for BytesSchema, str for StringSchema).

        Raises:
            UnicodeDecodeError: StringSchema and the payload is not UTF-8.
        """
        return self._schema.decode(self._data) if self._schema is not None else self._data

    def properties(self) -> dict[str, str]:
        """A copy of the message properties."""
        return dict(self._properties)

    def partition_key(self) -> str:
        """The partition key, "" when none."""
        return self._partition_key

    def ordering_key(self) -> str:
        """The ordering key decoded as UTF-8, "" when none."""
        return self._ordering_key.decode("utf-8", "replace") if self._ordering_key else ""

    def ordering_key_bytes(self) -> bytes:
        """The ordering key as sent, b"" when none."""
        return self._ordering_key

    def publish_timestamp(self) -> int:
        """When the producer published it, in milliseconds since the epoch."""
        return self._publish_time

    def event_timestamp(self) -> int:
        """The event time in milliseconds since the epoch, 0 when unset."""
        return self._event_time

    def message_id(self) -> MessageId:
        """The message's id."""
        return self._message_id

    def redelivery_count(self) -> int:
        """How many times the broker delivered it before."""
        return self._redelivery_count

    def topic_name(self) -> str:
        """The (partition) topic it came from."""
        return self._topic

    def schema_version(self) -> bytes:
        """The schema version the producer used, b"" when none."""
        return self._schema_version

    def producer_name(self) -> str:
        """The name of the producer that published it."""
        return self._producer_name

    def sequence_id(self) -> int:
        """The producer's sequence id of this message, -1 when unknown."""
        return self._sequence_id

    def __repr__(self) -> str:
        return f"Message(id={self._message_id}, topic={self._topic!r}, {len(self._data)} bytes)"
