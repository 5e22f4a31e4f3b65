"""The row shape of the source: its Spark schema and the Arrow schema of the batches it yields.

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

Batches are unpacked: one row per message (pipeline.entry_decoder, pipeline.columns).
"""
from __future__ import annotations

import pyarrow as pa

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
