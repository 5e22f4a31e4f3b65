"""atheris harness over the frame decoder (proto/frames.py FrameDecoder and the payload helpers).

Input: byte 0 = how many cut points follow (mod 4), each 2 bytes (big-endian), then the stream.
Property (tests/fuzz/oracles.py check_frame_decoder): only FrameError is raised, and feeding the
stream whole or split at the cuts gives the same frames.

    python bench/atheris/fuzz_frames.py --minutes 5
"""
from __future__ import annotations

import struct

import atheris
from common import run

with atheris.instrument_imports(include=["minipulsar"]):
    from minipulsar.proto import PulsarApi_pb2 as api
    from minipulsar.proto.frames import (
        build_headers_and_payload,
        encode_command,
        encode_payload_command,
    )

    from tests.fuzz import oracles

Type = api.BaseCommand.Type


def test_one_input(data: bytes) -> None:
    if not data:
        return
    n = data[0] % 4
    cuts = [struct.unpack_from(">H", data, 1 + 2 * i)[0] for i in range(n) if len(data) >= 3 + 2 * i]
    oracles.check_frame_decoder(data[1 + 2 * n:], cuts)


def seeds() -> list[bytes]:
    connect = encode_command(api.BaseCommand(type=Type.CONNECT, connect=api.CommandConnect(
        client_version="seed", protocol_version=20)))
    producer = encode_command(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
        topic="persistent://public/default/t", producer_id=1, request_id=1)))
    metadata = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, partition_key="k")
    send = encode_payload_command(api.BaseCommand(type=Type.SEND, send=api.CommandSend(
        producer_id=1, sequence_id=0)), build_headers_and_payload(metadata, b"payload"))
    ack = encode_command(api.BaseCommand(type=Type.ACK, ack=api.CommandAck(
        consumer_id=1, ack_type=0, message_id=[api.MessageIdData(ledgerId=1, entryId=2)])))
    return [b"\x00" + connect, b"\x00" + connect + producer + send, b"\x01\x00\x05" + send + ack, b"\x00" + ack]


if __name__ == "__main__":
    run("frames", test_one_input, seeds())
