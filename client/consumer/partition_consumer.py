"""The consumer of one (partition) topic: subscribing, flow control, receiving, acknowledging,
redelivery, seek, and re-subscribing after a lost connection.

Flow control: after SUBSCRIBE succeeds the consumer grants receiver_queue_size permits; each message
the application takes returns one, and FLOW is sent when receiver_queue_size / 2 have gathered
(C++ ConsumerImpl, permits refilled at receiverQueueSize/2). On reconnect the queued messages of
this consumer are dropped (the broker redelivers them) and a full FLOW is granted again; a
non-durable subscription (a reader) resumes after the last message the application took.
Redelivery: Shared, Key_Shared and Key_Failover send the message ids; Exclusive and Failover ask
for everything unacknowledged and bump the consumer epoch, so stale in-flight messages are dropped.
Dead letters: an entry delivered with redelivery_count >= max_redeliver_count is, on its next
redelivery, published to the dead-letter topic and acknowledged instead (Java ConsumerImpl).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minipulsar.client.connection import ClientConnection
from minipulsar.client.consumer.acks import AckGroupingTracker, BatchAcker
from minipulsar.client.consumer.message_queue import MessageQueue
from minipulsar.client.consumer.payload import CorruptEntry, decode_entry
from minipulsar.client.consumer.redelivery import RedeliveryTimer
from minipulsar.client.exceptions import CumulativeAcknowledgementNotAllowedError, Timeout
from minipulsar.client.handler import HandlerBase
from minipulsar.client.message import Message
from minipulsar.client.message_id import MessageId
from minipulsar.client.options import ConsumerDeadLetterPolicy, ConsumerKeySharedPolicy, ConsumerType, InitialPosition
from minipulsar.client.schema import BytesSchema, Schema

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.entries import acked_indexes

if TYPE_CHECKING:
    from minipulsar.client.client import Client

log = logging.getLogger(__name__)
Type = api.BaseCommand.Type
SINGLE_ACTIVE = (ConsumerType.Exclusive, ConsumerType.Failover)


@dataclass
class ConsumerConfig:
    """subscribe options (names and defaults as in pulsar.Client.subscribe)."""

    subscription_name: str
    consumer_type: ConsumerType = ConsumerType.Exclusive
    schema: Schema = field(default_factory=BytesSchema)
    receiver_queue_size: int = 1000
    max_total_receiver_queue_size_across_partitions: int = 50000
    consumer_name: str | None = None
    unacked_messages_timeout_ms: int | None = None
    negative_ack_redelivery_delay_ms: int = 60000
    properties: dict[str, str] | None = None
    initial_position: InitialPosition = InitialPosition.Latest
    replicate_subscription_state_enabled: bool = False
    key_shared_policy: ConsumerKeySharedPolicy | None = None
    batch_index_ack_enabled: bool = False
    dead_letter_policy: ConsumerDeadLetterPolicy | None = None
    is_read_compacted: bool = False
    priority_level: int = 0
    durable: bool = True
    start_message_id: MessageId | None = None  # readers: where to start
    start_message_id_inclusive: bool = False


class PartitionConsumer(HandlerBase):
    """queue: the MessageQueue shared with the other partition consumers of one Consumer;
    partition: this partition's index, -1 for a plain topic."""

    def __init__(self, client: "Client", topic: str, conf: ConsumerConfig, queue: MessageQueue,
                 partition: int = -1, queue_size: int | None = None, dead_letters=None):
        super().__init__(client, topic)
        self.conf = conf
        self.queue = queue
        self.partition = partition
        self.consumer_id = client.new_consumer_id()
        self.consumer_name = conf.consumer_name or client.random_name()
        self.queue_size = max(1, queue_size if queue_size is not None else conf.receiver_queue_size)
        self.epoch = 0
        self.available_permits = 0
        self.reached_end_of_topic = False  # REACHED_END_OF_TOPIC received
        self.flow_threshold = max(1, self.queue_size // 2)  # C++: permits refilled at receiverQueueSize/2
        self.start_message_id = conf.start_message_id
        self.start_inclusive = conf.start_message_id_inclusive
        self.last_dequeued: MessageId | None = None
        self.seek_time: int | None = None  # readers: skip messages published before this (ms)
        self.acks = AckGroupingTracker(self.consumer_id, self._send_if_connected)
        self.batch_acker = BatchAcker()
        self.dead_letters = dead_letters  # DeadLetterProducer or None
        self._dlq_candidates: dict[tuple[int, int], list[Message]] = {}
        self.nacks = RedeliveryTimer(conf.negative_ack_redelivery_delay_ms / 1000.0, self.redeliver)
        timeout = conf.unacked_messages_timeout_ms
        self.unacked = RedeliveryTimer(timeout / 1000.0, self.redeliver) if timeout else None

    def __repr__(self) -> str:
        return f"Consumer({self.topic}, {self.conf.subscription_name!r}, id={self.consumer_id})"

    # ---- subscribing -----------------------------------------------------------------------
    def _subscribe_command(self, request_id: int) -> api.CommandSubscribe:
        conf = self.conf
        command = api.CommandSubscribe(
            topic=self.topic, subscription=conf.subscription_name, subType=int(conf.consumer_type),
            consumer_id=self.consumer_id, request_id=request_id, consumer_name=self.consumer_name,
            priority_level=conf.priority_level, durable=conf.durable, read_compacted=conf.is_read_compacted,
            initialPosition=int(conf.initial_position),
            replicate_subscription_state=conf.replicate_subscription_state_enabled,
            consumer_epoch=self.epoch,
        )
        for key, value in (conf.properties or {}).items():
            command.metadata.add(key=key, value=value)
        schema = conf.schema.schema_info()
        if schema is not None:
            command.schema.CopyFrom(schema)
        if conf.consumer_type == ConsumerType.KeyShared:
            policy = conf.key_shared_policy or ConsumerKeySharedPolicy()
            command.keySharedMeta.CopyFrom(policy.to_proto())
        start = self._subscribe_start()
        if not conf.durable and start is not None:
            start.to_proto(command.start_message_id, with_batch=False)
        return command

    def _subscribe_start(self) -> MessageId | None:
        """The id the broker should read *after* (non-durable subscriptions)."""
        if self.last_dequeued is not None:
            return MessageId(self.partition, *self._before(self.last_dequeued, inclusive=False))
        start = self.start_message_id
        if start is None or start.ledger_id() < 0 or start.ledger_id() == MessageId.latest.ledger_id():
            return start
        return MessageId(self.partition, *self._before(start, self.start_inclusive))

    @staticmethod
    def _before(message_id: MessageId, inclusive: bool) -> tuple[int, int]:
        """(ledger, entry) to read after so that message_id's entry comes next if it must be seen
        (inclusive, or a batch with later indexes); messages before the start are filtered locally."""
        if inclusive or message_id.batch_index() >= 0:
            return message_id.ledger_id(), message_id.entry_id() - 1
        return message_id.ledger_id(), message_id.entry_id()

    async def _connection_opened(self, cnx: ClientConnection) -> None:
        request_id = self.client.new_request_id()
        command = self._subscribe_command(request_id)
        self._drop_queued()
        cnx.consumers[self.consumer_id] = self
        try:
            await cnx.request(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=command), request_id)
        except BaseException as exc:
            cnx.consumers.pop(self.consumer_id, None)
            if isinstance(exc, Timeout):
                self._send_close(cnx)
            raise
        log.info("%s: subscribed on %s", self, cnx.logical_url)

    def _after_connected(self) -> None:
        self.available_permits = 0
        self._send_flow(self.queue_size)
        self.acks.flush()

    def _connection_lost(self) -> None:
        self._drop_queued()

    def _drop_queued(self) -> None:
        """Forget queued messages of this consumer: the broker sends them again."""
        dropped = self.queue.remove_owner(self)
        if dropped:
            log.debug("%s: dropped %d queued messages", self, dropped)

    def _close_command(self, request_id: int) -> api.BaseCommand:
        return api.BaseCommand(type=Type.CLOSE_CONSUMER, close_consumer=api.CommandCloseConsumer(
            consumer_id=self.consumer_id, request_id=request_id))

    def _send_if_connected(self, command: api.BaseCommand) -> bool:
        if self.cnx is None or self.cnx.closed:
            return False
        self.cnx.send_command(command)
        return True

    def _send_flow(self, permits: int) -> None:
        if permits > 0:
            self._send_if_connected(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(
                consumer_id=self.consumer_id, messagePermits=permits)))

    # ---- receiving -------------------------------------------------------------------------
    def on_message(self, cnx: ClientConnection, command: api.CommandMessage, data: bytes | None) -> None:
        if command.HasField("consumer_epoch") and command.consumer_epoch < self.epoch:
            self._return_permits(1)  # from before a redeliver-all; the broker sends it again
            return
        entry_id = MessageId.from_proto(command.message_id)
        try:
            metadata, decoded, batch_size = decode_entry(data or b"")
        except CorruptEntry as exc:
            log.warning("%s: dropping entry %s: %s", self, entry_id, exc)
            self._ack_corrupt(command.message_id, exc.validation_error)
            self._return_permits(1)
            return
        skip = acked_indexes(list(command.ack_set), batch_size) if command.ack_set else None
        redelivery_count = command.redelivery_count
        ledger, entry = entry_id.ledger_id(), entry_id.entry_id()
        partition, topic, schema, put = self.partition, self.topic, self.conf.schema, self.queue.put
        publish_time, schema_version = metadata.publish_time, metadata.schema_version
        producer_name, entry_sequence = metadata.producer_name, metadata.sequence_id
        filtering = not self.conf.durable
        if filtering and self.seek_time is not None:
            if publish_time < self.seek_time:
                self._return_permits(len(decoded))
                return
            self.seek_time = None
        dead = self.dead_letters is not None and redelivery_count >= self.conf.dead_letter_policy.max_redeliver_count
        delivered = 0
        for payload, index, properties, partition_key, ordering_key, event_time, sequence_id in decoded:
            message_id = MessageId(partition, ledger, entry, index, batch_size, topic)
            if (skip is not None and index in skip) or (filtering and self._before_start(message_id)):
                continue
            message = Message(payload, message_id, topic, properties, partition_key, ordering_key, publish_time,
                              event_time, redelivery_count, schema, schema_version, producer_name,
                              sequence_id if sequence_id >= 0 else entry_sequence, self)
            if dead:
                self._dlq_candidates.setdefault((ledger, entry), []).append(message)
            put(message)
            delivered += 1
        if delivered < len(decoded):
            self._return_permits(len(decoded) - delivered)

    def _before_start(self, message_id: MessageId) -> bool:
        """Readers drop what precedes their start (or their last taken message after a reconnect)."""
        if self.last_dequeued is not None:
            return message_id._key() <= self.last_dequeued._key()
        start = self.start_message_id
        if start is None or start.ledger_id() < 0 or start.ledger_id() == MessageId.latest.ledger_id():
            return False
        return message_id._key() < start._key() or (message_id._key() == start._key() and not self.start_inclusive)

    def _ack_corrupt(self, message_id: api.MessageIdData, validation_error: int) -> None:
        ack = api.CommandAck(consumer_id=self.consumer_id, ack_type=api.CommandAck.Individual,
                             validation_error=validation_error)
        ack.message_id.append(message_id)
        self._send_if_connected(api.BaseCommand(type=Type.ACK, ack=ack))

    def message_taken(self, message: Message) -> None:
        """The application took message from the queue: one permit back, FLOW at half the queue."""
        self.last_dequeued = message._message_id
        if self.unacked is not None:
            self.unacked.add(message._message_id)
        self.available_permits += 1
        if self.available_permits >= self.flow_threshold:
            permits, self.available_permits = self.available_permits, 0
            self._send_flow(permits)

    def _return_permits(self, count: int) -> None:
        self.available_permits += count
        if self.available_permits >= self.flow_threshold:
            permits, self.available_permits = self.available_permits, 0
            self._send_flow(permits)

    def on_active_consumer_change(self, is_active: bool) -> None:
        log.info("%s: %s", self, "active" if is_active else "inactive")

    def on_reached_end_of_topic(self) -> None:
        log.info("%s: reached the end of a terminated topic", self)
        self.reached_end_of_topic = True

    # ---- acknowledging ---------------------------------------------------------------------
    def acknowledge(self, message_id: MessageId) -> None:
        self._forget(message_id)
        ack_set = self.batch_acker.ack(message_id)
        if ack_set is None:
            if not self.conf.batch_index_ack_enabled:
                return
            data = message_id.to_proto(with_batch=False)
            data.ack_set.extend(self.batch_acker.partial_ack_set(message_id))
            self.acks.add_individual(data)
            return
        self._dlq_candidates.pop(message_id.entry_key(), None)
        self.acks.add_individual(message_id.to_proto(with_batch=False))

    def acknowledge_cumulative(self, message_id: MessageId) -> None:
        if self.conf.consumer_type not in SINGLE_ACTIVE:
            raise CumulativeAcknowledgementNotAllowedError(
                f"cumulative acknowledgement is not allowed on {self.conf.consumer_type.name} subscriptions")
        if self.unacked is not None:
            self.unacked.remove_up_to(message_id)
        self.nacks.remove_up_to(message_id)
        index, size = message_id.batch_index(), message_id.batch_size()
        if index >= 0 and index < size - 1:
            # Inside a batch: the entry is not fully acknowledged, so acknowledge up to the one before.
            if message_id.entry_id() <= 0:
                return
            target = MessageId(self.partition, message_id.ledger_id(), message_id.entry_id() - 1)
        else:
            target = message_id
        self.batch_acker.forget_up_to(target.entry_key())
        self.acks.add_cumulative(target.to_proto(with_batch=False))

    def _forget(self, message_id: MessageId) -> None:
        if self.unacked is not None:
            self.unacked.remove(message_id)
        if len(self.nacks):
            self.nacks.remove(message_id)

    def negative_acknowledge(self, message_id: MessageId) -> None:
        if self.unacked is not None:
            self.unacked.remove(message_id)
        self.nacks.add(message_id)

    # ---- redelivery ------------------------------------------------------------------------
    def redeliver(self, message_ids: list[MessageId]) -> None:
        """Ask the broker to send these messages again (or route them to the dead-letter topic)."""
        self.redeliver_without_dead_letters(self._divert_dead_letters(message_ids))

    def redeliver_without_dead_letters(self, message_ids: list[MessageId]) -> None:
        if not message_ids:
            return
        if self.conf.consumer_type in SINGLE_ACTIVE:
            self.redeliver_all()
            return
        entries = {m.entry_key(): m for m in message_ids}
        command = api.CommandRedeliverUnacknowledgedMessages(consumer_id=self.consumer_id, consumer_epoch=self.epoch)
        for message_id in entries.values():
            command.message_ids.append(message_id.to_proto(with_batch=False))
        self._send_if_connected(api.BaseCommand(type=Type.REDELIVER_UNACKNOWLEDGED_MESSAGES,
                                                redeliverUnacknowledgedMessages=command))

    def redeliver_all(self) -> None:
        """Everything unacknowledged comes again; queued messages are dropped (their permits return)."""
        self.epoch += 1
        dropped = self.queue.remove_owner(self)
        if self.unacked is not None:
            self.unacked.clear()
        self.nacks.clear()
        self._send_if_connected(api.BaseCommand(
            type=Type.REDELIVER_UNACKNOWLEDGED_MESSAGES,
            redeliverUnacknowledgedMessages=api.CommandRedeliverUnacknowledgedMessages(
                consumer_id=self.consumer_id, consumer_epoch=self.epoch)))
        self._return_permits(dropped)

    def _divert_dead_letters(self, message_ids: list[MessageId]) -> list[MessageId]:
        """Send entries that used up their redeliveries to the DLQ; return the ids still to redeliver."""
        if self.dead_letters is None or not self._dlq_candidates:
            return message_ids
        rest = []
        for message_id in message_ids:
            messages = self._dlq_candidates.pop(message_id.entry_key(), None)
            if messages is None:
                rest.append(message_id)
            else:
                self.dead_letters.publish(self, messages)
        return rest

    # ---- seek, last message id, unsubscribe, close -----------------------------------------
    async def seek(self, target: MessageId | int) -> None:
        """SEEK to a message id or a publish time (ms). The broker closes and we re-subscribe."""
        cnx = self.cnx
        if cnx is None:
            raise Timeout(f"{self}: not connected")
        request_id = self.client.new_request_id()
        seek = api.CommandSeek(consumer_id=self.consumer_id, request_id=request_id)
        if isinstance(target, MessageId):
            target.to_proto(seek.message_id, with_batch=False)
            seek.message_id.ClearField("partition")
        else:
            seek.message_publish_time = int(target)
        if not self.conf.durable:
            # The broker drops a non-durable subscription with its consumer, so the reset cursor
            # is lost: the reader re-subscribes from the target itself (by time: from the start,
            # skipping what was published earlier).
            if isinstance(target, MessageId):
                self.start_message_id, self.start_inclusive, self.seek_time = target, True, None
            else:
                self.start_message_id, self.start_inclusive, self.seek_time = MessageId.earliest, True, int(target)
        self.last_dequeued = None
        self.acks.clear()
        self.batch_acker.clear()
        self.nacks.clear()
        if self.unacked is not None:
            self.unacked.clear()
        await cnx.request(api.BaseCommand(type=Type.SEEK, seek=seek), request_id)
        self._drop_queued()

    async def get_last_message_id(self) -> MessageId:
        await self.wait_ready(self.client.operation_timeout)
        request_id = self.client.new_request_id()
        reply = await self.cnx.request(api.BaseCommand(
            type=Type.GET_LAST_MESSAGE_ID,
            getLastMessageId=api.CommandGetLastMessageId(consumer_id=self.consumer_id, request_id=request_id),
        ), request_id)
        last = MessageId.from_proto(reply.last_message_id, self.topic)
        return MessageId(self.partition, last.ledger_id(), last.entry_id(), last.batch_index(), 0, self.topic)

    async def unsubscribe(self) -> None:
        await self.wait_ready(self.client.operation_timeout)
        request_id = self.client.new_request_id()
        await self.cnx.request(api.BaseCommand(type=Type.UNSUBSCRIBE, unsubscribe=api.CommandUnsubscribe(
            consumer_id=self.consumer_id, request_id=request_id)), request_id)
        self._shutdown()

    async def close(self) -> None:
        if self.closed:
            return
        self.acks.flush()
        cnx = self.cnx
        self._shutdown()
        if cnx is not None and not cnx.closed:
            await self._request_close(cnx)

    def _shutdown(self) -> None:
        self.stop_reconnecting()
        if self.cnx is not None:
            self.cnx.consumers.pop(self.consumer_id, None)
        self.cnx = None
        self.acks.clear()
        self.nacks.close()
        if self.unacked is not None:
            self.unacked.close()
        self.queue.remove_owner(self)
