"""Commands the broker sends on its own initiative carry no request id a client could be waiting on:
its CLOSE_CONSUMER and CLOSE_PRODUCER carry -1 (2^64-1 on the wire), as Pulsar's ServerCnx sends.
Raw frames, so the exact request ids on the wire are what is checked."""
import pytest

from minipulsar.proto import BROKER_INITIATED_REQUEST_ID
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload
from tests.helpers import RawConnection

Type = api.BaseCommand.Type
U64_MINUS_ONE = (1 << 64) - 1


@pytest.fixture
def raw(broker):
    connection = RawConnection(broker.url)
    assert connection.connect().type == Type.CONNECTED
    yield connection
    connection.close()


def request(raw: RawConnection, command: api.BaseCommand) -> api.BaseCommand:
    raw.send(command)
    return raw.receive()


def subscribe(raw: RawConnection, topic: str, consumer_id: int, request_id: int, **fields) -> None:
    reply = request(raw, api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
        topic=topic, subscription="sub", subType=api.CommandSubscribe.Shared, consumer_id=consumer_id,
        request_id=request_id, **fields)))
    assert reply.type == Type.SUCCESS and reply.success.request_id == request_id


def create_producer(raw: RawConnection, topic: str, producer_id: int, request_id: int, **fields) -> None:
    reply = request(raw, api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
        topic=topic, producer_id=producer_id, request_id=request_id, **fields)))
    assert reply.type == Type.PRODUCER_SUCCESS and reply.producer_success.request_id == request_id


def test_the_constant_is_pulsars_minus_one():
    assert BROKER_INITIATED_REQUEST_ID == U64_MINUS_ONE


def test_seek_gets_its_success_and_the_close_carries_minus_one(raw, topic):
    """The seek's request id (1) equals the number of commands the broker has started on this
    connection once it closes the consumer: a broker numbering its own CLOSEs 1, 2, ... collides."""
    subscribe(raw, topic, consumer_id=7, request_id=100)
    raw.send(api.BaseCommand(type=Type.SEEK, seek=api.CommandSeek(
        consumer_id=7, request_id=1, message_id=api.MessageIdData(ledgerId=U64_MINUS_ONE, entryId=U64_MINUS_ONE))))
    replies = [raw.receive(), raw.receive()]
    kinds = {reply.type: reply for reply in replies}
    assert set(kinds) == {Type.CLOSE_CONSUMER, Type.SUCCESS}
    assert kinds[Type.SUCCESS].success.request_id == 1
    assert kinds[Type.CLOSE_CONSUMER].close_consumer.consumer_id == 7
    assert kinds[Type.CLOSE_CONSUMER].close_consumer.request_id == U64_MINUS_ONE


def test_forced_unsubscribe_closes_the_other_consumer_with_minus_one(broker, raw, topic):
    other = RawConnection(broker.url)
    try:
        other.connect()
        subscribe(other, topic, consumer_id=1, request_id=1)
        subscribe(raw, topic, consumer_id=2, request_id=2)
        reply = request(raw, api.BaseCommand(type=Type.UNSUBSCRIBE, unsubscribe=api.CommandUnsubscribe(
            consumer_id=2, request_id=3, force=True)))
        assert reply.type == Type.SUCCESS and reply.success.request_id == 3
        close = other.receive()
        assert close.type == Type.CLOSE_CONSUMER
        assert (close.close_consumer.consumer_id, close.close_consumer.request_id) == (1, U64_MINUS_ONE)
    finally:
        other.close()


def test_fenced_producer_is_closed_with_minus_one(broker, raw, topic):
    fencer = RawConnection(broker.url)
    try:
        fencer.connect()
        create_producer(raw, topic, producer_id=1, request_id=1)
        create_producer(fencer, topic, producer_id=1, request_id=1,
                        producer_access_mode=api.ExclusiveWithFencing)
        close = raw.receive()
        assert close.type == Type.CLOSE_PRODUCER
        assert (close.close_producer.producer_id, close.close_producer.request_id) == (1, U64_MINUS_ONE)
    finally:
        fencer.close()


def test_replies_to_requests_keep_their_request_ids(raw, topic):
    """The answers the broker sends for SEND (receipts) match by producer and sequence id."""
    create_producer(raw, topic, producer_id=3, request_id=5)
    metadata = api.MessageMetadata(producer_name="raw", sequence_id=9, publish_time=1)
    raw.send(api.BaseCommand(type=Type.SEND, send=api.CommandSend(producer_id=3, sequence_id=9)),
             build_headers_and_payload(metadata, b"x"))
    receipt = raw.receive()
    assert receipt.type == Type.SEND_RECEIPT
    assert (receipt.send_receipt.producer_id, receipt.send_receipt.sequence_id) == (3, 9)
