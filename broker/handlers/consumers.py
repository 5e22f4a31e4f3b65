"""SUBSCRIBE, FLOW, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES, UNSUBSCRIBE, CLOSE_CONSUMER, SEEK,
GET_LAST_MESSAGE_ID and CONSUMER_STATS: everything a consumer handle asks of the broker."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.consumer import Consumer
from broker.deduplication import CURSOR_NAME as DEDUP_CURSOR_NAME
from broker.entry_info import entry_info, publish_time_of
from broker.errors import ConsumerBusyError, NotAllowedError
from broker.message_id import INT64_MAX, position_of, set_message_id
from broker.replication import last_data_position
from broker.topic import EARLIEST
from broker.topic_name import TopicName
from proto import PulsarApi_pb2 as api
from proto.frames import Frame
from storage import Position

if TYPE_CHECKING:
    from broker.connection import ServerConnection

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type
SubType = api.CommandSubscribe.SubType
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
    request = frame.command.subscribe
    if request.consumer_id in conn.consumers:
        conn.send_success(request.request_id)  # a retried SUBSCRIBE for a consumer we already have
        return
    broker = conn.broker
    if not request.subscription:
        raise NotAllowedError("empty subscription name")
    if request.subscription.startswith(broker.replicator_prefix + ".") or request.subscription == DEDUP_CURSOR_NAME:
        raise NotAllowedError(f"Subscription with reserved subscription name attempted: {request.subscription}")
    topic = await broker.get_topic(TopicName.parse(request.topic), create=request.force_topic_creation)
    if request.HasField("schema") and request.schema.type != api.Schema.Type.Value("None"):
        idle = not topic.producers and not any(s.consumers for s in topic.subscriptions.values()) \
            and topic.ledger.number_of_entries == 0
        await broker.schemas.check_for_consumer(topic.name, request.schema, idle)  # IncompatibleSchema
    initial = "earliest" if request.initialPosition == api.CommandSubscribe.Earliest else "latest"
    subscription = await topic.subscribe(request.subscription, request.durable, initial, _reader_start(request))
    state = request.replicate_subscription_state if request.HasField("replicate_subscription_state") else None
    topic.replication.subscribe_requested(subscription, state)  # PIP-33 tri-state
    consumer = Consumer(
        subscription, conn, request.consumer_id,
        request.consumer_name or f"consumer-{request.consumer_id}", request.subType,
        priority_level=request.priority_level,
        epoch=request.consumer_epoch if request.HasField("consumer_epoch") else None,
        metadata={kv.key: kv.value for kv in request.metadata},
    )
    if request.HasField("keySharedMeta"):  # absent on Key_Shared means AUTO_SPLIT, as in Pulsar
        meta = request.keySharedMeta
        consumer.key_shared_mode = meta.keySharedMode
        consumer.hash_ranges = [(r.start, r.end) for r in meta.hashRanges]
        consumer.allow_out_of_order = meta.allowOutOfOrderDelivery
    if conn.closed:
        return
    try:
        subscription.add_consumer(consumer)
    except Exception:
        await topic.consumer_closed(subscription)
        raise
    conn.consumers[request.consumer_id] = consumer
    conn.send_success(request.request_id)
    log.info("%s: consumer %s subscribed to %s/%s", conn.peer_address, consumer.name, topic.name, subscription.name)


def _consumer(conn: "ServerConnection", consumer_id: int) -> Consumer | None:
    consumer = conn.consumers.get(consumer_id)
    if consumer is None:
        log.debug("%s: unknown consumer id %d", conn.peer_address, consumer_id)
    return consumer


def handle_flow(conn: "ServerConnection", frame: Frame) -> None:
    flow = frame.command.flow
    consumer = _consumer(conn, flow.consumer_id)
    if consumer is not None:
        consumer.add_permits(flow.messagePermits)
        consumer.subscription.dispatcher.wake()


def _fully_acked(message_id: api.MessageIdData) -> bool:
    """An ack_set with a bit still set leaves batch indexes unacknowledged (set bit = not acked);
    batch-index acknowledgement is not kept, so such a partial ack leaves the entry pending."""
    return not any(message_id.ack_set)


def handle_ack(conn: "ServerConnection", frame: Frame) -> None:
    ack = frame.command.ack
    consumer = _consumer(conn, ack.consumer_id)
    if consumer is not None:
        if ack.HasField("validation_error"):
            log.warning("%s: %s discarded a message: %s", conn.peer_address, consumer,
                        api.CommandAck.ValidationError.Name(ack.validation_error))
        subscription = consumer.subscription
        if conn.broker.config.acknowledgment_at_batch_index_level_enabled:
            positions = _batch_index_acks(subscription, ack)
        else:
            positions = [position_of(m) for m in ack.message_id if _fully_acked(m)]
        if ack.ack_type == api.CommandAck.Cumulative:
            if positions:
                subscription.acknowledge_cumulative(consumer, positions[-1])
        elif positions:
            subscription.acknowledge(consumer, positions)
    if ack.HasField("request_id"):
        conn.send(api.BaseCommand(type=Type.ACK_RESPONSE, ackResponse=api.CommandAckResponse(
            consumer_id=ack.consumer_id, request_id=ack.request_id)))


def _batch_index_acks(subscription, ack: api.CommandAck) -> list:
    """acknowledgmentAtBatchIndexLevelEnabled: keep partial ack_sets per entry (broker/batch_acks.py);
    returns the positions now fully acknowledged. A cumulative ack inside a batch acknowledges the
    entries before it and keeps the batch's partial set, as Pulsar does."""
    positions = []
    for message_id in ack.message_id:
        position = position_of(message_id)
        if _fully_acked(message_id):
            positions.append(position)
            continue
        if subscription.batch_acks.record(position, message_id.ack_set):
            positions.append(position)
        elif ack.ack_type == api.CommandAck.Cumulative:
            previous = subscription.topic.ledger.previous_position(position)
            if previous > subscription.cursor.mark_delete_position:
                positions.append(previous)
    return positions


def handle_redeliver(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.redeliverUnacknowledgedMessages
    consumer = _consumer(conn, request.consumer_id)
    if consumer is None:
        return
    if request.HasField("consumer_epoch"):
        consumer.epoch = request.consumer_epoch
    single_active = consumer.sub_type in (SubType.Exclusive, SubType.Failover)
    # Exclusive/Failover always redeliver everything unacknowledged, in order (Pulsar rewinds).
    positions = None if single_active or not request.message_ids else [position_of(m) for m in request.message_ids]
    consumer.subscription.dispatcher.redeliver(consumer, positions)


async def handle_unsubscribe(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.unsubscribe
    consumer = _consumer(conn, request.consumer_id)
    if consumer is None:
        conn.send_success(request.request_id)
        return
    subscription = consumer.subscription
    others = [c for c in subscription.consumers if c is not consumer]
    if others and not request.force:
        raise ConsumerBusyError(f"Subscription {subscription.name} has other connected consumers")
    for other in others:
        other.connection.close_consumer_by_broker(other)
    conn.consumers.pop(consumer.consumer_id, None)
    subscription.remove_consumer(consumer)
    await subscription.topic.remove_subscription(subscription.name)
    conn.send_success(request.request_id)


def handle_close_consumer(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.close_consumer
    consumer = conn.consumers.get(request.consumer_id)
    if consumer is not None:
        conn.remove_consumer(consumer)
    conn.send_success(request.request_id)


async def handle_seek(conn: "ServerConnection", frame: Frame) -> None:
    """Reset the cursor so the next entry is the one sought; consumers are disconnected first and
    reconnect by themselves (as on Apache Pulsar). By time: the first entry published after it."""
    request = frame.command.seek
    consumer = _consumer(conn, request.consumer_id)
    if consumer is None:
        raise NotAllowedError(f"consumer {request.consumer_id} not found for seek")
    subscription = consumer.subscription
    ledger = subscription.topic.ledger
    end = ledger.next_valid_position(ledger.last_confirmed_position)
    if request.HasField("message_publish_time"):
        timestamp = request.message_publish_time
        found = await ledger.find_newest_matching(lambda data: publish_time_of(data) <= timestamp)
        target = ledger.next_valid_position(found) if found is not None else (ledger.first_position or end)
    elif request.HasField("message_id"):
        target = position_of(request.message_id)
        if target.ledger_id < 0:
            target = ledger.first_position or end
        elif target.ledger_id == INT64_MAX or target > end:
            target = end
    else:
        raise NotAllowedError("SEEK needs a message id or a publish time")
    subscription.reset_cursor(target)
    log.info("%s: %s reset to %s", conn.peer_address, subscription, target)
    conn.send_success(request.request_id)


async def handle_get_last_message_id(conn: "ServerConnection", frame: Frame) -> None:
    """The last entry's id (with the batch index of its last message), and the mark-delete position."""
    request = frame.command.getLastMessageId
    consumer = _consumer(conn, request.consumer_id)
    if consumer is None:
        raise NotAllowedError(f"consumer {request.consumer_id} not found")
    topic = consumer.subscription.topic
    last = await last_data_position(topic.ledger)  # never a marker (PIP-33)
    reply = api.CommandGetLastMessageIdResponse(request_id=request.request_id)
    set_message_id(reply.last_message_id, last, topic.partition_index)
    if last.entry_id >= 0:
        entry = await topic.ledger.read_entry(last)
        info = entry_info(entry.data) if entry is not None else None
        if info is not None and info.metadata is not None and info.metadata.HasField("num_messages_in_batch"):
            reply.last_message_id.batch_index = info.num_messages - 1
    set_message_id(reply.consumer_mark_delete_position, consumer.subscription.cursor.mark_delete_position)
    conn.send(api.BaseCommand(type=Type.GET_LAST_MESSAGE_ID_RESPONSE, getLastMessageIdResponse=reply))


def handle_consumer_stats(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.consumerStats
    reply = api.CommandConsumerStatsResponse(request_id=request.request_id)
    consumer = conn.consumers.get(request.consumer_id)
    if consumer is None:
        reply.error_code, reply.error_message = api.ConsumerNotFound, f"consumer {request.consumer_id} not found"
    else:
        subscription = consumer.subscription
        reply.consumerName = consumer.name
        reply.availablePermits = max(consumer.permits, 0)
        reply.unackedMessages = consumer.unacked_messages
        reply.address = consumer.address
        reply.type = subscription.stats()["type"]
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
