"""The frame codec without sockets."""
import random
import struct

import pytest
from hypothesis import given, strategies as st

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError, FrameTooLargeError
from minipulsar.proto.frames import (
    FrameDecoder, build_headers_and_payload, crc32c, encode_command, encode_payload_command,
    parse_metadata, split_headers_and_payload, verify_checksum,
)

Type = api.BaseCommand.Type


def test_crc32c_reference_vector():
    assert crc32c(b"123456789") == 0xE3069283


def test_simple_frame_layout():
    command = api.BaseCommand(type=Type.PING, ping=api.CommandPing())
    frame = encode_command(command)
    total, size = struct.unpack_from(">II", frame)
    assert total == len(frame) - 4 and size == len(frame) - 8
    assert FrameDecoder().feed(frame)[0].command == command


def test_payload_frame_round_trip_and_checksum_coverage():
    metadata = api.MessageMetadata(producer_name="p", sequence_id=7, publish_time=123)
    body = build_headers_and_payload(metadata, b"payload")
    assert struct.unpack_from(">H", body)[0] == 0x0E01
    # the CRC covers [metadataSize][metadata][payload], not the magic or the checksum itself
    assert struct.unpack_from(">I", body, 2)[0] == crc32c(body[6:])
    send = api.BaseCommand(type=Type.SEND, send=api.CommandSend(producer_id=1, sequence_id=7))
    frame = FrameDecoder().feed(encode_payload_command(send, body))[0]
    assert frame.headers_and_payload == body
    assert verify_checksum(body)
    parsed = split_headers_and_payload(body)
    assert body[parsed.payload_offset:] == b"payload"
    assert parse_metadata(body, parsed).sequence_id == 7
    corrupt = body[:-1] + bytes([body[-1] ^ 1])
    assert not verify_checksum(corrupt)


def test_payload_without_checksum_is_accepted():
    meta = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=0).SerializeToString()
    body = struct.pack(">I", len(meta)) + meta + b"x"
    assert verify_checksum(body)
    assert split_headers_and_payload(body).checksum is None


@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30))
def test_decoder_handles_any_chunking(cuts):
    frames = b"".join(
        encode_command(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(consumer_id=i, messagePermits=i)))
        for i in range(20)
    )
    decoder, out, pos = FrameDecoder(), [], 0
    for cut in cuts * 100:
        if pos >= len(frames):
            break
        out += decoder.feed(frames[pos:pos + cut])
        pos += cut
    out += decoder.feed(frames[pos:])
    assert [f.command.flow.consumer_id for f in out] == list(range(20))


def test_oversize_and_malformed_frames_raise():
    with pytest.raises(FrameTooLargeError):
        FrameDecoder(max_frame_size=100).feed(struct.pack(">I", 101))
    with pytest.raises(FrameError):
        FrameDecoder().feed(struct.pack(">II", 8, 4) + b"\xff\xff\xff\xff")
    with pytest.raises(FrameError):
        FrameDecoder().feed(struct.pack(">I", 2) + b"\x00\x00")
    lacking = api.BaseCommand(type=Type.FLOW)
    lacking.flow.SetInParent()  # CommandFlow's required consumer_id and messagePermits are missing
    body = lacking.SerializePartialToString()
    with pytest.raises(FrameError, match="required"):
        FrameDecoder().feed(struct.pack(">II", 4 + len(body), len(body)) + body)


def test_metadata_size_beyond_payload_raises():
    with pytest.raises(FrameError):
        split_headers_and_payload(struct.pack(">I", 99) + b"short")


def checksum_by_parts(buf: bytes) -> bool:
    """verify_checksum's answer spelled out through split_headers_and_payload (its general path)."""
    parsed = split_headers_and_payload(buf)
    return parsed.checksum is None or crc32c(buf[parsed.checked_offset:]) == parsed.checksum


def test_verify_checksum_answers_as_the_general_path_does():
    """The usual 0x0e01 layout is read in one go; on valid, corrupt, short and lying inputs the
    answer (or the FrameError) is the one split_headers_and_payload gives."""
    rng = random.Random(7)
    metadata = api.MessageMetadata(producer_name="p", sequence_id=1, publish_time=2).SerializeToString()
    for _ in range(5000):
        buf = bytearray(build_headers_and_payload(metadata, rng.randbytes(rng.randrange(0, 40))))
        for _ in range(rng.randrange(0, 3)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        buf = bytes(buf[: rng.choice([len(buf), rng.randrange(len(buf) + 1)])])
        try:
            expected = checksum_by_parts(buf)
        except FrameError:
            with pytest.raises(FrameError):
                verify_checksum(buf)
            continue
        assert verify_checksum(buf) == expected, buf.hex()
