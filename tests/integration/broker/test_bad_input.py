"""Malformed input closes only the offending connection; the broker and other clients carry on."""
import struct

import pulsar
import pytest

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload
from tests.helpers import RawConnection

Type = api.BaseCommand.Type


@pytest.fixture
def raw(broker):
    conns = []

    def make():
        c = RawConnection(broker.url)
        conns.append(c)
        return c

    yield make
    for c in conns:
        c.close()


def assert_broker_healthy(client, topic):
    """A fresh producer/consumer pair still works and earlier messages are still there."""
    consumer = client.subscribe(topic, "health", initial_position=pulsar.InitialPosition.Earliest)
    client.create_producer(topic).send(b"alive")
    data = []
    while not data or data[-1] != b"alive":
        data.append(consumer.receive(5000).data())
    return data


def test_connected_reply_carries_what_the_cpp_client_needs(raw):
    reply = raw().connect()
    assert reply.type == Type.CONNECTED
    assert reply.connected.server_version
    assert reply.connected.protocol_version == 20
    assert reply.connected.max_message_size == 5 * 1024 * 1024


@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",                      # not our protocol: size field is huge
    struct.pack(">I", 0xFFFFFFF0) + b"\x00" * 16,               # a size field that lies
    struct.pack(">I", 5 * 1024 * 1024 + 10 * 1024 + 1),         # one byte over the frame limit
    struct.pack(">II", 12, 8) + b"\xff" * 8,                    # sizes fine, command unparsable
    struct.pack(">II", 6, 100) + b"\x00\x00",                   # command size beyond the frame
], ids=["http", "lying-size", "oversize", "unparsable", "command-size-beyond-frame"])
def test_garbage_closes_only_that_connection(raw, client, topic, garbage):
    client.create_producer(topic).send(b"before")
    bad = raw()
    bad.connect()
    bad.send_raw(garbage)
    assert bad.is_closed_by_peer()
    assert assert_broker_healthy(client, topic) == [b"before", b"alive"]


def test_command_before_connect_gets_error_and_close(raw):
    bad = raw()
    bad.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
        topic="persistent://public/default/x", producer_id=1, request_id=7)))
    reply = bad.receive()
    assert reply.type == Type.ERROR and reply.error.request_id == 7
    assert bad.is_closed_by_peer()


def test_send_for_unknown_producer_closes_the_connection(raw, client, topic):
    bad = raw()
    bad.connect()
    metadata = api.MessageMetadata(producer_name="ghost", sequence_id=0, publish_time=1)
    bad.send(api.BaseCommand(type=Type.SEND, send=api.CommandSend(producer_id=42, sequence_id=0)),
             build_headers_and_payload(metadata, b"boo"))
    assert bad.is_closed_by_peer()
    assert assert_broker_healthy(client, topic) == [b"alive"]


def _create_producer(conn: RawConnection, topic: str) -> None:
    conn.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(topic=topic, producer_id=1, request_id=1)))
    reply = conn.receive()
    assert reply.type == Type.PRODUCER_SUCCESS, reply


def test_wrong_checksum_gets_send_error_and_the_connection_survives(raw, topic):
    conn = raw()
    conn.connect()
    _create_producer(conn, topic)
    metadata = api.MessageMetadata(producer_name="raw", sequence_id=0, publish_time=1)
    frame = bytearray(build_headers_and_payload(metadata, b"payload"))
    frame[-1] ^= 0xFF  # corrupt the payload after the checksum was computed
    conn.send(api.BaseCommand(type=Type.SEND, send=api.CommandSend(producer_id=1, sequence_id=0)), bytes(frame))
    reply = conn.receive()
    assert reply.type == Type.SEND_ERROR and reply.send_error.error == api.ChecksumError
    conn.send(api.BaseCommand(type=Type.SEND, send=api.CommandSend(producer_id=1, sequence_id=1)),
              build_headers_and_payload(api.MessageMetadata(producer_name="raw", sequence_id=1, publish_time=1), b"ok"))
    reply = conn.receive()
    assert reply.type == Type.SEND_RECEIPT and reply.send_receipt.sequence_id == 1


def test_a_stalled_half_frame_does_not_block_others(raw, client, topic):
    stalled = raw()
    stalled.connect()
    stalled.send_raw(struct.pack(">I", 1000) + b"\x00" * 10)  # promises 1000 bytes, sends 10
    assert assert_broker_healthy(client, topic) == [b"alive"]
    assert not stalled.is_closed_by_peer()


def test_error_for_a_bad_request_keeps_the_connection(raw):
    conn = raw()
    conn.connect()
    conn.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
        topic="persistent://only-two-parts", producer_id=1, request_id=3)))
    reply = conn.receive()
    assert reply.type == Type.ERROR and reply.error.error == api.InvalidTopicName
    conn.send(api.BaseCommand(type=Type.PING, ping=api.CommandPing()))
    assert conn.receive().type == Type.PONG
