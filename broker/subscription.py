"""A subscription: a named cursor on a topic, its consumers and its dispatcher.

Durable subscriptions keep their cursor on disk; non-durable ones (readers) use a cursor that is
never written and vanish with their last consumer. Acknowledgements (batch-index ones included) go
to the cursor, cursor moves (seek by message id or publish time, skip, clear backlog) start here,
and the last message id is answered here, so handlers only translate the protocol.
Source: Pulsar PersistentSubscription.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, NamedTuple

from minipulsar.broker.batch_acks import BatchAckSets
from minipulsar.broker.dispatchers.ack_state_gate import AckStateGate
from minipulsar.broker.dispatchers.shared import SharedDispatcher
from minipulsar.broker.dispatchers.single_active import SingleActiveConsumerDispatcher
from minipulsar.broker.dispatchers.sticky_key import LookAhead, StickyKeyDispatcher
from minipulsar.broker.selectors.auto_split import AutoSplitSelector
from minipulsar.broker.selectors.consistent_hashing import ConsistentHashingSelector
from minipulsar.broker.selectors.key_failover import KeyFailoverSelector
from minipulsar.broker.selectors.sticky_ranges import StickyRangesSelector
from minipulsar.broker.consumer_counters import ConsumerCounters
from minipulsar.broker.entry_info import EntryInfo, publish_time_of
from minipulsar.broker.errors import ConsumerBusyError, NotAllowedError
from minipulsar.broker.replication import is_replicated
from minipulsar.broker.stats_rates import RateMeter
from minipulsar.broker.stats_shapes import SUBSCRIPTION_ZERO, now_ms
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import EARLIEST, Entry, ManagedCursor, Position

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer
    from minipulsar.broker.dispatchers.base import Dispatcher
    from minipulsar.broker.topic import PersistentTopic

log = logging.getLogger(__name__)

SubType = api.CommandSubscribe.SubType
RESET_GRACE_SECONDS = 30.0
SUB_TYPE_NAMES = {
    SubType.Exclusive: "Exclusive",
    SubType.Shared: "Shared",
    SubType.Failover: "Failover",
    SubType.Key_Shared: "Key_Shared",
    SubType.Key_Failover: "Key_Failover",
}


class LastMessageId(NamedTuple):
    """GET_LAST_MESSAGE_ID's answer: the last data entry (never a marker), the batch index of its
    last message (None when it is not a batch) and the subscription's mark-delete position."""

    position: Position
    batch_index: int | None
    mark_delete_position: Position


def check_admission(subscription, consumer: "Consumer") -> None:
    """May consumer join subscription (persistent or not: anything with name, topic, sub_type and
    consumers)? Raises NotAllowedError when the namespace does not enable the type
    (subscriptionTypesEnabled), ConsumerBusyError when the subscription has
    maxConsumersPerSubscription consumers, the type differs from the connected consumers', a second
    Exclusive consumer, or Key_Shared settings that disagree, as in Pulsar."""
    sub_type = consumer.sub_type
    topic = subscription.topic
    type_name = SUB_TYPE_NAMES.get(sub_type, str(sub_type))
    if type_name not in topic.context.policies.subscription_types_enabled(topic.name.namespace_name):
        raise NotAllowedError(f"Topic[{topic.name}] doesn't support {type_name} sub type!")
    topic.context.limits.check_consumer_room(subscription)  # maxConsumersPerSubscription
    consumers = subscription.consumers
    if not consumers:
        return
    if sub_type != subscription.sub_type:
        raise ConsumerBusyError(
            f"Subscription {subscription.name} is of type {SUB_TYPE_NAMES[subscription.sub_type]}, "
            f"not {SUB_TYPE_NAMES.get(sub_type, sub_type)}")
    if sub_type == SubType.Exclusive:
        raise ConsumerBusyError(f"Exclusive consumer is already connected to subscription {subscription.name}")
    first = consumers[0]
    if sub_type == SubType.Key_Shared and (consumer.key_shared_mode, consumer.allow_out_of_order) != (
            first.key_shared_mode, first.allow_out_of_order):
        raise ConsumerBusyError(
            f"Subscription {subscription.name} uses Key_Shared mode {first.key_shared_mode} with "
            f"allowOutOfOrderDelivery={first.allow_out_of_order}; this consumer asked for "
            f"mode {consumer.key_shared_mode} with allowOutOfOrderDelivery={consumer.allow_out_of_order}")


def leave_for_unsubscribe(subscription, consumer: "Consumer", force: bool) -> None:
    """UNSUBSCRIBE's first step on any subscription: ConsumerBusyError when other consumers are
    connected and not force; with force they are disconnected; then consumer closes."""
    others = [c for c in subscription.consumers if c is not consumer]
    if others and not force:
        raise ConsumerBusyError(f"Subscription {subscription.name} has other connected consumers")
    for other in others:
        other.disconnect()
    consumer.close()


def key_shared_selector(config, first: "Consumer"):
    """The sticky-key selector for a Key_Shared subscription whose first consumer is first:
    STICKY ranges as declared, else consistent hashing or auto-split
    (subscriptionKeySharedUseConsistentHashing), as Pulsar's PersistentSubscription chooses."""
    if first.key_shared_mode == api.STICKY:
        return StickyRangesSelector()
    if config.subscription_key_shared_use_consistent_hashing:
        return ConsistentHashingSelector(config.subscription_key_shared_consistent_hashing_replica_points)
    return AutoSplitSelector()


class Subscription(ConsumerCounters):
    """topic: the owning PersistentTopic; cursor: its ManagedCursor (durable or not)."""

    __slots__ = ("topic", "name", "cursor", "durable", "sub_type", "dispatcher", "batch_acks", "reset_grace_until",
                 "compacted_read_start", "expired", "last_expire_ms", "last_mark_delete_advanced_ms", "expiry_rate",
                 "ack_state_gate")

    def __init__(self, topic: "PersistentTopic", name: str, cursor: ManagedCursor, durable: bool):
        super().__init__()
        self.topic = topic
        self.name = name
        self.cursor = cursor
        self.durable = durable
        self.sub_type: int | None = None
        self.dispatcher: Dispatcher | None = None
        self.batch_acks = BatchAckSets()  # partly acked batches (acknowledgmentAtBatchIndexLevelEnabled)
        self.reset_grace_until = 0.0  # monotonic seconds; see reset_cursor
        # Where a read_compacted consumer goes on in the compacted view whatever the cursor says:
        # EARLIEST for subscriptions that start there (the cursor cannot point into trimmed
        # ledgers the view still covers), None once the view is read (Pulsar's readFromEarliest).
        self.compacted_read_start: Position | None = None
        self.expired = 0  # entries acknowledged by the message TTL or expireMessages (totalMsgExpired)
        self.last_expire_ms = 0
        self.last_mark_delete_advanced_ms = 0
        self.expiry_rate = RateMeter(1)
        policies, namespace = topic.context.policies, topic.name.namespace_name
        self.ack_state_gate = AckStateGate(
            f"{topic.name}/{name}", cursor, topic.context.config,
            lambda: policies.dispatcher_pause_on_ack_state_persistent(namespace), self._wake)

    def _wake(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.wake()

    def consumer_flow(self, consumer: "Consumer") -> None:
        """consumer got permits or a writable socket: the dispatcher may send (Pulsar consumerFlow)."""
        self._wake()

    def redeliver_unacknowledged(self, consumer: "Consumer", positions: list[Position] | None) -> None:
        """consumer's listed (None: all) pending entries go back for redelivery."""
        if self.dispatcher is not None:
            self.dispatcher.redeliver(consumer, positions)

    def __repr__(self) -> str:
        return f"Subscription({self.topic.name}, {self.name!r})"

    @property
    def consumers(self) -> list["Consumer"]:
        return self.dispatcher.consumers if self.dispatcher else []

    # ---- consumers -------------------------------------------------------------------------
    def add_consumer(self, consumer: "Consumer") -> None:
        """Attach consumer; raises ConsumerBusyError when the type or exclusivity forbids it,
        NotAllowedError when the namespace does not enable the type (subscriptionTypesEnabled)."""
        check_admission(self, consumer)
        if consumer.sub_type in (SubType.Shared, SubType.Key_Shared):
            policies, namespace = self.topic.context.policies, self.topic.name.namespace_name
            consumer.max_unacked_messages = policies.max_unacked_messages_per_consumer(namespace)
        if self.dispatcher is None or self.sub_type != consumer.sub_type or not self.dispatcher.matches(consumer):
            self._replace_dispatcher(consumer)
        self.dispatcher.add_consumer(consumer)
        self.cursor.set_active()  # new entries are cached while a consumer reads (PersistentTopic.checkBackloggedCursor)

    def apply_policies(self) -> None:
        """The namespace's policies changed: re-check the PIP-299 pause and the unacked limit."""
        self.ack_state_gate.recheck()
        limit = self.topic.context.policies.max_unacked_messages_per_consumer(self.topic.name.namespace_name)
        for consumer in self.consumers:
            if consumer.sub_type in (SubType.Shared, SubType.Key_Shared):
                consumer.max_unacked_messages = limit
        self._wake()

    def _replace_dispatcher(self, first: "Consumer") -> None:
        """A dispatcher for first's settings; what the old one had in flight is read again."""
        dispatcher = self._new_dispatcher(first)
        config = self.topic.context.config
        active, tick = self.topic.context.policies.delayed_delivery(self.topic.name.namespace_name)
        if active and first.sub_type in (SubType.Shared, SubType.Key_Shared):
            dispatcher.enable_delayed_delivery(tick, config.is_delayed_delivery_deliver_at_time_strict)
        if self.dispatcher is not None:
            self.dispatcher.close()
            self.cursor.rewind()
        self.sub_type = first.sub_type
        self.dispatcher = dispatcher

    def _new_dispatcher(self, first: "Consumer") -> "Dispatcher":
        config = self.topic.context.config
        limits = (config.dispatcher_max_read_batch_size, config.dispatcher_max_read_size_bytes)
        sub_type = first.sub_type
        if sub_type in (SubType.Exclusive, SubType.Failover):
            return SingleActiveConsumerDispatcher(self, *limits, failover=sub_type == SubType.Failover)
        if sub_type == SubType.Shared:
            return SharedDispatcher(self, *limits)
        look_ahead = LookAhead(config.key_shared_look_ahead_msg_in_replay_threshold_per_consumer,
                               config.key_shared_look_ahead_msg_in_replay_threshold_per_subscription,
                               config.max_unacked_messages_per_consumer)
        if sub_type == SubType.Key_Failover:
            return StickyKeyDispatcher(self, *limits, KeyFailoverSelector(), allow_out_of_order=False,
                                       gainers_join=True, look_ahead=look_ahead)
        if sub_type == SubType.Key_Shared:
            return StickyKeyDispatcher(self, *limits, self._key_shared_selector(first),
                                       allow_out_of_order=first.allow_out_of_order, gainers_join=False,
                                       look_ahead=look_ahead, key_shared_mode=first.key_shared_mode)
        raise NotAllowedError(f"unknown subscription type {sub_type}")

    def _key_shared_selector(self, first: "Consumer"):
        return key_shared_selector(self.topic.context.config, first)

    def remove_consumer(self, consumer: "Consumer") -> None:
        """consumer left; a reader's subscription ends with its last consumer (see
        PersistentTopic.consumer_closed), a clean-up that outlives the consumer's connection."""
        self._keep_counters_of(consumer)
        if self.dispatcher is not None:
            self.dispatcher.remove_consumer(consumer)
        self.topic.last_active = time.monotonic()  # broker/inactive_topics.py
        if not self.consumers:
            self.cursor.set_inactive()  # Pulsar PersistentSubscription.removeConsumer -> deactivateCursor
            if not self.durable:
                self.topic.context.spawn(self.topic.consumer_closed(self))

    async def unsubscribe(self, consumer: "Consumer", force: bool) -> None:
        """UNSUBSCRIBE by consumer: drop the subscription and its cursor. Other connected consumers
        make it fail with ConsumerBusyError unless force, which disconnects them first."""
        leave_for_unsubscribe(self, consumer, force)
        await self.topic.remove_subscription(self.name)

    # ---- acknowledgements ------------------------------------------------------------------
    def acknowledge_message_ids(self, consumer: "Consumer", acks: list[tuple[Position, list[int]]],
                                cumulative: bool) -> None:
        """ACK: (position, ack_set words) per message id, ack_set empty for a whole entry.

        A non-empty ack_set is a batch's Java BitSet in which a SET bit is a message not yet
        acknowledged. Without acknowledgmentAtBatchIndexLevelEnabled such a partial ack leaves the
        entry pending (Pulsar redelivers the whole batch); with it, the partial sets are merged
        (BatchAckSets) and the entry is acknowledged once no bit is left. A cumulative ack inside a
        batch acknowledges the entries before it and keeps the batch's partial set, as Pulsar does.
        Raises NotAllowedError for a cumulative ack on a Shared-like subscription."""
        if self.topic.context.config.acknowledgment_at_batch_index_level_enabled:
            positions = self._batch_index_acks(acks, cumulative)
        else:
            positions = [position for position, ack_set in acks if not any(ack_set)]
        if not positions:
            return
        if cumulative:
            self.acknowledge_cumulative(consumer, positions[-1])
        else:
            self.acknowledge(consumer, positions)

    def _batch_index_acks(self, acks: list[tuple[Position, list[int]]], cumulative: bool) -> list[Position]:
        """The positions now fully acknowledged, after merging partial ack_sets."""
        positions = []
        for position, ack_set in acks:
            if not any(ack_set) or self.batch_acks.record(position, ack_set):
                positions.append(position)
            elif cumulative:
                previous = self.cursor.previous_position(position)
                if previous > self.cursor.mark_delete_position:
                    positions.append(previous)
        return positions

    def acknowledge(self, consumer: "Consumer", positions: list[Position]) -> None:
        """Individual acks; positions unknown to the cursor (already acked, trimmed) are harmless."""
        before = self.cursor.mark_delete_position
        self.cursor.delete(positions)
        self._note_mark_delete(before)
        if self.batch_acks:
            self.batch_acks.discard(positions)
        # The acknowledging consumer normally holds them all; the others only what it did not
        # (an entry redelivered to another consumer meanwhile).
        elsewhere = consumer.remove_pending(positions)
        if elsewhere:
            for other in self.consumers:
                if other is not consumer:
                    other.remove_pending(elsewhere)
        if self.dispatcher is not None:
            self.dispatcher.acknowledged(positions)
        self.topic.replication.on_mark_delete(self)

    def acknowledge_cumulative(self, consumer: "Consumer", position: Position) -> None:
        """Cumulative ack: everything at or below position; not allowed on Shared-like types."""
        if self.sub_type not in (SubType.Exclusive, SubType.Failover):
            raise NotAllowedError("Cumulative acknowledgement is not allowed on this subscription type")
        self._acknowledge_up_to(position, [consumer])

    def _acknowledge_up_to(self, position: Position, consumers: list["Consumer"]) -> None:
        """Mark-delete up to position; forget what consumers and the dispatcher hold below it."""
        before = self.cursor.mark_delete_position
        self.cursor.mark_delete(position)
        self._note_mark_delete(before)
        if self.batch_acks:
            self.batch_acks.discard_up_to(position)
        for consumer in consumers:
            consumer.remove_pending_up_to(position)
        if self.dispatcher is not None:
            self.dispatcher.acknowledged_up_to(position)
        self.topic.replication.on_mark_delete(self)

    def _note_mark_delete(self, before: Position) -> None:
        """lastMarkDeleteAdvancedTimestamp, when the mark-delete position moved past before."""
        if self.cursor.mark_delete_position != before:
            self.last_mark_delete_advanced_ms = now_ms()

    def acknowledge_up_to(self, position: Position) -> None:
        """Acknowledge everything up to position for every consumer (backlog-quota eviction)."""
        if position > self.cursor.mark_delete_position:
            self._acknowledge_up_to(position, self.consumers)
            self.ack_state_gate.reset()
            self._wake()

    async def expire_messages(self, seconds: int) -> bool:
        """Acknowledge every message published more than `seconds` ago (admin expireMessages, the
        message TTL); False when there was none. Source: Pulsar PersistentMessageExpiryMonitor."""
        cutoff = int(time.time() * 1000) - seconds * 1000
        found = await self.cursor.find_newest_matching(lambda data: publish_time_of(data) <= cutoff)
        if found is None or found <= self.cursor.mark_delete_position:
            return False
        backlog = self.backlog
        self.acknowledge_up_to(found)
        self.expired += max(0, backlog - self.backlog)
        self.last_expire_ms = now_ms()
        return True

    def on_marker(self, entry: Entry, info: EntryInfo) -> None:
        """A server-only marker reached dispatch: acknowledge it so it never blocks the backlog."""
        self.topic.replication.on_marker(self, entry, info)  # PIP-33: snapshot markers fill the cache
        self.cursor.delete([entry.position])
        self.topic.replication.on_mark_delete(self)

    # ---- cursor moves ----------------------------------------------------------------------
    def disconnect_consumers(self) -> None:
        """Close every consumer (CLOSE_CONSUMER); clients reconnect and resubscribe by themselves."""
        for consumer in list(self.consumers):
            consumer.disconnect()

    def reset_cursor(self, position: Position) -> None:
        """Seek: the next entry delivered is `position` (before the first entry, e.g. EARLIEST: the
        first one; past the end: the next one written); consumers are disconnected first, as in
        Pulsar. A reader's (non-durable) subscription outlives that disconnect for
        RESET_GRACE_SECONDS, so the reader reconnects to the reset cursor instead of its original
        start position."""
        self.reset_grace_until = time.monotonic() + RESET_GRACE_SECONDS
        self.disconnect_consumers()
        if self.dispatcher is not None:
            self.dispatcher.reset()
        self.batch_acks.clear()
        first = self.topic.ledger.first_position
        self.compacted_read_start = position if first is None or position < first else None
        self.cursor.reset_cursor(position)
        self.ack_state_gate.reset()

    async def reset_cursor_by_timestamp(self, timestamp: int) -> Position:
        """Seek by publish time (ms since the epoch): to the first entry published at or after
        timestamp, i.e. the entry after the newest one published before it (the first entry when
        none is), so an entry of that very millisecond is delivered, as Pulsar's
        PersistentMessageFinder; returns where the cursor was reset."""
        found = await self.cursor.find_newest_matching(lambda data: publish_time_of(data) < timestamp)
        target = self.cursor.next_valid_position(found) if found is not None else EARLIEST
        self.reset_cursor(target)
        return self.cursor.read_position

    async def get_last_message_id(self, read_compacted: bool = False) -> LastMessageId:
        """The topic's last message (never a marker, PIP-33) and this mark-delete position; for a
        read_compacted consumer, the compacted view's last message when nothing follows the
        compaction horizon (the topic's last message may have been compacted away)."""
        last = await self.topic.compaction.last_message_id() if read_compacted else None
        position, batch_index = last if last is not None else await self.topic.last_message_id()
        return LastMessageId(position, batch_index, self.cursor.mark_delete_position)

    def compacted_view_pending(self) -> bool:
        """Compacted entries wait to be read from compacted_read_start on."""
        return self.compacted_read_start is not None and self.topic.compaction.has_entries()

    async def read_new_entries(self, max_entries: int, max_bytes: int, read_compacted: bool) -> list[Entry]:
        """The next entries for the dispatcher: from the cursor, or through the compacted view for
        a read_compacted consumer (broker/compaction)."""
        if not read_compacted:
            return await self.cursor.read_entries(max_entries, max_bytes)
        entries, self.compacted_read_start = await self.topic.compaction.read_entries(
            self.cursor, max_entries, max_bytes, self.compacted_read_start, self.batch_acks)
        return entries

    def skip_entries(self, n: int) -> None:
        """Acknowledge the next n unacknowledged entries (admin 'skip')."""
        self.cursor.skip_entries(n)
        self.ack_state_gate.reset()
        self._wake()

    def clear_backlog(self) -> None:
        """Acknowledge everything published so far (admin 'clear-backlog')."""
        self.cursor.clear_backlog()
        if self.dispatcher is not None:
            self.dispatcher.reset()
        self.ack_state_gate.reset()
        self._wake()

    # ---- stats -----------------------------------------------------------------------------
    @property
    def replicated(self) -> bool:
        """PIP-33: the cursor carries pulsar.replicated.subscription = 1 (see broker/replication)."""
        return is_replicated(self)

    @property
    def type_name(self) -> str:
        """The subscription type as Pulsar's stats name it ("None" before the first consumer)."""
        return SUB_TYPE_NAMES.get(self.sub_type, "None")

    @property
    def backlog(self) -> int:
        return self.cursor.number_of_entries_in_backlog()

    def update_rates(self, now: float) -> None:
        """The stats timer's tick (broker/stats_rates.py): consumers' rates and msgRateExpired."""
        self.update_consumer_rates(now)
        self.expiry_rate.update(now, (self.expired,))

    def stats(self) -> dict:
        """Pulsar SubscriptionStats (broker/stats_shapes.py); markDeletePosition, readPosition and
        the PIP-299 fields are ours."""
        backlog = self.backlog
        stats = {
            **SUBSCRIPTION_ZERO,
            **self.consumer_totals(),
            "type": self.type_name,
            "msgBacklog": backlog,
            "backlogSize": self.topic.backlog_size(self.cursor),
            "isDurable": self.durable,
            "isReplicated": self.replicated,
            "msgRateExpired": self.expiry_rate.rates[0],
            "totalMsgExpired": self.expired,
            "lastExpireTimestamp": self.last_expire_ms,
            "lastMarkDeleteAdvancedTimestamp": self.last_mark_delete_advanced_ms,
            "markDeletePosition": str(self.cursor.mark_delete_position),
            "readPosition": str(self.cursor.read_position),
            "nonContiguousDeletedMessagesRanges": self.cursor.individually_deleted_ranges_count,
            **self.ack_state_gate.stats(),
            "unackedMessages": sum(c.unacked_messages for c in self.consumers),
            "consumers": [{**c.stats(), **self.dispatcher.consumer_stats(c)} for c in self.consumers],
        }
        if self.sub_type == SubType.Key_Shared and self.consumers:
            first = self.consumers[0]
            stats["keySharedMode"] = "STICKY" if first.key_shared_mode == api.STICKY else "AUTO_SPLIT"
            stats["allowOutOfOrderDelivery"] = first.allow_out_of_order
        if self.dispatcher is not None:
            stats.update(self.dispatcher.stats())
        stats["msgBacklogNoDelayed"] = max(0, backlog - stats["msgDelayed"])
        return stats

    def stop(self) -> None:
        """Stop dispatching (the topic closes or drops the cursor itself)."""
        if self.dispatcher is not None:
            self.dispatcher.close()
        self.ack_state_gate.close()
