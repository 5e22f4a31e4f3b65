"""PRODUCER, SEND and CLOSE_PRODUCER: creating producers and publishing.

Each command becomes one call on the domain: PRODUCER -> the topic's attach_producer (access
modes, epochs, limits, schema), SEND -> the producer's publish, whose SEND_RECEIPT leaves only
after the entry is durable and always in send order (the producer answers it). A SEND with a bad
checksum gets SEND_ERROR ChecksumError, the one SEND_ERROR the C++ producer survives; a SEND for a
producer the connection does not have is a protocol violation. A replicator producer meant for
another cluster, or coming from this one (a replication loop), is refused with NotAllowedError
before its topic is looked up (broker/replication/misdirection.py).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minipulsar.broker.access_modes import MODE_NAMES
from minipulsar.broker.producer import Producer
from minipulsar.broker.specs import ProducerSpec
from minipulsar.broker.replication.misdirection import check_replicator_producer
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import Frame, verify_checksum
from minipulsar.proto.hot_commands import SendCommand

if TYPE_CHECKING:
    from minipulsar.broker.connection import ServerConnection

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type


async def handle_producer(conn: "ServerConnection", frame: Frame) -> None:
    """PRODUCER_SUCCESS once the producer is attached (again at once for a producer id the
    connection has); ServiceNotReady while an earlier PRODUCER with the same producer id is still
    being handled (a second producer would orphan the first), as Pulsar's ServerCnx answers."""
    request = frame.command.producer
    existing = conn.producers.get(request.producer_id)
    if existing is not None:
        # A retried PRODUCER for a producer that already exists on this connection: same answer.
        _send_producer_success(conn, request.request_id, existing)
        return
    with conn.creating("Producer", request.producer_id):  # ServiceNotReadyError
        await _create_producer(conn, request)


def producer_spec(request: api.CommandProducer) -> ProducerSpec:
    """What the PRODUCER command asks for, in the domain's terms."""
    return ProducerSpec(
        producer_id=request.producer_id,
        name=request.producer_name or None,
        access_mode=request.producer_access_mode,
        topic_epoch=request.topic_epoch if request.HasField("topic_epoch") else None,
        metadata={kv.key: kv.value for kv in request.metadata},
        schema=request.schema if request.HasField("schema") else None,
    )


async def _create_producer(conn: "ServerConnection", request: api.CommandProducer) -> None:
    broker = conn.broker
    name = TopicName.parse(request.topic)
    broker.security.check_produce(conn, name)  # AuthorizationError
    check_replicator_producer(request.producer_name, broker.config.replicator_prefix, broker.config.cluster_name)
    topic = await broker.get_topic(name, create=True)
    spec = producer_spec(request)

    def register(producer: Producer) -> None:  # from here on the client can close it
        conn.producers[spec.producer_id] = producer

    try:
        producer = await topic.attach_producer(
            conn, spec, registered=register, queued=lambda p: _send_producer_success(conn, request.request_id, p))
    except BaseException:
        conn.producers.pop(spec.producer_id, None)  # a queued producer the client can no longer close
        raise
    if producer is None:  # it or its connection closed meanwhile
        return
    _send_producer_success(conn, request.request_id, producer)
    log.info("%s: producer %s on %s (%s, topic epoch %s)", conn.peer_address, producer.name, topic.name,
             MODE_NAMES.get(producer.access_mode, producer.access_mode), producer.topic_epoch)


def _send_producer_success(conn: "ServerConnection", request_id: int, producer: Producer) -> None:
    """PRODUCER_SUCCESS; producer_ready=false while a WaitForExclusive producer is queued.
    last_sequence_id -1 (no deduplication) makes the client number its messages from 0."""
    success = api.CommandProducerSuccess(
        request_id=request_id, producer_name=producer.name, last_sequence_id=producer.last_sequence_id,
        producer_ready=producer.ready)
    if producer.topic_epoch is not None and producer.ready:
        success.topic_epoch = producer.topic_epoch
    if producer.schema_version:
        success.schema_version = producer.schema_version
    conn.send(api.BaseCommand(type=Type.PRODUCER_SUCCESS, producer_success=success))


def handle_send(conn: "ServerConnection", frame: Frame) -> None:
    """A SEND that protobuf parsed (one SendFastPathDecoder left to it: see publish_send)."""
    publish_send(conn, frame.command.send, frame.headers_and_payload or b"")


def publish_send(conn: "ServerConnection", send: "api.CommandSend | SendCommand", data: bytes) -> None:
    """Check one SEND's frame and hand it to its producer, which answers it in send order.
    send: a CommandSend or the SendCommand hot_commands.parse_send read (same fields, same defaults)."""
    producer = conn.producers.get(send.producer_id)
    if producer is None:
        conn.protocol_error(f"SEND for unknown producer {send.producer_id}")
        return
    try:
        checksum_ok = verify_checksum(data)
    except FrameError as exc:
        conn.protocol_error(f"malformed SEND payload: {exc}")
        return
    if not checksum_ok:
        log.warning("%s: checksum mismatch on %s seq %d", conn.peer_address, producer, send.sequence_id)
        conn.send_send_error(send.producer_id, send.sequence_id, api.ChecksumError, "Checksum failed on the broker")
        return
    producer.publish(send.sequence_id, send.highest_sequence_id, send.num_messages, data)


def handle_close_producer(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.close_producer
    conn.remove_producer(request.producer_id)
    conn.send_success(request.request_id)


HANDLERS = {Type.PRODUCER: handle_producer, Type.SEND: handle_send, Type.CLOSE_PRODUCER: handle_close_producer}
