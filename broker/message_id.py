"""Positions <-> MessageIdData. The wire fields are uint64, but Pulsar means signed longs:
-1 (earliest, or 'no entry yet') travels as 0xFFFFFFFFFFFFFFFF and latest as INT64_MAX."""
from __future__ import annotations

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Position
from minipulsar.storage.position import make_position

INT64_MAX = (1 << 63) - 1
_U64 = (1 << 64) - 1
_NO_ACK_SET: list[int] = []  # shared, never mutated: most acks are for whole entries


def signed(value: int) -> int:
    """uint64 wire value -> signed long."""
    return value - (1 << 64) if value >= 1 << 63 else value


def position_of(message_id: api.MessageIdData) -> Position:
    """(ledgerId, entryId) of message_id as signed ints; batch index and partition are dropped."""
    return Position(signed(message_id.ledgerId), signed(message_id.entryId))


def acked_entries(message_ids) -> list[tuple[Position, list[int]]]:
    """CommandAck.message_id -> (position, ack_set words) per id; ack_set empty for a whole entry.
    Runs for every acknowledgement, so the common non-negative ids skip signed()."""
    acks = []
    for message_id in message_ids:
        ledger_id, entry_id = message_id.ledgerId, message_id.entryId
        if ledger_id > INT64_MAX or entry_id > INT64_MAX:
            position = position_of(message_id)
        else:
            position = make_position((ledger_id, entry_id))
        ack_set = message_id.ack_set
        acks.append((position, list(ack_set) if ack_set else _NO_ACK_SET))
    return acks


def set_message_id(target: api.MessageIdData, position: Position, partition: int = -1) -> None:
    """Fill target with position (negative values wrapped to uint64) and partition when >= 0."""
    target.ledgerId = position.ledger_id & _U64
    target.entryId = position.entry_id & _U64
    if partition >= 0:
        target.partition = partition
