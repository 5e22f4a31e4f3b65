"""The hand-encoded hot-path frames equal protobuf's own encoding, byte for byte, and the
hand-parsed SEND reads what protobuf reads."""
import random

import pytest
from google.protobuf.unknown_fields import UnknownFieldSet

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import (Frame, FrameDecoder, SendFastPathDecoder, SendFrame, encode_command,
                                     encode_payload_command)
from minipulsar.proto.hot_commands import SendCommand, encode_message, encode_send_receipt, parse_send

CASES = [
    (0, 0, 0, 0, 0),
    (1, 127, 128, 16383, 0),
    (0x4000, 0x1FFFFF, 0x3FFF, 0x80, 0x7F),
    (7, 2**32, 3, 2**21, 99),
    (2**63, 2**64 - 1, 12, 50000, 2**40),
    (5, 9, -1, -1, 0),  # a duplicate whose original position is unknown
]


@pytest.mark.parametrize("producer_id, sequence_id, ledger_id, entry_id, highest", CASES)
def test_send_receipt_matches_protobuf(producer_id, sequence_id, ledger_id, entry_id, highest):
    receipt = api.CommandSendReceipt(producer_id=producer_id, sequence_id=sequence_id)
    receipt.message_id.ledgerId = ledger_id & (2**64 - 1)
    receipt.message_id.entryId = entry_id & (2**64 - 1)
    if highest:
        receipt.highest_sequence_id = highest
    expected = encode_command(api.BaseCommand(type=api.BaseCommand.SEND_RECEIPT, send_receipt=receipt))
    frame = encode_send_receipt(producer_id, sequence_id, ledger_id, entry_id, highest)
    assert frame == expected
    [decoded] = FrameDecoder().feed(frame)
    assert decoded.command.send_receipt.sequence_id == sequence_id


MESSAGE_CASES = [
    (1, 0, 0, -1, 0, None, None),
    (300, 12, 50000, 3, 2, 7, None),
    (2**40, 2**33, 1, 0, 0, 0, [5, -1, 2**62]),  # ack_set words are signed int64
]


@pytest.mark.parametrize("consumer_id, ledger_id, entry_id, partition, redeliveries, epoch, ack_set", MESSAGE_CASES)
def test_message_matches_protobuf(consumer_id, ledger_id, entry_id, partition, redeliveries, epoch, ack_set):
    message = api.CommandMessage(consumer_id=consumer_id)
    message.message_id.ledgerId, message.message_id.entryId = ledger_id, entry_id
    if partition >= 0:
        message.message_id.partition = partition
    if redeliveries:
        message.redelivery_count = redeliveries
    if epoch is not None:
        message.consumer_epoch = epoch
    if ack_set:
        message.ack_set.extend(ack_set)
    entry = b"\x0e\x01stored entry bytes"
    expected = encode_payload_command(api.BaseCommand(type=api.BaseCommand.MESSAGE, message=message), entry)
    frame = encode_message(consumer_id, ledger_id, entry_id, partition, redeliveries, epoch, ack_set, entry)
    assert frame == expected
    [decoded] = FrameDecoder().feed(frame)
    assert decoded.headers_and_payload == entry and list(decoded.command.message.ack_set) == (ack_set or [])


SEND_FIELDS = ("producer_id", "sequence_id", "num_messages", "highest_sequence_id")
BOUNDARY_VALUES = [0, 1, 127, 128, 16383, 16384, 2**31 - 1, 2**31, 2**32, 2**56, 2**63 - 1, 2**63, 2**64 - 1]
OTHER_SEND_FIELDS = [("txnid_least_bits", 1), ("txnid_most_bits", 2), ("is_chunk", True), ("marker", True)]


def protobuf_reading(command: bytes) -> tuple | None:
    """What the protobuf path reads from a serialized BaseCommand: the four SendCommand fields of a
    valid SEND holding no other field, else None."""
    parsed = api.BaseCommand()
    try:
        parsed.ParseFromString(command)
    except Exception:
        return None
    if not parsed.IsInitialized() or parsed.type != api.BaseCommand.SEND or not parsed.HasField("send"):
        return None
    if [f.name for f, _ in parsed.ListFields()] != ["type", "send"] or len(UnknownFieldSet(parsed)):
        return None
    send = parsed.send
    if {f.name for f, _ in send.ListFields()} - set(SEND_FIELDS) or len(UnknownFieldSet(send)):
        return None
    return tuple(getattr(send, name) for name in SEND_FIELDS)


def random_send(rng: random.Random) -> bytes:
    """A serialized SEND as a client could write it: random values at and around the varint and
    integer boundaries, sometimes a field parse_send leaves to protobuf or a required field missing."""
    send = api.CommandSend()
    for name in SEND_FIELDS:
        if name in ("producer_id", "sequence_id") or rng.random() < 0.5:
            if name == "num_messages":  # int32
                value = rng.choice([0, 1, 127, 128, 2**31 - 1, -1, -2**31, rng.randrange(2**31)])
            else:
                value = rng.choice(BOUNDARY_VALUES + [rng.randrange(2**rng.randrange(1, 65))])
            setattr(send, name, value)
    if rng.random() < 0.2:
        name, value = rng.choice(OTHER_SEND_FIELDS)
        setattr(send, name, value)
    if rng.random() < 0.05:
        send.message_id.ledgerId, send.message_id.entryId = 1, 2
    if rng.random() < 0.05:
        send.ClearField(rng.choice(["producer_id", "sequence_id"]))
        return api.BaseCommand(type=api.BaseCommand.SEND, send=send).SerializePartialToString()
    return api.BaseCommand(type=api.BaseCommand.SEND, send=send).SerializeToString()


def test_parse_send_reads_what_protobuf_reads_or_leaves_it_to_protobuf():
    """Over generated SENDs and byte-level mutations of them, a SendCommand from parse_send always
    equals protobuf's reading of the same bytes; and every SEND as a client serializes it, with no
    other field and values in the ranges parse_send takes, is taken (None is only for the rest)."""
    rng = random.Random(20261125)
    accepted = mutants_accepted = 0
    for _ in range(20000):
        command = random_send(rng)
        mutate = rng.random() < 0.5
        if mutate:
            command = mutated(rng, command)
        fast, slow = parse_send(command), protobuf_reading(command)
        if fast is not None:
            accepted += 1
            mutants_accepted += mutate
            assert tuple(fast) == slow, command.hex()
        elif not mutate and slow is not None:
            producer_id, sequence_id, num_messages, highest = slow
            assert max(producer_id, sequence_id, highest) >= 2**63 or num_messages < 0 or len(command) > 131, \
                command.hex()
    assert accepted > 3000 and mutants_accepted > 100  # both kinds of input reached the comparison


def mutated(rng: random.Random, command: bytes) -> bytes:
    """command with one to three bytes replaced, inserted or deleted."""
    out = bytearray(command)
    for _ in range(rng.randrange(1, 4)):
        action = rng.randrange(3)
        if action == 0 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif action == 1:
            out.insert(rng.randrange(len(out) + 1), rng.randrange(256))
        elif out:
            del out[rng.randrange(len(out))]
    return bytes(out)


def test_send_fast_path_decoder_gives_a_send_frame_for_a_plain_send_and_a_frame_for_the_rest():
    payload = b"\x0e\x01headers and payload"
    plain = api.BaseCommand(type=api.BaseCommand.SEND, send=api.CommandSend(producer_id=2, sequence_id=300))
    chunk = api.BaseCommand(type=api.BaseCommand.SEND, send=api.CommandSend(producer_id=2, sequence_id=301,
                                                                          is_chunk=True))
    flow = api.BaseCommand(type=api.BaseCommand.FLOW, flow=api.CommandFlow(consumer_id=1, messagePermits=10))
    stream = encode_payload_command(plain, payload) + encode_payload_command(chunk, payload) + encode_command(flow)
    fast, protobuf_send, other = SendFastPathDecoder().feed(stream)
    assert fast == SendFrame(SendCommand(2, 300, 1, 0), payload)
    assert protobuf_send == Frame(chunk, payload) and other == Frame(flow, None)
    assert FrameDecoder().feed(stream) == [Frame(plain, payload), Frame(chunk, payload), Frame(flow, None)]
