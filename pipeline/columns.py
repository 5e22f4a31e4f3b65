"""Rows of the source collected column by column, and handed over as Arrow record batches.

Rows arrive an entry at a time (pipeline.entry_decoder), so what is the same for every message of
an entry — the publish time, the topic, the front of the message ids — is added once per entry,
and the per-message work is a few list appends. ``take()`` turns the columns into one
``pyarrow.RecordBatch`` of pipeline.schema.ARROW_SCHEMA.

Message ids are the bytes ``MessageId.serialize()`` gives, built without a protobuf object per
message: a serialized ``MessageIdData`` holds its fields in field-number order (ledgerId 1,
entryId 2, partition 3, batch_index 4, batch_size 6), so the bytes of message ``i`` of an entry
are the entry's serialized ``(ledgerId, entryId, partition)`` followed by the varint-encoded
``batch_index`` and ``batch_size`` fields, which depend only on ``(i, batch_size)`` and are cached.
"""
from __future__ import annotations

from functools import lru_cache
from itertools import accumulate

import pyarrow as pa

from minipulsar.client import MessageId

from minipulsar.pipeline.schema import ARROW_SCHEMA
from minipulsar.proto.hot_commands import encode_varint

_U64 = (1 << 64) - 1
_BATCH_INDEX_TAG = b"\x20"  # field 4, varint
_BATCH_SIZE_TAG = b"\x30"  # field 6, varint
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_MAP = pa.map_(pa.string(), pa.string())


@lru_cache(maxsize=64)
def batch_id_suffixes(batch_size: int) -> tuple[bytes, ...]:
    """The serialized batch_index and batch_size fields of messages 0..batch_size-1 of a batch."""
    size = _BATCH_SIZE_TAG + encode_varint(batch_size)
    return tuple(_BATCH_INDEX_TAG + encode_varint(i) + size for i in range(batch_size))


def entry_id_prefix(ledger_id: int, entry_id: int, partition: int) -> bytes:
    """The serialized ledgerId, entryId and (when >= 0) partition fields of an entry's ids."""
    return MessageId(partition, ledger_id, entry_id).serialize()


class ColumnBuffer:
    """Collects the rows of one topic partition; take() returns them as one pa.RecordBatch."""

    def __init__(self, topic: str):
        self.topic = topic
        self._reset()

    def _reset(self) -> None:
        self.keys: list = []
        self.values: list = []
        self.ids: list = []
        self.publish: list = []
        self.events: list = []
        self.properties: list[tuple[int, list]] = []  # (row, [(key, value), ...]), rows with any

    def __len__(self) -> int:
        return len(self.values)

    def add_entry_rows(self, prefix: bytes, batch_size: int, first: int, publish_ms: int) -> None:
        """Record the ids and the publish time of the rows first.. of an entry whose keys, values,
        events and properties were just appended (batch_size 0: one row, not in a batch)."""
        count = len(self.values) - len(self.ids)
        if batch_size:
            self.ids.extend(prefix + suffix for suffix in batch_id_suffixes(batch_size)[first:first + count])
        else:
            self.ids.append(prefix)
        self.publish.extend([publish_ms * 1000] * count)

    def add_properties(self, properties) -> None:
        """The properties of the row whose key was just appended (objects with key and value; the
        other columns of the row may follow); rows without any need no call."""
        # A key given twice keeps its last value, as Message.properties() does (and Spark's maps
        # refuse duplicate keys).
        self.properties.append((len(self.keys) - 1, list({kv.key: kv.value for kv in properties}.items())))

    def _property_map(self, n: int) -> pa.MapArray:
        counts = [0] * n
        keys, items = [], []
        for row, pairs in self.properties:
            counts[row] = len(pairs)
            keys.extend(k for k, _ in pairs)
            items.extend(v for _, v in pairs)
        return pa.MapArray.from_arrays(pa.array([0, *accumulate(counts)], pa.int32()),
                                       pa.array(keys, pa.string()), pa.array(items, pa.string()))

    def take(self) -> pa.RecordBatch:
        n = len(self.values)
        batch = pa.RecordBatch.from_arrays([
            pa.array(self.keys, pa.string()),
            pa.array(self.values, pa.binary()),
            pa.array([self.topic] * n, pa.string()),
            pa.array(self.ids, pa.binary()),
            pa.array(self.publish, pa.int64()).cast(_TIMESTAMP),
            pa.array(self.events, pa.int64()).cast(_TIMESTAMP),
            self._property_map(n),
        ], schema=ARROW_SCHEMA)
        self._reset()
        return batch
