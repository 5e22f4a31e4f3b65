"""Frames on the publish and dispatch hot paths, encoded by hand: the same bytes protobuf would
write, without building message objects (a SEND_RECEIPT or a MESSAGE costs about half as much).

Protobuf wire format: a field is a varint key (field_number << 3 | wire_type) then its value;
varints are 7 bits per byte, low first, high bit set on all but the last; uint64 values travel as
their two's-complement 64-bit pattern (so -1 is ten bytes). Fields appear in field-number order,
as protobuf's own serializer writes them, so the output is byte-for-byte what
BaseCommand.SerializeToString gives (tests/unit/test_hot_commands.py checks it).
Field numbers: PulsarApi.proto (BaseCommand.type = 1, send_receipt = 7, message = 9;
CommandSendReceipt producer_id = 1, sequence_id = 2, message_id = 3, highest_sequence_id = 4;
CommandMessage consumer_id = 1, message_id = 2, redelivery_count = 3, ack_set = 4 (repeated,
unpacked), consumer_epoch = 5; MessageIdData ledgerId = 1, entryId = 2, partition = 3).
Frames: [totalSize u32][commandSize u32][command], and for MESSAGE the stored entry after it.
"""
from __future__ import annotations

import struct

_TWO_U32 = struct.Struct(">II")
_UINT64 = (1 << 64) - 1
_ONE_BYTE = [bytes((i,)) for i in range(0x80)]
_SEND_RECEIPT_TYPE = b"\x08\x07"  # BaseCommand.type (field 1, varint) = SEND_RECEIPT (7)
_MESSAGE_TYPE = b"\x08\x09"  # BaseCommand.type = MESSAGE (9)


def encode_varint(value: int) -> bytes:
    """value (taken as uint64) as a protobuf varint; the common short cases unrolled."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if 0 <= value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if 0 <= value < 0x200000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    value &= _UINT64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_send_receipt(producer_id: int, sequence_id: int, ledger_id: int, entry_id: int,
                        highest_sequence_id: int = 0) -> bytes:
    """A whole SEND_RECEIPT frame; highest_sequence_id is written only when non-zero, as the broker
    sets it. ledger_id / entry_id may be -1 (a duplicate whose position is unknown)."""
    message_id = b"\x08" + encode_varint(ledger_id) + b"\x10" + encode_varint(entry_id)
    receipt = b"".join((b"\x08", encode_varint(producer_id), b"\x10", encode_varint(sequence_id),
                        b"\x1a", encode_varint(len(message_id)), message_id))
    if highest_sequence_id:
        receipt += b"\x20" + encode_varint(highest_sequence_id)
    command = b"".join((_SEND_RECEIPT_TYPE, b"\x3a", encode_varint(len(receipt)), receipt))
    return _TWO_U32.pack(len(command) + 4, len(command)) + command


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
