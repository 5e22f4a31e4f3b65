"""MessageId: where a message lives — (ledger_id, entry_id), its batch_index inside a batch entry,
and the partition of a partitioned topic.

serialize() is a MessageIdData protobuf with the same fields the C++ client writes (partition only
when != -1, batch_index only when != -1, batch_size only when != 0), so its bytes are identical to
`pulsar.MessageId.serialize()`. Ids order by (ledger_id, entry_id, batch_index); earliest is
(-1, -1) and latest (INT64_MAX, INT64_MAX), travelling as uint64 on the wire.
Source: Pulsar's C++ MessageId (serialize, earliest, latest).
"""
from __future__ import annotations

from functools import total_ordering

from minipulsar.proto import PulsarApi_pb2 as api

INT64_MAX = (1 << 63) - 1
_U64 = (1 << 64) - 1


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


@total_ordering
class MessageId:
    """The id of a message (pulsar.MessageId). Argument order matches the official constructor.

    Arguments:
        partition (int): partition index; -1 outside partitioned topics. Default: -1.
        ledger_id (int): ledger of the entry. Default: -1.
        entry_id (int): entry within the ledger. Default: -1.
        batch_index (int): index inside a batch entry; -1 for a non-batched message. Default: -1.
        batch_size (int): messages in the batch entry; 0 when unknown or not batched. Default: 0.
        topic (str | None): the topic the id came from (routes acks on multi-topic consumers;
            never serialized). Default: None.

    Class attributes earliest and latest are the official client's MessageId.earliest / .latest.
    """

    __slots__ = ("_ledger_id", "_entry_id", "_batch_index", "_partition", "_batch_size", "_topic")
    earliest: "MessageId"
    latest: "MessageId"

    def __init__(self, partition: int = -1, ledger_id: int = -1, entry_id: int = -1, batch_index: int = -1,
                 batch_size: int = 0, topic: str | None = None):
        self._ledger_id = ledger_id
        self._entry_id = entry_id
        self._batch_index = batch_index
        self._partition = partition
        self._batch_size = batch_size
        self._topic = topic  # the topic the id came from, for multi-topic acks; never serialized

    def ledger_id(self) -> int:
        """The ledger id."""
        return self._ledger_id

    def entry_id(self) -> int:
        """The entry id within the ledger."""
        return self._entry_id

    def batch_index(self) -> int:
        """The index inside a batch entry, -1 for a non-batched message."""
        return self._batch_index

    def partition(self) -> int:
        """The partition index, -1 outside partitioned topics."""
        return self._partition

    def batch_size(self) -> int:
        """Messages in the batch entry, 0 when unknown or not batched."""
        return self._batch_size

    def topic_name(self) -> str | None:
        """The topic the id came from, None when unknown."""
        return self._topic

    # ---- wire forms ------------------------------------------------------------------------
    def to_proto(self, target: api.MessageIdData | None = None, with_batch: bool = True) -> api.MessageIdData:
        """The MessageIdData of this id, filled as the C++ client does.

        Arguments:
            target (MessageIdData | None): the proto to fill. Default: None (a new one).
            with_batch (bool): include batch_index and batch_size; False for an ACK of a whole
                entry or a SEEK. Default: True.
        """
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
        """The MessageId of a MessageIdData (ledger and entry ids read as signed 64-bit).

        Arguments:
            data (MessageIdData): the proto. No default.
            topic (str | None): the topic to remember. Default: None.
        """
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
        """Parse bytes from serialize() (ours or the official client's).

        Arguments:
            data (bytes): MessageIdData bytes. No default.

        Raises:
            google.protobuf.message.DecodeError: data is not a MessageIdData.
        """
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
