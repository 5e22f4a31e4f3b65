"""PRODUCER, SEND and CLOSE_PRODUCER: creating producers and publishing.

SEND_RECEIPT leaves only after the entry is durable, and always in send order (the C++ client
closes the connection otherwise). A SEND with a bad checksum gets SEND_ERROR ChecksumError, the one
SEND_ERROR the C++ producer survives; a SEND for a producer the connection does not have is a
protocol violation. A replicator producer meant for another cluster, or coming from this one (a
replication loop), is refused with NotAllowedError (broker/replication/misdirection.py).
"""
from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from minipulsar.broker.access_modes import MODE_NAMES
from minipulsar.broker.errors import BrokerError, NotAllowedError
from minipulsar.broker.message_id import INT64_MAX
from minipulsar.broker.producer import PendingPublish, Producer
from minipulsar.broker.replication.misdirection import check_replicator_producer
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import Frame, verify_checksum
from minipulsar.proto.hot_commands import SendCommand, encode_send_receipt

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


async def _create_producer(conn: "ServerConnection", request: api.CommandProducer) -> None:
    broker = conn.broker
    broker.security.check_produce(conn, TopicName.parse(request.topic))  # AuthorizationError
    check_replicator_producer(request.producer_name, broker.config.replicator_prefix, broker.config.cluster_name)
    topic = await broker.get_topic(TopicName.parse(request.topic), create=True)
    name = request.producer_name if request.HasField("producer_name") and request.producer_name else broker.new_producer_name()
    producer = Producer(
        topic, conn, request.producer_id, name, request.producer_access_mode, request.epoch,
        user_provided_name=request.user_provided_producer_name,
        metadata={kv.key: kv.value for kv in request.metadata},
    )
    producer.on_complete = functools.partial(_on_published, conn, producer)
    topic.check_not_terminated()  # TopicTerminatedError
    await broker.backlog_quotas.check_producer(topic)  # ProducerBlockedQuotaExceeded*
    if topic.deduplication is not None:
        producer.last_sequence_id = topic.deduplication.last_sequence_id(name)
    if request.HasField("topic_epoch"):
        if request.topic_epoch > INT64_MAX:  # the next epoch must still fit PRODUCER_SUCCESS (int64)
            raise NotAllowedError(f"topic_epoch {request.topic_epoch} is out of range")
        producer.requested_topic_epoch = request.topic_epoch
    if request.HasField("schema") and request.schema.type != api.Schema.Type.Value("None"):
        producer.schema_version = await broker.schemas.add_or_get(topic.name, request.schema)  # IncompatibleSchema
    if conn.closed:
        return
    if name in topic.producers:
        topic.add_producer(producer)  # raises ProducerBusy before the access mode takes the topic
    conn.producers[request.producer_id] = producer  # a queued producer can be closed by its client
    try:
        producer.ready = False
        producer.topic_epoch = await topic.access.admit(
            producer, lambda: _send_producer_success(conn, request.request_id, producer))
        if producer.closed or conn.closed:
            topic.access.removed(producer)  # it left while the epoch was being written
            return
        topic.add_producer(producer)
    except BaseException:
        if conn.producers.get(request.producer_id) is producer:
            del conn.producers[request.producer_id]
        topic.access.removed(producer)
        raise
    producer.ready = True
    _send_producer_success(conn, request.request_id, producer)
    log.info("%s: producer %s on %s (%s, topic epoch %s)", conn.peer_address, name, topic.name,
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
    """Check and store one SEND; the receipt or error follows in send order (_on_published).
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
        _send_error(conn, send, api.ChecksumError, "Checksum failed on the broker")
        return
    conn.publish_started(len(data))
    producer.publish(send.sequence_id, send.highest_sequence_id, send.num_messages, data)


def _on_published(conn: "ServerConnection", producer: Producer, pending: PendingPublish) -> None:
    """SEND_RECEIPT (hand-encoded: the hot path) or SEND_ERROR for one publish, in send order."""
    conn.publish_finished(pending.size)
    if pending.error is not None:
        log.error("%s: publish failed: %s", producer, pending.error)
        code = pending.error.server_error if isinstance(pending.error, BrokerError) else api.PersistenceError
        _send_error(conn, pending, code, f"failed to persist entry: {pending.error}", producer.producer_id)
        return
    position = pending.position  # (-1, -1) for a duplicate of unknown position
    conn.write_frame(encode_send_receipt(producer.producer_id, pending.sequence_id, position.ledger_id,
                                         position.entry_id, pending.highest_sequence_id))


def _send_error(conn: "ServerConnection", send, error: int, message: str, producer_id: int | None = None) -> None:
    conn.send(api.BaseCommand(type=Type.SEND_ERROR, send_error=api.CommandSendError(
        producer_id=producer_id if producer_id is not None else send.producer_id,
        sequence_id=send.sequence_id, error=error, message=message)))


def handle_close_producer(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.close_producer
    conn.remove_producer(request.producer_id)
    conn.send_success(request.request_id)


HANDLERS = {Type.PRODUCER: handle_producer, Type.SEND: handle_send, Type.CLOSE_PRODUCER: handle_close_producer}
