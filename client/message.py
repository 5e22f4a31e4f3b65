"""Message: what a consumer or reader receives. Accessors are named as in `pulsar.Message`.

Built by the consumer from one entry (or one message of a batch entry): payload bytes, the
metadata fields that apply to this message (for batches, SingleMessageMetadata overrides the
entry's key, properties and event time), the MessageId and the broker's redelivery_count.
"""
from __future__ import annotations

from typing import Any

from client.message_id import MessageId


class Message:
    """One received message; times are milliseconds since the epoch (0 when unset)."""

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
        """The payload decoded by the consumer's schema (bytes for BytesSchema)."""
        return self._schema.decode(self._data) if self._schema is not None else self._data

    def properties(self) -> dict[str, str]:
        return dict(self._properties)

    def partition_key(self) -> str:
        return self._partition_key

    def ordering_key(self) -> str:
        return self._ordering_key.decode("utf-8", "replace") if self._ordering_key else ""

    def ordering_key_bytes(self) -> bytes:
        return self._ordering_key

    def publish_timestamp(self) -> int:
        return self._publish_time

    def event_timestamp(self) -> int:
        return self._event_time

    def message_id(self) -> MessageId:
        return self._message_id

    def redelivery_count(self) -> int:
        return self._redelivery_count

    def topic_name(self) -> str:
        return self._topic

    def schema_version(self) -> bytes:
        return self._schema_version

    def producer_name(self) -> str:
        return self._producer_name

    def sequence_id(self) -> int:
        return self._sequence_id

    def __repr__(self) -> str:
        return f"Message(id={self._message_id}, topic={self._topic!r}, {len(self._data)} bytes)"
