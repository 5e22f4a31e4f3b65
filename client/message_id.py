"""MessageId: where a message lives — (ledger_id, entry_id), its batch_index inside a batch entry,
and the partition of a partitioned topic.

serialize() is a MessageIdData protobuf with the same fields the C++ client writes (partition only
when != -1, batch_index only when != -1, batch_size only when != 0), so its bytes are identical to
`pulsar.MessageId.serialize()`. Ids order by (ledger_id, entry_id, batch_index); earliest is
(-1, -1) and latest (INT64_MAX, INT64_MAX), travelling as uint64 on the wire.
Source: C++ lib/MessageId.cc (serialize, earliest/latest).
"""
from __future__ import annotations

from functools import total_ordering

from proto import PulsarApi_pb2 as api

INT64_MAX = (1 << 63) - 1
_U64 = (1 << 64) - 1


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


@total_ordering
class MessageId:
    """partition: -1 outside partitioned topics; batch_index: -1 for non-batched messages;
    batch_size: messages in the batch entry (0 when unknown or not batched)."""

    __slots__ = ("_ledger_id", "_entry_id", "_batch_index", "_partition", "_batch_size", "_topic")
    earliest: "MessageId"
    latest: "MessageId"

    def __init__(self, partition: int = -1, ledger_id: int = -1, entry_id: int = -1, batch_index: int = -1,
                 batch_size: int = 0, topic: str | None = None):
        # Argument order matches pulsar.MessageId(partition, ledger_id, entry_id, batch_index).
        self._ledger_id = ledger_id
        self._entry_id = entry_id
        self._batch_index = batch_index
        self._partition = partition
        self._batch_size = batch_size
        self._topic = topic  # the topic the id came from, for multi-topic acks; never serialized

    def ledger_id(self) -> int:
        return self._ledger_id

    def entry_id(self) -> int:
        return self._entry_id

    def batch_index(self) -> int:
        return self._batch_index

    def partition(self) -> int:
        return self._partition

    def batch_size(self) -> int:
        return self._batch_size

    def topic_name(self) -> str | None:
        return self._topic

    # ---- wire forms ------------------------------------------------------------------------
    def to_proto(self, target: api.MessageIdData | None = None, with_batch: bool = True) -> api.MessageIdData:
        """Fill target (or a new MessageIdData) as the C++ client does; with_batch=False leaves out
        batch_index/batch_size (ACK of a whole entry, SEEK)."""
        data = target if target is not None else api.MessageIdData()
        data.ledgerId = self._ledger_id & _U64
        data.entryId = self._entry_id & _U64
        if self._partition != -1:
            data.partition = self._partition
        if with_batch:
            if self._batch_index != -1:
                data.batch_index = self._batch_index
            if self._batch_size != 0:
                data.batch_size = self._batch_size
        return data

    @classmethod
    def from_proto(cls, data: api.MessageIdData, topic: str | None = None) -> "MessageId":
        return cls(
            data.partition if data.HasField("partition") else -1,
            _signed(data.ledgerId), _signed(data.entryId),
            data.batch_index if data.HasField("batch_index") else -1,
            data.batch_size if data.HasField("batch_size") else 0,
            topic,
        )

    def serialize(self) -> bytes:
        """MessageIdData bytes, identical to the official client's serialize()."""
        return self.to_proto().SerializeToString()

    @classmethod
    def deserialize(cls, data: bytes) -> "MessageId":
        """Parse bytes from serialize() (ours or the official client's)."""
        proto = api.MessageIdData()
        proto.ParseFromString(data)
        return cls.from_proto(proto)

    # ---- comparisons -----------------------------------------------------------------------
    def _key(self) -> tuple[int, int, int]:
        return (self._ledger_id, self._entry_id, self._batch_index)

    def entry_key(self) -> tuple[int, int]:
        """(ledger_id, entry_id): the broker-side position."""
        return (self._ledger_id, self._entry_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageId):
            return NotImplemented
        return self._key() == other._key() and self._partition == other._partition

    def __lt__(self, other: "MessageId") -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash((self._key(), self._partition))

    def __repr__(self) -> str:
        return f"({self._ledger_id},{self._entry_id},{self._partition},{self._batch_index})"

    __str__ = __repr__


MessageId.earliest = MessageId(-1, -1, -1)
MessageId.latest = MessageId(-1, INT64_MAX, INT64_MAX)
