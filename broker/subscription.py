"""A subscription: a named cursor on a topic, its consumers and its dispatcher.

Durable subscriptions keep their cursor on disk; non-durable ones (readers) use a cursor that is
never written and vanish with their last consumer. Acknowledgements go to the cursor; redelivery
counts live here, in memory, as in Pulsar's InMemoryRedeliveryTracker.
Source: Pulsar PersistentSubscription.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Iterable

from broker.batch_acks import BatchAckSets
from broker.dispatchers.ack_state_gate import AckStateGate
from broker.dispatchers.shared import SharedDispatcher
from broker.dispatchers.single_active import SingleActiveConsumerDispatcher
from broker.dispatchers.sticky_key import StickyKeyDispatcher
from broker.selectors.auto_split import AutoSplitSelector
from broker.selectors.consistent_hashing import ConsistentHashingSelector
from broker.selectors.key_failover import KeyFailoverSelector
from broker.selectors.sticky_ranges import StickyRangesSelector
from broker.entry_info import EntryInfo
from broker.errors import ConsumerBusyError, NotAllowedError
from broker.replication import is_replicated
from proto import PulsarApi_pb2 as api
from storage import Entry, ManagedCursor, Position

if TYPE_CHECKING:
    from broker.consumer import Consumer
    from broker.dispatchers.base import Dispatcher
    from broker.topic import PersistentTopic

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


class Subscription:
    """topic: the owning PersistentTopic; cursor: its ManagedCursor (durable or not)."""

    def __init__(self, topic: "PersistentTopic", name: str, cursor: ManagedCursor, durable: bool):
        self.topic = topic
        self.name = name
        self.cursor = cursor
        self.durable = durable
        self.sub_type: int | None = None
        self.dispatcher: Dispatcher | None = None
        self.redelivery_counts: dict[Position, int] = {}
        self.batch_acks = BatchAckSets()  # partly acked batches (acknowledgmentAtBatchIndexLevelEnabled)
        self.reset_grace_until = 0.0  # monotonic seconds; see reset_cursor
        self.ack_state_gate = AckStateGate(f"{topic.name}/{name}", cursor, topic.broker.config, self._wake)

    def _wake(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.wake()

    def __repr__(self) -> str:
        return f"Subscription({self.topic.name}, {self.name!r})"

    @property
    def consumers(self) -> list["Consumer"]:
        return self.dispatcher.consumers if self.dispatcher else []

    # ---- consumers -------------------------------------------------------------------------
    def add_consumer(self, consumer: "Consumer") -> None:
        """Attach consumer; raises ConsumerBusyError when the type or exclusivity forbids it."""
        sub_type = consumer.sub_type
        if self.consumers:
            if sub_type != self.sub_type:
                raise ConsumerBusyError(
                    f"Subscription {self.name} is of type {SUB_TYPE_NAMES[self.sub_type]}, "
                    f"not {SUB_TYPE_NAMES.get(sub_type, sub_type)}"
                )
            if sub_type == SubType.Exclusive:
                raise ConsumerBusyError(f"Exclusive consumer is already connected to subscription {self.name}")
            self._check_key_shared_settings(consumer)
        if self.dispatcher is None or self.sub_type != sub_type or not self.dispatcher.matches(consumer):
            self._replace_dispatcher(consumer)
        self.dispatcher.add_consumer(consumer)

    def _check_key_shared_settings(self, consumer: "Consumer") -> None:
        """Key_Shared consumers of one subscription must agree on mode and ordering, as in Pulsar."""
        if consumer.sub_type != SubType.Key_Shared:
            return
        first = self.consumers[0]
        if (consumer.key_shared_mode, consumer.allow_out_of_order) != (first.key_shared_mode, first.allow_out_of_order):
            raise ConsumerBusyError(
                f"Subscription {self.name} uses Key_Shared mode {first.key_shared_mode} with "
                f"allowOutOfOrderDelivery={first.allow_out_of_order}; this consumer asked for "
                f"mode {consumer.key_shared_mode} with allowOutOfOrderDelivery={consumer.allow_out_of_order}")

    def _replace_dispatcher(self, first: "Consumer") -> None:
        """A dispatcher for first's settings; what the old one had in flight is read again."""
        dispatcher = self._new_dispatcher(first)
        config = self.topic.broker.config
        if config.delayed_delivery_enabled and first.sub_type in (SubType.Shared, SubType.Key_Shared):
            dispatcher.enable_delayed_delivery(config.delayed_delivery_tick_time_millis,
                                               config.is_delayed_delivery_deliver_at_time_strict)
        if self.dispatcher is not None:
            self.dispatcher.close()
            self.cursor.rewind()
        self.sub_type = first.sub_type
        self.dispatcher = dispatcher

    def _new_dispatcher(self, first: "Consumer") -> "Dispatcher":
        config = self.topic.broker.config
        limits = (config.dispatcher_max_read_batch_size, config.dispatcher_max_read_size_bytes)
        sub_type = first.sub_type
        if sub_type in (SubType.Exclusive, SubType.Failover):
            return SingleActiveConsumerDispatcher(self, *limits, failover=sub_type == SubType.Failover)
        if sub_type == SubType.Shared:
            return SharedDispatcher(self, *limits)
        look_ahead = config.key_shared_look_ahead_msg_in_replay_threshold_per_subscription
        if sub_type == SubType.Key_Failover:
            return StickyKeyDispatcher(self, *limits, KeyFailoverSelector(), allow_out_of_order=False,
                                       gainers_join=True, look_ahead=look_ahead)
        if sub_type == SubType.Key_Shared:
            return StickyKeyDispatcher(self, *limits, self._key_shared_selector(first),
                                       allow_out_of_order=first.allow_out_of_order, gainers_join=False,
                                       look_ahead=look_ahead, key_shared_mode=first.key_shared_mode)
        raise NotAllowedError(f"unknown subscription type {sub_type}")

    def _key_shared_selector(self, first: "Consumer"):
        config = self.topic.broker.config
        if first.key_shared_mode == api.STICKY:
            return StickyRangesSelector()
        if config.subscription_key_shared_use_consistent_hashing:
            return ConsistentHashingSelector(config.subscription_key_shared_consistent_hashing_replica_points)
        return AutoSplitSelector()

    def remove_consumer(self, consumer: "Consumer") -> None:
        consumer.closed = True
        if self.dispatcher is not None:
            self.dispatcher.remove_consumer(consumer)

    # ---- acknowledgements ------------------------------------------------------------------
    def acknowledge(self, consumer: "Consumer", positions: list[Position]) -> None:
        """Individual acks; positions unknown to the cursor (already acked, trimmed) are harmless."""
        self.cursor.delete(positions)
        if self.batch_acks:
            self.batch_acks.discard(positions)
        for other in self.consumers:
            other.remove_pending(positions)
        self._forget(positions)
        if self.dispatcher is not None:
            self.dispatcher.on_acknowledged()
        self.topic.replication.on_mark_delete(self)

    def acknowledge_cumulative(self, consumer: "Consumer", position: Position) -> None:
        """Cumulative ack: everything at or below position; not allowed on Shared-like types."""
        if self.sub_type not in (SubType.Exclusive, SubType.Failover):
            raise NotAllowedError("Cumulative acknowledgement is not allowed on this subscription type")
        self.cursor.mark_delete(position)
        if self.batch_acks:
            self.batch_acks.discard_up_to(position)
        consumer.remove_pending_up_to(position)
        if self.redelivery_counts:
            self._forget([p for p in self.redelivery_counts if p <= position])
        self.dispatcher.on_acknowledged()
        self.topic.replication.on_mark_delete(self)

    def _forget(self, positions: Iterable[Position]) -> None:
        for position in positions:
            self.redelivery_counts.pop(position, None)
            if self.dispatcher is not None:
                self.dispatcher.redelivery.discard(position)

    def increment_redelivery_count(self, position: Position) -> None:
        self.redelivery_counts[position] = self.redelivery_counts.get(position, 0) + 1

    def on_marker(self, entry: Entry, info: EntryInfo) -> None:
        """A server-only marker reached dispatch: acknowledge it so it never blocks the backlog."""
        self.topic.replication.on_marker(self, entry, info)  # PIP-33: snapshot markers fill the cache
        self.cursor.delete([entry.position])
        self.topic.replication.on_mark_delete(self)

    # ---- cursor moves ----------------------------------------------------------------------
    def disconnect_consumers(self) -> None:
        """Close every consumer (CLOSE_CONSUMER); clients reconnect and resubscribe by themselves."""
        for consumer in list(self.consumers):
            consumer.connection.close_consumer_by_broker(consumer)

    def reset_cursor(self, position: Position) -> None:
        """Seek: the next entry delivered is `position`; consumers are disconnected first, as in Pulsar.
        A reader's (non-durable) subscription outlives that disconnect for RESET_GRACE_SECONDS, so
        the reader reconnects to the reset cursor instead of its original start position."""
        self.reset_grace_until = time.monotonic() + RESET_GRACE_SECONDS
        self.disconnect_consumers()
        if self.dispatcher is not None:
            self.dispatcher.reset()
        self.redelivery_counts.clear()
        self.batch_acks.clear()
        self.cursor.reset_cursor(position)
        self.ack_state_gate.reset()

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
        self.redelivery_counts.clear()
        self.ack_state_gate.reset()
        self._wake()

    # ---- stats -----------------------------------------------------------------------------
    @property
    def replicated(self) -> bool:
        """PIP-33: the cursor carries pulsar.replicated.subscription = 1 (see broker/replication)."""
        return is_replicated(self)

    @property
    def backlog(self) -> int:
        return self.cursor.number_of_entries_in_backlog()

    def stats(self) -> dict:
        """Pulsar SubscriptionStats fields (names as in the admin API)."""
        stats = {
            "type": SUB_TYPE_NAMES.get(self.sub_type, "None") if self.sub_type is not None else "None",
            "msgBacklog": self.backlog,
            "isDurable": self.durable,
            "isReplicated": self.replicated,
            "markDeletePosition": str(self.cursor.mark_delete_position),
            "readPosition": str(self.cursor.read_position),
            "nonContiguousDeletedMessagesRanges": self.cursor.individually_deleted_ranges_count,
            **self.ack_state_gate.stats(),
            "unackedMessages": sum(c.unacked_messages for c in self.consumers),
            "consumers": [{**c.stats(), **self.dispatcher.consumer_stats(c)} for c in self.consumers],
        }
        if self.dispatcher is not None:
            stats.update(self.dispatcher.stats())
        return stats

    def stop(self) -> None:
        """Stop dispatching (the topic closes or drops the cursor itself)."""
        if self.dispatcher is not None:
            self.dispatcher.close()
        self.ack_state_gate.close()
