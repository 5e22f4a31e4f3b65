"""The hand-encoded hot-path frames equal protobuf's own encoding, byte for byte."""
import pytest

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import FrameDecoder, encode_command, encode_payload_command
from minipulsar.proto.hot_commands import encode_message, encode_send_receipt

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
