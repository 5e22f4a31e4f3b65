"""Positions <-> MessageIdData. The wire fields are uint64, but Pulsar means signed longs:
-1 (earliest, or 'no entry yet') travels as 0xFFFFFFFFFFFFFFFF and latest as INT64_MAX."""
from __future__ import annotations

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Position

INT64_MAX = (1 << 63) - 1
_U64 = (1 << 64) - 1


def signed(value: int) -> int:
    """uint64 wire value -> signed long."""
    return value - (1 << 64) if value >= 1 << 63 else value


def position_of(message_id: api.MessageIdData) -> Position:
    """(ledgerId, entryId) of message_id as signed ints; batch index and partition are dropped."""
    return Position(signed(message_id.ledgerId), signed(message_id.entryId))


def set_message_id(target: api.MessageIdData, position: Position, partition: int = -1) -> None:
    """Fill target with position (negative values wrapped to uint64) and partition when >= 0."""
    target.ledgerId = position.ledger_id & _U64
    target.entryId = position.entry_id & _U64
    if partition >= 0:
        target.partition = partition
