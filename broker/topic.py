"""A persistent topic: one managed ledger, its producers and its subscriptions.

Publishing appends the entry exactly as the producer framed it; the entry is durable when
add_entry returns. Subscriptions are created on first subscribe (durable ones come back from
their cursors after a restart). Source: Pulsar PersistentTopic.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Callable

from minipulsar.broker.abstract_topic import AbstractTopic
from minipulsar.broker.access_modes import ProducerAccess
from minipulsar.broker.compaction import COMPACTION_CURSOR, TopicCompaction
from minipulsar.broker.entry_info import entry_info
from minipulsar.broker.deduplication import CURSOR_NAME as DEDUP_CURSOR_NAME, MessageDeduplication
from minipulsar.broker.errors import (NotAllowedError, PersistenceFailedError, ServiceNotReadyError,
                                      SubscriptionNotFoundError, TopicTerminatedError)
from minipulsar.broker.replication import TopicReplication, last_data_position
from minipulsar.broker.specs import SubscriptionSpec
from minipulsar.broker.stats_shapes import TOPIC_ZERO
from minipulsar.broker.subscription import Subscription, SubType
from minipulsar.broker.topic_name import TopicName
from minipulsar.storage import Durability, LedgerClosedError, ManagedLedger, PersistenceError, Position

if TYPE_CHECKING:
    from minipulsar.broker.dispatchers.base import Dispatcher
    from minipulsar.broker.replication.replicator import Replicator
    from minipulsar.broker.topic_context import TopicContext

log = logging.getLogger(__name__)

EARLIEST = Position(-1, -1)
TERMINATED_KEY = "terminatedTopics"  # metadata store: topic -> [ledger, entry] of its last entry


def is_system_cursor(name: str, replicator_prefix: str) -> bool:
    """Cursors the broker keeps for itself, never subscriptions: replicators', deduplication's
    and compaction's; clients may not subscribe with these names."""
    return name.startswith(replicator_prefix + ".") or name in (DEDUP_CURSOR_NAME, COMPACTION_CURSOR)


def check_subscription_name(name: str, replicator_prefix: str) -> None:
    """Raises NotAllowedError for a name no client may subscribe with: empty, or a system cursor's."""
    if not name:
        raise NotAllowedError("empty subscription name")
    if is_system_cursor(name, replicator_prefix):
        raise NotAllowedError(f"Subscription with reserved subscription name attempted: {name}")


class PersistentTopic(AbstractTopic):
    """name: the TopicName; ledger: its ManagedLedger; context: what it sees of its broker."""

    persistent = True
    __slots__ = ("name", "ledger", "_ledger_append", "subscriptions", "entry_waiters", "partition_index",
                 "deduplication", "terminated_at", "_creating_subscription", "replication", "compaction",
                 "on_appended")

    def __init__(self, context: "TopicContext", name: TopicName, ledger: ManagedLedger):
        super().__init__(context)
        self.name = name
        self.ledger = ledger
        self._ledger_append = ledger.append  # per SEND: the ledger's own object stays out of the way
        self.subscriptions: dict[str, Subscription] = {}
        # What new entries wake (set_entry_waiter): the subscriptions' dispatchers that have
        # consumers and the running replicators. The topic listens to its ledger's new entries
        # only while there are some, so the reports of a topic nobody reads touch no object of
        # the topic's. A tuple, replaced on a change.
        self.entry_waiters: tuple[Dispatcher | Replicator, ...] = ()
        self.partition_index = name.partition_index
        self.access = ProducerAccess(self)  # producer access modes and the topic epoch
        self.deduplication: MessageDeduplication | None = None  # set by initialize() when enabled
        terminated = context.metadata.data.get(TERMINATED_KEY, {}).get(str(name))
        self.terminated_at: Position | None = Position(*terminated) if terminated is not None else None
        self._creating_subscription = asyncio.Lock()
        for cursor_name, cursor in ledger.cursors.items():
            if not is_system_cursor(cursor_name, context.replicator_prefix):
                self.subscriptions[cursor_name] = Subscription(self, cursor_name, cursor, durable=True)
        # Called with each entry queued while the replication's snapshot controller runs (PIP-33:
        # data entries arm the next snapshot), else None: a SEND of a topic without replicated
        # subscriptions calls nothing, and touches no object of the replication's.
        self.on_appended: Callable[[bytes], None] | None = None
        self.replication = TopicReplication(self)  # replicators and PIP-33 snapshots (broker/replication)
        self.compaction = TopicCompaction(self)  # the compacted view (broker/compaction)

    def __repr__(self) -> str:
        return f"PersistentTopic({self.name})"

    async def initialize(self) -> None:
        """Recover state kept beside the ledger before the topic serves anyone (deduplication, the
        compacted view)."""
        await self._apply_deduplication()
        await self.compaction.load()

    async def apply_policies(self) -> None:
        """The namespace's policies changed: deduplication on or off, retention, and every
        subscription re-reads its PIP-299 pause and its consumers' unacked limit."""
        await self._apply_deduplication()
        self.ledger.set_retention(*self.context.policies.retention(self.name.namespace_name))
        for subscription in list(self.subscriptions.values()):
            subscription.apply_policies()

    async def _apply_deduplication(self) -> None:
        enabled = self.context.policies.deduplication_enabled(self.name.namespace_name)
        if enabled and self.deduplication is None:
            config = self.context.config
            dedup = MessageDeduplication(self.ledger, config.broker_deduplication_entries_interval,
                                         config.replicator_prefix,
                                         config.broker_deduplication_snapshot_interval_seconds)
            await dedup.load()
            self.deduplication = dedup
        elif not enabled:
            self.deduplication = None
            await MessageDeduplication.remove(self.ledger)

    def _on_new_entries(self) -> None:
        for waiter in self.entry_waiters:  # a wake that changes them replaces the tuple, not this one
            waiter.wake()

    def set_entry_waiter(self, waiter: "Dispatcher | Replicator", waiting: bool) -> None:
        """New entries wake waiter (its wake()) from now on when waiting, else no more."""
        had = bool(self.entry_waiters)
        others = tuple(w for w in self.entry_waiters if w is not waiter)
        self.entry_waiters = others + (waiter,) if waiting else others
        if self.entry_waiters and not had:
            self.ledger.add_entry_listener(self._on_new_entries)
        elif had and not self.entry_waiters:
            self.ledger.remove_entry_listener(self._on_new_entries)

    # ---- publishing (producers by name: broker/abstract_topic.py) ----------------------------
    def append(self, data: bytes, producer_name: str | None = None, sequence_id: int = 0,
               highest_sequence_id: int = 0) -> tuple[Position, Durability]:
        """Queue one entry: its position and the storage Durability of its group commit share,
        settled when it is durable (storage PersistenceError on failure). Raises
        ServiceNotReadyError when the ledger is closed.
        With deduplication on and a producer name given, a duplicate is not appended: the answer is
        the original's position and Durability, or (-1, -1) and a settled one when the original is
        durable and its position unknown (broker/deduplication.py)."""
        if self.deduplication is not None and producer_name is not None:
            return self.deduplication.append(producer_name, sequence_id, highest_sequence_id, data, self._append_entry)
        return self._append_entry(data)

    def _append_entry(self, data: bytes) -> tuple[Position, Durability]:
        if self.terminated_at is not None:  # per SEND: the check's call only when it raises
            self.check_not_terminated()
        try:
            appended = self._ledger_append(data)
        except LedgerClosedError as exc:
            raise ServiceNotReadyError(str(exc)) from exc
        if self.on_appended is not None:
            self.on_appended(data)
        return appended

    async def publish(self, data: bytes) -> Position:
        """Append one entry; returns its position once durable; raises PersistenceFailedError."""
        position, durable = self.append(data)
        try:
            await durable  # a cancelled caller cancels its own waiter, not the appends sharing its group
        except PersistenceError as exc:
            raise PersistenceFailedError(str(exc)) from exc
        return position

    async def last_message_id(self) -> tuple[Position, int | None]:
        """The last data entry's position (never a marker, PIP-33; (L, -1) when there is none) and
        the batch index of its last message (None when the entry is not a batch)."""
        last = await last_data_position(self.ledger)
        if last.entry_id < 0:
            return last, None
        entry = await self.ledger.read_entry(last)
        info = entry_info(entry.data) if entry is not None else None
        if info is not None and info.metadata is not None and info.metadata.HasField("num_messages_in_batch"):
            return last, info.num_messages - 1
        return last, None

    def is_idle(self) -> bool:
        """No producer, no connected consumer and no entry: a schema may still be chosen freely."""
        return not self.producers and not any(s.consumers for s in self.subscriptions.values()) \
            and self.ledger.number_of_entries == 0

    # ---- termination -----------------------------------------------------------------------
    def check_not_terminated(self) -> None:
        """Raises TopicTerminatedError once the topic is terminated."""
        if self.terminated_at is not None:
            raise TopicTerminatedError(f"Topic {self.name} was terminated at {self.terminated_at}")

    async def terminate(self) -> Position:
        """Take no more messages: the last entry's position is kept (metadata store), producers are
        disconnected (they get TopicTerminated when they come back) and consumers that have read
        everything are told REACHED_END_OF_TOPIC. Returns the last position (again when already
        terminated). Source: Pulsar PersistentTopic.terminate, ManagedLedger.asyncTerminate."""
        if self.terminated_at is None:
            last = self.ledger.last_confirmed_position
            self.context.metadata.data.setdefault(TERMINATED_KEY, {})[str(self.name)] = list(last)
            await self.context.metadata.save()
            self.terminated_at = last
            log.info("%s: terminated at %s", self.name, last)
            for producer in list(self.producers.values()):
                producer.disconnect()
            self._on_new_entries()  # dispatchers notice the end
        return self.terminated_at

    # ---- subscriptions ---------------------------------------------------------------------
    async def _new_subscription(self, spec: SubscriptionSpec) -> Subscription:
        if spec.durable:
            cursor = await self.ledger.open_cursor(spec.name, spec.initial_position)
        else:
            cursor = self.ledger.new_non_durable_cursor(spec.start, inclusive=True)
        subscription = Subscription(self, spec.name, cursor, spec.durable)
        if spec.starts_at_earliest:
            subscription.compacted_read_start = EARLIEST
        self.subscriptions[spec.name] = subscription
        return subscription

    async def subscribe(self, spec: SubscriptionSpec, sub_type: int = SubType.Exclusive,
                        read_compacted: bool = False) -> Subscription:
        """The subscription spec names, created when missing (SubscriptionSpec says how: a durable
        cursor at its initial position, or a reader's cursor at its start, as Pulsar's
        NonDurableCursorImpl places a cursor at a start message id).
        read_compacted: only on Exclusive and Failover (NotAllowedError otherwise, as Pulsar)."""
        if read_compacted and sub_type not in (SubType.Exclusive, SubType.Failover):
            raise NotAllowedError("readCompacted only allowed on failover or exclusive subscriptions")
        subscription = self.subscriptions.get(spec.name)
        if subscription is None:
            # One creation at a time: two SUBSCRIBEs of a new name (two function instances starting
            # together) must share one subscription, not each get its own, the first one orphaned.
            async with self._creating_subscription:
                subscription = self.subscriptions.get(spec.name) or await self._new_subscription(spec)
        self.replication.subscribe_requested(subscription, spec.replicate_state)
        return subscription

    async def remove_subscription(self, name: str) -> None:
        """Unsubscribe: drop the subscription and its cursor; raises SubscriptionNotFoundError."""
        subscription = self.subscriptions.pop(name, None)
        if subscription is None:
            raise SubscriptionNotFoundError(f"subscription {name} not found on {self.name}")
        self.keep_counters_of(subscription)
        subscription.stop()
        if subscription.durable:
            await self.ledger.delete_cursor(name)
        else:
            await subscription.cursor.close()

    async def consumer_closed(self, subscription: Subscription) -> None:
        """A non-durable subscription ends with its last consumer (after a seek, once its grace
        period passes with nobody back)."""
        if subscription.durable or subscription.consumers or self.subscriptions.get(subscription.name) is not subscription:
            return
        grace = subscription.reset_grace_until - time.monotonic()
        if grace > 0:
            asyncio.get_running_loop().call_later(grace, lambda: self.context.spawn(self.consumer_closed(subscription)))
            return
        await self.remove_subscription(subscription.name)

    # ---- lifecycle and stats ---------------------------------------------------------------
    async def close(self) -> None:
        """Close subscriptions (persisting cursors) and the ledger."""
        self.ledger.remove_entry_listener(self._on_new_entries)
        if self.deduplication is not None:
            self.deduplication.take_snapshot()
        await self.replication.close()
        await self.compaction.close()
        for subscription in self.subscriptions.values():
            subscription.stop()
        await self.ledger.close()

    def backlog_size(self, cursor=None) -> int:
        """Bytes of the entries after a cursor's mark-delete position (default: the slowest
        durable cursor's, subscriptions and replicators alike), record headers excluded: Pulsar's
        backlogSize (ManagedLedger.getEstimatedBacklogSize), exact here from the ledger map."""
        ledger = self.ledger
        cursors = [cursor] if cursor is not None else list(ledger.cursors.values())
        if not cursors:
            return 0
        return ledger.size_between(min(c.mark_delete_position for c in cursors), ledger.last_confirmed_position)

    def stats(self) -> dict:
        """Pulsar TopicStats (broker/stats_shapes.py); numberOfEntries and lastConfirmedEntry are ours."""
        stats = {**TOPIC_ZERO, **self.traffic_stats(self.replication.stats())}
        stats.update({
            "storageSize": self.ledger.total_size,
            "backlogSize": self.backlog_size(),
            "numberOfEntries": self.ledger.number_of_entries,
            "lastConfirmedEntry": str(self.ledger.last_confirmed_position),
            "deduplicationStatus": "Enabled" if self.deduplication is not None else "Disabled",
            "topicEpoch": self.access.epoch,
            "compaction": self.compaction.stats(),
        })
        stats["nonContiguousDeletedMessagesRanges"] = sum(
            sub["nonContiguousDeletedMessagesRanges"] for sub in stats["subscriptions"].values())
        return stats
