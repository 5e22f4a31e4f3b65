"""SUBSCRIBE, FLOW, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES, UNSUBSCRIBE, CLOSE_CONSUMER, SEEK,
GET_LAST_MESSAGE_ID and CONSUMER_STATS: everything a consumer handle asks of the broker."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minipulsar.broker.consumer import Consumer
from minipulsar.broker.errors import NotAllowedError
from minipulsar.broker.message_id import INT64_MAX, acked_entries, position_of, set_message_id
from minipulsar.broker.specs import ConsumerSpec, SubscriptionSpec
from minipulsar.broker.topic import EARLIEST, check_subscription_name
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import Frame
from minipulsar.storage import Position

if TYPE_CHECKING:
    from minipulsar.broker.connection import ServerConnection

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type


def _reader_start(request: api.CommandSubscribe) -> Position | None:
    """A reader's start: EARLIEST, None for latest, else the first position to read."""
    if not request.HasField("start_message_id"):
        return EARLIEST if request.initialPosition == api.CommandSubscribe.Earliest else None
    position = position_of(request.start_message_id)
    if position.ledger_id < 0:
        return EARLIEST
    if position.ledger_id == INT64_MAX:
        return None
    return position


async def handle_subscribe(conn: "ServerConnection", frame: Frame) -> None:
    """SUCCESS once the consumer is attached (again at once for a consumer id the connection has);
    ServiceNotReady while an earlier SUBSCRIBE with the same consumer id is still being handled."""
    request = frame.command.subscribe
    if _consumer(conn, request.consumer_id) is not None:
        conn.send_success(request.request_id)  # a retried SUBSCRIBE for a consumer we already have
        return
    with conn.creating("Consumer", request.consumer_id):  # ServiceNotReadyError
        await _subscribe(conn, request)


def subscription_spec(request: api.CommandSubscribe) -> SubscriptionSpec:
    """What the SUBSCRIBE command asks for about the subscription, in the domain's terms."""
    return SubscriptionSpec(
        name=request.subscription,
        durable=request.durable,
        initial_position="earliest" if request.initialPosition == api.CommandSubscribe.Earliest else "latest",
        start=_reader_start(request),
        replicate_state=request.replicate_subscription_state if request.HasField("replicate_subscription_state") else None,
    )


def consumer_spec(request: api.CommandSubscribe) -> ConsumerSpec:
    """What the SUBSCRIBE command asks for about the consumer; KeySharedMeta absent on Key_Shared
    means AUTO_SPLIT, as in Pulsar."""
    meta = request.keySharedMeta if request.HasField("keySharedMeta") else None
    return ConsumerSpec(
        consumer_id=request.consumer_id,
        name=request.consumer_name or f"consumer-{request.consumer_id}",
        sub_type=request.subType,
        priority_level=request.priority_level,
        epoch=request.consumer_epoch if request.HasField("consumer_epoch") else None,
        metadata={kv.key: kv.value for kv in request.metadata},
        read_compacted=request.read_compacted,
        key_shared_mode=meta.keySharedMode if meta is not None else api.AUTO_SPLIT,
        hash_ranges=tuple((r.start, r.end) for r in meta.hashRanges) if meta is not None else (),
        allow_out_of_order=meta.allowOutOfOrderDelivery if meta is not None else False,
    )


async def _subscribe(conn: "ServerConnection", request: api.CommandSubscribe) -> None:
    broker = conn.broker
    check_subscription_name(request.subscription, broker.config.replicator_prefix)  # NotAllowedError
    name = TopicName.parse(request.topic)
    broker.security.check_consume(conn, name)  # AuthorizationError
    topic = await broker.get_topic(name, create=request.force_topic_creation)
    consumer = await topic.attach_consumer(conn, subscription_spec(request), consumer_spec(request),
                                           request.schema if request.HasField("schema") else None)
    if consumer is None:  # the connection closed meanwhile
        return
    conn.consumers[request.consumer_id] = consumer
    conn.send_success(request.request_id)
    log.info("%s: consumer %s subscribed to %s/%s", conn.peer_address, consumer.name, topic.name,
             consumer.subscription.name)


def _consumer(conn: "ServerConnection", consumer_id: int) -> Consumer | None:
    """The connection's open consumer with that id; None when unknown or already closed (an
    UNSUBSCRIBE closes it at once, then drops it from the connection once its cursor is deleted:
    commands meanwhile must not reach that cursor)."""
    consumer = conn.consumers.get(consumer_id)
    if consumer is None or consumer.closed:
        log.debug("%s: unknown or closed consumer id %d", conn.peer_address, consumer_id)
        return None
    return consumer


def handle_flow(conn: "ServerConnection", frame: Frame) -> None:
    flow = frame.command.flow
    consumer = _consumer(conn, flow.consumer_id)
    if consumer is not None:
        consumer.flow(flow.messagePermits)


def handle_ack(conn: "ServerConnection", frame: Frame) -> None:
    ack = frame.command.ack
    consumer = _consumer(conn, ack.consumer_id)
    if consumer is not None:
        if ack.HasField("validation_error"):
            log.warning("%s: %s discarded a message: %s", conn.peer_address, consumer,
                        api.CommandAck.ValidationError.Name(ack.validation_error))
        acks = acked_entries(ack.message_id)
        consumer.subscription.acknowledge_message_ids(consumer, acks, ack.ack_type == api.CommandAck.Cumulative)
    if ack.HasField("request_id"):
        conn.send(api.BaseCommand(type=Type.ACK_RESPONSE, ackResponse=api.CommandAckResponse(
            consumer_id=ack.consumer_id, request_id=ack.request_id)))


def handle_redeliver(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.redeliverUnacknowledgedMessages
    consumer = _consumer(conn, request.consumer_id)
    if consumer is None:
        return
    if request.HasField("consumer_epoch"):
        consumer.epoch = request.consumer_epoch
    consumer.redeliver([position_of(m) for m in request.message_ids] or None)


async def handle_unsubscribe(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.unsubscribe
    consumer = _consumer(conn, request.consumer_id)
    if consumer is not None:
        try:
            await consumer.subscription.unsubscribe(consumer, request.force)  # ConsumerBusyError
        finally:
            if consumer.closed and conn.consumers.get(request.consumer_id) is consumer:
                del conn.consumers[request.consumer_id]  # even when deleting the cursor failed
    conn.send_success(request.request_id)


def handle_close_consumer(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.close_consumer
    conn.remove_consumer(request.consumer_id)
    conn.send_success(request.request_id)


async def handle_seek(conn: "ServerConnection", frame: Frame) -> None:
    """Reset the cursor so the next entry is the one sought; consumers are disconnected first and
    reconnect by themselves (as on Apache Pulsar). By time: the first entry published after it."""
    request = frame.command.seek
    consumer = _consumer(conn, request.consumer_id)
    if consumer is None:
        raise NotAllowedError(f"consumer {request.consumer_id} not found for seek")
    subscription = consumer.subscription
    if request.HasField("message_publish_time"):
        await subscription.reset_cursor_by_timestamp(request.message_publish_time)
    elif request.HasField("message_id"):
        subscription.reset_cursor(position_of(request.message_id))
    else:
        raise NotAllowedError("SEEK needs a message id or a publish time")
    log.info("%s: %s reset to %s", conn.peer_address, subscription, subscription.cursor.read_position)
    conn.send_success(request.request_id)


async def handle_get_last_message_id(conn: "ServerConnection", frame: Frame) -> None:
    """The last entry's id (with the batch index of its last message), and the mark-delete position."""
    request = frame.command.getLastMessageId
    consumer = _consumer(conn, request.consumer_id)
    if consumer is None:
        raise NotAllowedError(f"consumer {request.consumer_id} not found")
    last = await consumer.subscription.get_last_message_id(consumer.read_compacted)
    reply = api.CommandGetLastMessageIdResponse(request_id=request.request_id)
    set_message_id(reply.last_message_id, last.position, consumer.subscription.topic.partition_index)
    if last.batch_index is not None:
        reply.last_message_id.batch_index = last.batch_index
    set_message_id(reply.consumer_mark_delete_position, last.mark_delete_position)
    conn.send(api.BaseCommand(type=Type.GET_LAST_MESSAGE_ID_RESPONSE, getLastMessageIdResponse=reply))


def handle_consumer_stats(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.consumerStats
    reply = api.CommandConsumerStatsResponse(request_id=request.request_id)
    consumer = _consumer(conn, request.consumer_id)
    if consumer is None:
        reply.error_code, reply.error_message = api.ConsumerNotFound, f"consumer {request.consumer_id} not found"
    else:
        subscription = consumer.subscription
        reply.consumerName = consumer.name
        reply.availablePermits = max(consumer.permits, 0)
        reply.unackedMessages = consumer.unacked_messages
        reply.address = consumer.address
        reply.type = subscription.type_name
        reply.msgBacklog = subscription.backlog
        reply.connectedSince = consumer.stats()["connectedSince"]
    conn.send(api.BaseCommand(type=Type.CONSUMER_STATS_RESPONSE, consumerStatsResponse=reply))


HANDLERS = {
    Type.SUBSCRIBE: handle_subscribe,
    Type.FLOW: handle_flow,
    Type.ACK: handle_ack,
    Type.REDELIVER_UNACKNOWLEDGED_MESSAGES: handle_redeliver,
    Type.UNSUBSCRIBE: handle_unsubscribe,
    Type.CLOSE_CONSUMER: handle_close_consumer,
    Type.SEEK: handle_seek,
    Type.GET_LAST_MESSAGE_ID: handle_get_last_message_id,
    Type.CONSUMER_STATS: handle_consumer_stats,
}
