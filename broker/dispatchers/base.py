"""The read loop every dispatcher shares.

A dispatcher reads entries for its subscription, only ever through the subscription's cursor, and
hands them to consumers. Entries waiting for redelivery (negative acks, redelivery requests, the
pending acks of closed consumers, entries that found no consumer with permits) sit in the
redelivery set, ordered by position, and are replayed before new entries are read; how often each
was redelivered is kept in the redelivery tracker. Server-only markers are acknowledged and never sent.
Subclasses decide who gets what (`_dispatch`) and how many entries to read (`_read_limit`).
Source: Pulsar PersistentDispatcherMultipleConsumers / AbstractBaseDispatcher.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Iterable

from minipulsar.broker.delayed_delivery import DelayedDeliveryTracker
from minipulsar.broker.dispatchers.redelivery import RedeliverySet
from minipulsar.broker.dispatchers.redelivery_tracker import RedeliveryTracker
from minipulsar.broker.dispatchers.held_entries import HeldEntries
from minipulsar.broker.entry_info import EntryInfo, entry_info
from minipulsar.storage import Entry, Position, StorageError

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer
    from minipulsar.broker.subscription import Subscription

log = logging.getLogger(__name__)


def _position_of(entry: Entry) -> Position:
    return entry.position


class Dispatcher:
    """Base dispatcher. consumers: in arrival order; redelivery: the RedeliverySet of positions
    waiting to be sent again; redelivery_tracker: how often each position was redelivered;
    held: entries of the redelivery set that were read and never sent, kept parsed for their replay."""

    pauses_on_ack_state = False  # PIP-299 applies to multi-consumer dispatchers only
    counts_redeliveries = True  # Pulsar disables the redelivery tracker of single-active dispatchers
    # Slots here and in the subclasses: new entries wake a dispatcher with consumers once per group
    # of its topic (docs/performance.md, "Counting instead of timing, and slots").
    __slots__ = ("subscription", "cursor", "consumers", "redelivery", "redelivery_tracker", "max_read_entries",
                 "max_read_bytes", "held", "_read_task", "_generation", "_wanted", "_avg_messages_per_entry",
                 "closed", "delayed", "_told_end_of_topic")

    def __init__(self, subscription: "Subscription", max_read_entries: int, max_read_bytes: int):
        self.subscription = subscription
        self.cursor = subscription.cursor
        self.consumers: list[Consumer] = []
        self.redelivery = RedeliverySet()
        self.redelivery_tracker = RedeliveryTracker(
            self.counts_redeliveries and subscription.topic.context.config.subscription_redelivery_tracker_enabled)
        self.max_read_entries = max_read_entries
        self.max_read_bytes = max_read_bytes
        self.held = HeldEntries(subscription.topic.context.held_budget)
        self._read_task: asyncio.Task | None = None
        self._generation = 0  # bumped by reset(): reads that started before it are discarded
        self._wanted = False  # a wake-up arrived while a read was running
        self._avg_messages_per_entry = 1.0
        self.closed = False
        self.delayed: DelayedDeliveryTracker | None = None  # Shared / Key_Shared with delayedDeliveryEnabled
        self._told_end_of_topic: set[Consumer] = set()

    def enable_delayed_delivery(self, tick_ms: int, strict: bool) -> None:
        """Park entries whose deliver_at_time is in the future until they are due (broker/delayed_delivery.py)."""
        self.delayed = DelayedDeliveryTracker(self._delayed_due, tick_ms, strict)

    def _delayed_due(self, items: list[tuple[Position, int]]) -> None:
        self.redelivery.update(items)
        self.wake()

    def _redelivery_hash(self, info: EntryInfo) -> int:
        """The hash an entry is kept under in the redelivery set (sticky-key dispatchers override)."""
        return 0

    # ---- consumers -------------------------------------------------------------------------
    def add_consumer(self, consumer: "Consumer") -> None:
        self._append_consumer(consumer)
        self.wake()

    def _append_consumer(self, consumer: "Consumer") -> None:
        """consumer joins the list; subclasses that override add_consumer call this too."""
        self.consumers.append(consumer)
        self._update_entry_waiter()

    def remove_consumer(self, consumer: "Consumer") -> None:
        """Forget consumer; its unacknowledged entries go to the redelivery set for the others."""
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self._update_entry_waiter()
        self.redelivery.update(consumer.take_pending())
        self.wake()

    def redeliver(self, consumer: "Consumer", positions: Iterable[Position] | None) -> None:
        """REDELIVER_UNACKNOWLEDGED_MESSAGES: the listed (or all) pending entries of consumer go back."""
        taken = consumer.take_pending(positions)
        for position, _ in taken:
            self.redelivery_tracker.increment(position)
        self.redelivery.update(taken)
        self.wake()

    def acknowledged(self, positions: list[Position]) -> None:
        """Individual acks: those positions need no redelivery any more."""
        self._forget(positions)
        self.on_acknowledged()

    def acknowledged_up_to(self, position: Position) -> None:
        """A cumulative ack: everything at or below position is acknowledged."""
        if self.redelivery_tracker:
            self._forget(self.redelivery_tracker.at_most(position))
        self.on_acknowledged()

    def _forget(self, positions: list[Position]) -> None:
        # Every acknowledgement comes here; the three are usually empty, so test that first.
        if self.redelivery:
            for position in positions:
                self.redelivery.discard(position)
        if self.held:
            for position in positions:
                self.held.discard(position)
        if self.redelivery_tracker:
            self.redelivery_tracker.remove(positions)

    def reset(self) -> None:
        """Forget everything in flight (after a seek or cursor reset); reads started before are dropped."""
        self._generation += 1
        self.redelivery.clear()
        self.redelivery_tracker.clear()
        self.held.clear()
        if self.delayed is not None:
            self.delayed.clear()
        for consumer in self.consumers:
            consumer.clear_pending()

    def _update_entry_waiter(self) -> None:
        """New entries wake this dispatcher (PersistentTopic.entry_waiters) while it has consumers
        and is open: one without consumers has nobody to read for, and every report of its topic
        would touch it. Call it after any change of consumers or closed. Pulsar's
        ManagedLedgerImpl likewise notifies only its waiting cursors of new entries."""
        self.subscription.topic.set_entry_waiter(self, bool(self.consumers) and not self.closed)

    def close(self) -> None:
        self.closed = True
        self._update_entry_waiter()
        self.held.clear()
        if self.delayed is not None:
            self.delayed.close()
        if self._read_task is not None:
            self._read_task.cancel()

    # ---- the read loop ---------------------------------------------------------------------
    def wake(self) -> None:
        """Something changed (permits, new entries, acks, consumers): read if there is work."""
        if self.closed or not self.consumers:  # nobody to read for, nobody to tell the end of the topic
            return
        if self._read_task is not None and not self._read_task.done():
            self._wanted = True
            return
        if self._read_limit() > 0 and self._has_work():
            self._read_task = asyncio.get_running_loop().create_task(self._read_loop())
        else:
            self._notify_end_of_topic()

    def _notify_end_of_topic(self) -> None:
        """When the topic is terminated and everything is read: REACHED_END_OF_TOPIC, once per
        consumer (Pulsar sends it when a read finds no more entries on a terminated ledger)."""
        if self.subscription.topic.terminated_at is None or self.redelivery or self.cursor.has_more_entries():
            return
        for consumer in self.consumers:
            if consumer not in self._told_end_of_topic:
                self._told_end_of_topic.add(consumer)
                consumer.reached_end_of_topic()

    def _has_work(self) -> bool:
        return bool(self.redelivery) or (self._may_read_new() and self._has_new_entries())

    def _has_new_entries(self) -> bool:
        return self.cursor.has_more_entries()

    def _may_read_new(self) -> bool:
        """False while PIP-299 pauses reading new entries (redeliveries still go out)."""
        return not (self.pauses_on_ack_state and self.subscription.ack_state_gate.blocked)

    async def _read_loop(self) -> None:
        try:
            while not self.closed:
                self._wanted = False
                limit = self._read_limit()
                if limit <= 0 or not self._has_work():
                    if not self._wanted:
                        self._notify_end_of_topic()
                        return
                    continue
                generation = self._generation
                before = (len(self.redelivery), self.cursor.read_position)
                entries = await self._read(limit)
                if generation != self._generation or self.closed:
                    continue
                if entries:
                    self._dispatch_entries(entries)
                    # A read served from the entry cache never suspends: without this the loop would
                    # read on until every permit is spent, with FLOWs and acks (and every other topic)
                    # waiting, so consumers would look out of permits that they have already granted.
                    await asyncio.sleep(0)
                elif before == (len(self.redelivery), self.cursor.read_position) and not self._wanted:
                    return  # no progress: wait for the next wake-up rather than spin
        except asyncio.CancelledError:
            raise
        except StorageError:
            log.exception("%s: read failed; retrying in 1 s", self.subscription)
            await asyncio.sleep(1.0)
            self._read_task = None
            self.wake()
        except Exception:  # a bug here must not kill dispatch for good; log loudly and go on
            log.exception("%s: dispatch failed", self.subscription)

    def _max_entries_for(self, permits: int) -> int:
        """How many entries to read for `permits` messages, using the average batch size seen."""
        entries = int(permits / max(self._avg_messages_per_entry, 1.0))
        return max(1, min(self.max_read_entries, entries))

    async def _read(self, limit: int) -> list[Entry]:
        if self.redelivery:
            return await self._read_replay(limit)
        if not self._may_read_new():
            return []
        return await self.subscription.read_new_entries(limit, self.max_read_bytes, self._reads_compacted())

    def _reads_compacted(self) -> bool:
        """Whether new entries come through the compacted view (single-active dispatchers say)."""
        return False

    async def _read_replay(self, limit: int) -> list[Entry]:
        return await self._replay(self.redelivery.pop_first(limit))

    async def _replay(self, positions: list[Position]) -> list[Entry]:
        """The entries at positions (ascending) that are still unacknowledged, in order: held
        entries from memory, the others read again; the counts of those already acknowledged or
        trimmed are dropped."""
        held, to_read, gone = [], [], []
        for position in positions:
            entry = self.held.entry(position)
            if entry is None:
                to_read.append(position)
            elif self.cursor.is_deleted(position):
                self.held.discard(position)
                gone.append(position)
            else:
                held.append(entry)
        entries, skipped = await self.cursor.replay_entries(to_read) if to_read else ([], [])
        self.redelivery_tracker.remove(skipped + gone)
        if held and entries:
            return sorted(held + entries, key=_position_of)
        return held or entries

    def _dispatch_entries(self, entries: list[Entry]) -> None:
        infos = []
        held = self.held
        for entry in entries:
            info = held.take_info(entry.position) if held else None
            if info is None:
                info = entry_info(entry.data)
            if info.is_marker:
                self.subscription.on_marker(entry, info)
                continue
            if (self.delayed is not None and info.metadata.HasField("deliver_at_time")
                    and self.delayed.should_delay(entry, info, self._redelivery_hash(info))):
                continue
            infos.append((entry, info))
        if infos:
            total = sum(info.num_messages for _, info in infos)
            self._avg_messages_per_entry = 0.9 * self._avg_messages_per_entry + 0.1 * (total / len(infos))
            self._dispatch(infos)

    def put_back(self, entries: Iterable[tuple[Entry, EntryInfo]], key_hash: int = 0) -> None:
        """Entries that found no consumer wait in the redelivery set (and, parsed, in held)."""
        for entry, info in entries:
            self.redelivery.add(entry.position, key_hash)
            self.held.keep(entry, info)

    # ---- subclass hooks --------------------------------------------------------------------
    def matches(self, consumer: "Consumer") -> bool:
        """Whether consumer can join this dispatcher (else, with no consumers left, it is replaced)."""
        return True

    def on_acknowledged(self) -> None:
        """Acknowledgements arrived (the mark-delete position may have moved)."""

    def consumer_stats(self, consumer: "Consumer") -> dict:
        """Dispatcher-specific fields of a consumer's stats."""
        return {}

    def _read_limit(self) -> int:
        """Entries to read now; 0 when no consumer can take anything."""
        raise NotImplementedError

    def _dispatch(self, entries: list[tuple[Entry, EntryInfo]]) -> None:
        raise NotImplementedError

    def stats(self) -> dict:
        stats = {"msgInReplay": len(self.redelivery)}
        if self.delayed is not None:
            stats["msgDelayed"] = len(self.delayed)
        return stats
