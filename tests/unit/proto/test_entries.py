"""proto.entries: entries and batches round trip (build, split, rebuild with messages compacted
out), the byte layout of Pulsar's batches, batch-index ack-set words, and proto's errors on
corrupt entries."""
import struct

import pytest

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.entries import (ack_set_words, acked_indexes, build_entry, is_batch, join_batch, open_entry,
                                      signed_words, split_batch, unsigned_words)
from minipulsar.proto.errors import BatchFormatError, ChecksumMismatchError, CorruptPayloadError, FrameError
from minipulsar.proto.frames import build_headers_and_payload, split_headers_and_payload

KINDS = [value for _, value in api.CompressionType.items()]


def _singles(n: int) -> list[api.SingleMessageMetadata]:
    singles = []
    for i in range(n):
        single = api.SingleMessageMetadata(partition_key=f"k{i}", event_time=1000 + i, sequence_id=i)
        single.properties.add(key="i", value=str(i))
        singles.append(single)
    return singles


def _payloads(n: int) -> list[bytes]:
    return [f"payload-{i}".encode() * (i + 1) for i in range(n)]


def _batch_entry(n: int, kind: int = api.NONE) -> bytes:
    metadata = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=n,
                                   compression=kind)
    return build_entry(metadata, join_batch(_singles(n), _payloads(n)))


def test_batch_layout_is_size_metadata_payload_per_message():
    single = api.SingleMessageMetadata(partition_key="k")
    payload = join_batch([single, api.SingleMessageMetadata()], [b"abc", b""])
    first = api.SingleMessageMetadata(partition_key="k", payload_size=3).SerializeToString()
    second = api.SingleMessageMetadata(payload_size=0).SerializeToString()
    assert payload == struct.pack(">I", len(first)) + first + b"abc" + struct.pack(">I", len(second)) + second
    assert single.payload_size == 3  # set in place


@pytest.mark.parametrize("kind", KINDS)
def test_build_open_split_round_trip(kind):
    entry = _batch_entry(5, kind)
    metadata, payload = open_entry(entry)
    assert is_batch(metadata) and metadata.compression == kind
    assert metadata.HasField("uncompressed_size") == (kind != api.NONE)
    assert metadata.uncompressed_size == (len(payload) if kind != api.NONE else 0)
    singles, payloads = split_batch(payload, 5)
    assert payloads == _payloads(5)
    assert [(s.partition_key, s.event_time, s.sequence_id, s.payload_size, [(p.key, p.value) for p in s.properties])
            for s in singles] == [(f"k{i}", 1000 + i, i, len(_payloads(5)[i]), [("i", str(i))]) for i in range(5)]


def test_split_from_first_returns_the_tail_and_count_bounds_it():
    _, payload = open_entry(_batch_entry(6))
    _, every = split_batch(payload, 6)
    assert [s.sequence_id for s in split_batch(payload, 6, 4)[0]] == [4, 5]
    assert [s.sequence_id for s in split_batch(payload, 3)[0]] == [0, 1, 2]
    assert split_batch(payload, 5, 2)[1] == every[2:5]
    assert split_batch(payload, 0) == ([], []) and split_batch(payload, 3, 3) == ([], [])


@pytest.mark.parametrize("kind", KINDS)
def test_rebuild_with_messages_compacted_out(kind):
    metadata, payload = open_entry(_batch_entry(4, kind))
    singles, payloads = split_batch(payload, 4)
    for index in (0, 2):
        singles[index].compacted_out = True
        payloads[index] = b""
    rebuilt = build_entry(metadata, join_batch(singles, payloads))
    metadata2, payload2 = open_entry(rebuilt)
    assert metadata2.compression == kind and metadata2.num_messages_in_batch == 4
    singles2, payloads2 = split_batch(payload2, 4)
    original = _payloads(4)
    assert [(s.compacted_out, s.payload_size, s.sequence_id) for s in singles2] == [
        (True, 0, 0), (False, len(original[1]), 1), (True, 0, 2), (False, len(original[3]), 3)]
    assert payloads2 == [b"", original[1], b"", original[3]]


def test_build_entry_keeps_an_uncompressed_size_true():
    metadata = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, uncompressed_size=99)
    metadata2, payload = open_entry(build_entry(metadata, b"four"))
    assert metadata2.uncompressed_size == 4 and payload == b"four"


def test_single_message_entry_is_not_a_batch():
    metadata, payload = open_entry(build_entry(api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1),
                                               b"hello"))
    assert not is_batch(metadata) and payload == b"hello"


def test_checksum_mismatch_and_unverified_open():
    entry = _batch_entry(2)
    broken = entry[:-1] + bytes([entry[-1] ^ 0xFF])
    with pytest.raises(ChecksumMismatchError):
        open_entry(broken)
    _, payload = open_entry(broken, verify=False)
    assert len(split_batch(payload, 2)[0]) == 2
    unchecked = entry[split_headers_and_payload(entry).checked_offset:]  # no magic/crc pair at all
    assert open_entry(unchecked)[1] == open_entry(entry)[1]


def test_unparsable_headers_raise_frame_error():
    with pytest.raises(FrameError):
        open_entry(b"\x0e\x01\x00\x00\x00\x00\x00\x00\x10\x00")  # metadata size past the end
    with pytest.raises(FrameError):
        open_entry(struct.pack(">I", 3) + b"\xff\xff\xff")  # metadata does not parse


def test_corrupt_compressed_payload_raises_corrupt_payload():
    metadata = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, compression=api.LZ4,
                                   uncompressed_size=1000)
    with pytest.raises(CorruptPayloadError):
        open_entry(build_headers_and_payload(metadata, b"\xff" * 30))


def test_join_batch_needs_a_payload_per_metadata():
    with pytest.raises(ValueError):
        join_batch(_singles(2), _payloads(1))


def test_broken_batches_raise_batch_format_error():
    _, payload = open_entry(_batch_entry(3))
    with pytest.raises(BatchFormatError, match=f"does not parse at byte {len(payload)}"):
        split_batch(payload, 4)  # one message more than there is: its size field is missing
    with pytest.raises(BatchFormatError, match="does not parse"):
        split_batch(payload, 5, 4)  # the same, found while skipping to the first message asked for
    with pytest.raises(BatchFormatError, match="first 3 messages"):
        split_batch(payload[:-1], 3, 3)
    with pytest.raises(BatchFormatError, match="runs past"):
        split_batch(payload[:-1], 3)  # the last payload is one byte short
    too_long = api.SingleMessageMetadata(payload_size=100).SerializeToString()
    with pytest.raises(BatchFormatError, match="runs past"):
        split_batch(struct.pack(">I", len(too_long)) + too_long + b"short", 1)
    negative = api.SingleMessageMetadata(payload_size=-5).SerializeToString()
    with pytest.raises(BatchFormatError):
        split_batch(struct.pack(">I", len(negative)) + negative + b"x" * 10, 1)
    with pytest.raises(BatchFormatError, match="does not parse"):
        split_batch(struct.pack(">I", 3) + b"\xff\xff\xff", 1)


def test_ack_set_words_are_java_bitset_long_words():
    assert ack_set_words({0, 2}, 3) == [0b101]
    assert ack_set_words({63}, 64) == [-(1 << 63)]  # BitSet.toLongArray: a signed long
    assert ack_set_words({64}, 65) == [0, 1]
    assert ack_set_words(set(), 130) == [0, 0, 0]
    assert ack_set_words(range(64), 64) == [-1]


def test_acked_indexes_are_the_clear_bits():
    assert acked_indexes([0b101], 3) == {1}
    assert acked_indexes([-1], 64) == set()
    assert acked_indexes([-(1 << 63)], 64) == set(range(63))
    assert acked_indexes([0b1], 66) == set(range(1, 66))  # past the last word: acknowledged
    words = ack_set_words({3, 70, 99}, 100)
    assert acked_indexes(words, 100) == set(range(100)) - {3, 70, 99}
    assert acked_indexes(unsigned_words(words), 100) == acked_indexes(words, 100)


def test_signed_and_unsigned_words_round_trip():
    words = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
    signed = signed_words(words)
    assert signed == [0, 1, (1 << 63) - 1, -(1 << 63), -1]
    assert unsigned_words(signed) == words
