"""Frames on the publish and dispatch hot paths, encoded by hand: the same bytes protobuf would
write, without building message objects (a SEND_RECEIPT or a MESSAGE costs about half as much),
and the plain SEND decoded by hand (parse_send: the same values protobuf would read).

Protobuf wire format: a field is a varint key (field_number << 3 | wire_type) then its value;
varints are 7 bits per byte, low first, high bit set on all but the last; uint64 values travel as
their two's-complement 64-bit pattern (so -1 is ten bytes). Fields appear in field-number order,
as protobuf's own serializer writes them, so the output is byte-for-byte what
BaseCommand.SerializeToString gives (tests/unit/proto/test_hot_commands.py checks it).
Field numbers: PulsarApi.proto (BaseCommand.type = 1, send = 6, send_receipt = 7, message = 9;
CommandSend producer_id = 1, sequence_id = 2, num_messages = 3 (int32, default 1),
highest_sequence_id = 6 (default 0);
CommandSendReceipt producer_id = 1, sequence_id = 2, message_id = 3, highest_sequence_id = 4;
CommandMessage consumer_id = 1, message_id = 2, redelivery_count = 3, ack_set = 4 (repeated,
unpacked), consumer_epoch = 5; MessageIdData ledgerId = 1, entryId = 2, partition = 3).
Frames: [totalSize u32][commandSize u32][command], and for MESSAGE the stored entry after it.
"""
from __future__ import annotations

import struct
from functools import partial
from typing import NamedTuple

_TWO_U32 = struct.Struct(">II")
_UINT64 = (1 << 64) - 1
_ONE_BYTE = [bytes((i,)) for i in range(0x80)]
_TABLED = 1 << 14  # values below this (one or two varint bytes) are looked up, not encoded
_SEND_RECEIPT_TYPE = b"\x08\x07"  # BaseCommand.type (field 1, varint) = SEND_RECEIPT (7)
_MESSAGE_TYPE = b"\x08\x09"  # BaseCommand.type = MESSAGE (9)
# BaseCommand.type = SEND (6), then field 6 (send) length-delimited: how every SEND command starts
SEND_PREFIX = b"\x08\x06\x32"
# CommandSend keys parse_send takes (field << 3, all varints) -> index in SendCommand
_SEND_KEYS = {0x08: 0, 0x10: 1, 0x18: 2, 0x30: 3}
_VARINT_MAX_BYTES = 9  # up to 2**63 - 1; longer (or negative int32) varints go to protobuf
_INT32_MAX = (1 << 31) - 1


class SendCommand(NamedTuple):
    """What the broker reads of a CommandSend, with protobuf's defaults for absent fields."""

    producer_id: int
    sequence_id: int
    num_messages: int = 1
    highest_sequence_id: int = 0


# SendCommand from a list of its four fields without the NamedTuple's Python-level __new__
# (which was 5 % of the event loop's time per unbatched message).
_make_send = partial(tuple.__new__, SendCommand)


def encode_varint(value: int) -> bytes:
    """value (taken as uint64) as a protobuf varint; the common short cases looked up or unrolled."""
    if 0 <= value < _TABLED:
        return _VARINTS[value]
    if 0 <= value < 0x200000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    value &= _UINT64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_VARINTS = [_ONE_BYTE[value] if value < 0x80 else bytes(((value & 0x7F) | 0x80, value >> 7))
            for value in range(_TABLED)]
# A SEND_RECEIPT's frame up to its CommandSendReceipt, by the receipt's length (always below 128:
# four varints of at most ten bytes and their keys): sizes, type, field 7's key and length.
_RECEIPT_HEADS = [_TWO_U32.pack(n + 8, n + 4) + _SEND_RECEIPT_TYPE + b"\x3a" + _ONE_BYTE[n] for n in range(0x80)]


def encode_send_receipt(producer_id: int, sequence_id: int, ledger_id: int, entry_id: int,
                        highest_sequence_id: int = 0) -> bytes:
    """A whole SEND_RECEIPT frame; highest_sequence_id is written only when non-zero, as the broker
    sets it. ledger_id / entry_id may be -1 (a duplicate whose position is unknown). One per SEND:
    small values are looked up in place, not encoded by a call each (half the time)."""
    varints = _VARINTS
    ledger = varints[ledger_id] if 0 <= ledger_id < _TABLED else encode_varint(ledger_id)
    entry = varints[entry_id] if 0 <= entry_id < _TABLED else encode_varint(entry_id)
    receipt = b"".join((
        b"\x08", varints[producer_id] if 0 <= producer_id < _TABLED else encode_varint(producer_id),
        b"\x10", varints[sequence_id] if 0 <= sequence_id < _TABLED else encode_varint(sequence_id),
        b"\x1a", _ONE_BYTE[2 + len(ledger) + len(entry)], b"\x08", ledger, b"\x10", entry))
    if highest_sequence_id:
        receipt += b"\x20" + encode_varint(highest_sequence_id)
    return _RECEIPT_HEADS[len(receipt)] + receipt


def encode_message(consumer_id: int, ledger_id: int, entry_id: int, partition: int, redelivery_count: int,
                   consumer_epoch: int | None, ack_set: list[int] | None, headers_and_payload: bytes) -> bytes:
    """A whole MESSAGE frame carrying a stored entry unchanged. partition -1 (not a partition) and
    redelivery_count 0 are left out, as protobuf leaves unset fields; ack_set: signed int64 words."""
    message_id = b"\x08" + encode_varint(ledger_id) + b"\x10" + encode_varint(entry_id)
    if partition >= 0:
        message_id += b"\x18" + encode_varint(partition)
    parts = [b"\x08", encode_varint(consumer_id), b"\x12", encode_varint(len(message_id)), message_id]
    if redelivery_count:
        parts += (b"\x18", encode_varint(redelivery_count))
    for word in ack_set or ():
        parts += (b"\x20", encode_varint(word))
    if consumer_epoch is not None:
        parts += (b"\x28", encode_varint(consumer_epoch))
    message = b"".join(parts)
    command = b"".join((_MESSAGE_TYPE, b"\x4a", encode_varint(len(message)), message))
    return b"".join((_TWO_U32.pack(4 + len(command) + len(headers_and_payload), len(command)), command,
                     headers_and_payload))


def parse_send(command: bytes) -> SendCommand | None:
    """The SendCommand of a serialized BaseCommand that is a plain SEND, or None for anything else:
    another type, a CommandSend longer than 127 bytes, any field besides the four above
    (transaction ids, is_chunk, marker, message_id), a varint past 2**63 - 1 or a num_messages
    outside int32, a required field missing, or bytes that do not parse. The caller parses a None
    with protobuf, which gives the same values for everything this accepts and reports the errors.
    """
    end = len(command)
    if command[:3] != SEND_PREFIX or end < 4 or command[3] >= 0x80 or command[3] != end - 4:
        return None
    fields = [None, None, 1, 0]
    pos = 4
    try:
        while pos < end:
            index = _SEND_KEYS.get(command[pos])
            if index is None:
                return None
            value = command[pos + 1]
            pos += 2
            if value >= 0x80:
                value, pos = _long_varint(command, pos, value)
                if value is None:
                    return None
            fields[index] = value
    except IndexError:  # a varint cut off by the end of the command
        return None
    if pos != end or fields[0] is None or fields[1] is None or fields[2] > _INT32_MAX:
        return None
    return _make_send(fields)


def _long_varint(data: bytes, pos: int, first: int) -> tuple[int | None, int]:
    """(value, position after it) of a varint whose first byte was ``first``; value None when it
    is longer than _VARINT_MAX_BYTES. Raises IndexError when it runs past the end of ``data``."""
    value, shift = first & 0x7F, 7
    while shift < 7 * _VARINT_MAX_BYTES:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    return None, pos
