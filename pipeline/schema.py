"""The row shape of the source, and how received messages become Arrow record batches.

Columns (the names of the issue; Apache Pulsar's connector prefixes its metadata columns with
``__``):

| column | Spark type | from |
|---|---|---|
| ``key`` | string, null when the message has no partition key | ``Message.partition_key()`` |
| ``value`` | binary | ``Message.data()`` |
| ``topic`` | string | the partition's full name (``...-partition-<i>`` on partitioned topics) |
| ``messageId`` | binary | ``MessageId.serialize()`` (same bytes as the official client) |
| ``publishTime`` | timestamp | broker-assigned publish time (ms precision) |
| ``eventTime`` | timestamp, null when the producer set none | ``Message.event_timestamp()`` |
| ``properties`` | map<string,string> | ``Message.properties()`` |

Batches are unpacked: one row per message.
"""
from __future__ import annotations

import pyarrow as pa

from minipulsar.client import Message

SCHEMA_DDL = ("key STRING, value BINARY, topic STRING, messageId BINARY, publishTime TIMESTAMP, "
              "eventTime TIMESTAMP, properties MAP<STRING, STRING>")

ARROW_SCHEMA = pa.schema([
    pa.field("key", pa.string()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("messageId", pa.binary()),
    pa.field("publishTime", pa.timestamp("us", tz="UTC")),
    pa.field("eventTime", pa.timestamp("us", tz="UTC")),
    pa.field("properties", pa.map_(pa.string(), pa.string())),
])


class RowBuffer:
    """Collects messages column by column; take() turns them into one pa.RecordBatch."""

    __slots__ = ("keys", "values", "ids", "publish", "event", "props", "topic")

    def __init__(self, topic: str):
        self.topic = topic
        self._reset()

    def _reset(self) -> None:
        self.keys: list = []
        self.values: list = []
        self.ids: list = []
        self.publish: list = []
        self.event: list = []
        self.props: list = []

    def __len__(self) -> int:
        return len(self.values)

    def add(self, message: Message) -> None:
        key = message.partition_key()
        self.keys.append(key if key else None)
        self.values.append(message.data())
        self.ids.append(message.message_id().serialize())
        self.publish.append(message.publish_timestamp() * 1000)
        event = message.event_timestamp()
        self.event.append(event * 1000 if event else None)
        props = message.properties()
        self.props.append(list(props.items()) if props else [])

    def take(self) -> pa.RecordBatch:
        n = len(self.values)
        batch = pa.RecordBatch.from_arrays([
            pa.array(self.keys, pa.string()),
            pa.array(self.values, pa.binary()),
            pa.array([self.topic] * n, pa.string()),
            pa.array(self.ids, pa.binary()),
            pa.array(self.publish, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array(self.event, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array(self.props, pa.map_(pa.string(), pa.string())),
        ], schema=ARROW_SCHEMA)
        self._reset()
        return batch
