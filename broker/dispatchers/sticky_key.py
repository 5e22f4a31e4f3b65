"""Key_Shared and Key_Failover: each sticky key hash goes to one consumer, in order.

An entry of hash h goes to the consumer the selector picks for h, only when
  1. that consumer has permits and a writable socket;
  2. no earlier entry of h waits in the redelivery set (it must go first);
  3. no *other* consumer still holds unacknowledged entries of h (a key's unacked entries sit on
     one consumer at a time);
  4. PIP-282: if the consumer recently joined (or, for Key_Failover, gained a range), the entry
     is at or below the last sent position recorded when it joined; it leaves the recently joined
     consumers once the mark-delete position reaches that position.
Anything else waits in the redelivery set, ordered by position, and is retried first. With
allowOutOfOrderDelivery only rule 1 applies. Entries never go to a consumer outside their hash's
owner. Source: PIP-282 / Pulsar PersistentStickyKeyDispatcherMultipleConsumers; Key_Failover
follows the 2019 Key_Failover subscription proposal for Pulsar (ranges split from the busiest
consumer, merged into the least busy neighbour).
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minipulsar.broker.dispatchers.base import Dispatcher
from minipulsar.broker.dispatchers.last_sent import LastSentTracker
from minipulsar.broker.entry_info import EntryInfo
from minipulsar.broker.selectors.base import StickyKeyConsumerSelector
from minipulsar.broker.sticky_key import murmur3_31, sticky_key
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Entry, Position

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LookAhead:
    """How many entries may wait for redelivery (their consumer has no permits, or their key hash is
    held back for ordering) before a Key_Shared or Key_Failover dispatcher stops reading new ones.

    per_consumer / per_subscription: keySharedLookAheadMsgInReplayThresholdPerConsumer (2000) and
    ...PerSubscription (20000), 0 turning that part off; max_unacked_per_consumer:
    maxUnackedMessagesPerConsumer, the fallback when both are off (0 = no limit). Source:
    PersistentStickyKeyDispatcherMultipleConsumers.getEffectiveLookAheadLimit (Pulsar 4.x).
    """

    per_consumer: int = 2000
    per_subscription: int = 20000
    max_unacked_per_consumer: int = 0

    def limit(self, consumers: int) -> int:
        """min(per_consumer x consumers, per_subscription) over the parts that are on; with both off,
        consumers x max_unacked_per_consumer; unbounded (sys.maxsize) when that is off too."""
        if self.per_consumer > 0:
            bound = self.per_consumer * consumers
            if 0 < self.per_subscription < bound:
                bound = self.per_subscription
        else:
            bound = self.per_subscription
        if bound <= 0:
            bound = consumers * self.max_unacked_per_consumer
        return bound if bound > 0 else sys.maxsize


class StickyKeyDispatcher(Dispatcher):
    """selector: who owns which slot. allow_out_of_order: KeySharedMeta.allowOutOfOrderDelivery.
    gainers_join: every consumer that gains slots joins the recently joined consumers (Key_Failover);
    otherwise only a newly added consumer does (Key_Shared, as PIP-282).
    look_ahead: the bound on entries waiting for redelivery past which no new entries are read
    (LookAhead). key_shared_mode: AUTO_SPLIT 0 / STICKY 1."""

    pauses_on_ack_state = True
    __slots__ = ("_owners", "_replay_slots", "allow_out_of_order", "gainers_join", "key_shared_mode", "look_ahead",
                 "recently_joined", "selector", "sent")

    def __init__(self, subscription, max_read_entries: int, max_read_bytes: int,
                 selector: StickyKeyConsumerSelector, allow_out_of_order: bool, gainers_join: bool,
                 look_ahead: LookAhead = LookAhead(), key_shared_mode: int = 0):
        super().__init__(subscription, max_read_entries, max_read_bytes)
        self.selector = selector
        self.key_shared_mode = key_shared_mode
        self.allow_out_of_order = allow_out_of_order
        self.gainers_join = gainers_join
        self.look_ahead = look_ahead
        self.recently_joined: dict[Consumer, Position] = {}
        self._owners: dict[int, Consumer | None] = {}
        # The slots of the positions a replay is taking, from the redelivery set, so _dispatch need
        # not hash their keys again. A position's slot never changes within a dispatcher (one
        # selector, and every hash in the redelivery set came from it), so a stale value is right too.
        self._replay_slots: dict[Position, int] = {}
        self.sent = LastSentTracker(self.cursor.mark_delete_position, self.cursor.next_valid_position,
                                    self.cursor.is_deleted)

    # ---- membership ------------------------------------------------------------------------
    def matches(self, consumer: "Consumer") -> bool:
        if consumer.sub_type == api.CommandSubscribe.Key_Failover:
            return True
        return (consumer.key_shared_mode, consumer.allow_out_of_order) == (self.key_shared_mode, self.allow_out_of_order)

    def add_consumer(self, consumer: "Consumer") -> None:
        before = self.selector.consumer_ranges()
        self.selector.add_consumer(consumer)  # raises ConsumerAssignError: nothing changed then
        self._owners.clear()
        self._append_consumer(consumer)
        self._joined([consumer] + (self._gainers(before) if self.gainers_join else []))
        self.wake()

    def remove_consumer(self, consumer: "Consumer") -> None:
        before = self.selector.consumer_ranges()
        self.selector.remove_consumer(consumer)
        self._owners.clear()
        self.recently_joined.pop(consumer, None)
        super().remove_consumer(consumer)
        if self.gainers_join:
            self._joined(self._gainers(before))

    def _owner(self, key_hash: int) -> "Consumer | None":
        """selector.select, memoised until the consumers change (selectors are deterministic)."""
        try:
            return self._owners[key_hash]
        except KeyError:
            owner = self._owners[key_hash] = self.selector.select(key_hash)
            return owner

    def _gainers(self, before: dict) -> list["Consumer"]:
        """Consumers that own a slot now that they did not own in `before`."""
        gained = []
        for consumer, ranges in self.selector.consumer_ranges().items():
            old = before.get(consumer, [])
            if any(not any(s <= start and end <= e for s, e in old) for start, end in ranges):
                gained.append(consumer)
        return gained

    def _joined(self, consumers: list["Consumer"]) -> None:
        """PIP-282: remember the last sent position for consumers that (newly) own slots."""
        if self.allow_out_of_order:
            return
        last_sent = self.sent.catch_up(self.cursor.mark_delete_position)
        for consumer in dict.fromkeys(consumers):
            if consumer.closed or consumer in self.recently_joined:
                continue
            consumer.last_sent_position_when_joining = last_sent
            # The first consumer, or one joining when everything sent is acknowledged, can take anything.
            if len(self.consumers) > 1 and last_sent > self.cursor.mark_delete_position:
                self.recently_joined[consumer] = last_sent

    def on_acknowledged(self) -> None:
        """The mark-delete position may have moved: release recently joined consumers it passed."""
        mark_delete = self.cursor.mark_delete_position
        released = [c for c, joined_at in self.recently_joined.items() if mark_delete >= joined_at]
        for consumer in released:
            del self.recently_joined[consumer]
        self.wake()

    def reset(self) -> None:
        super().reset()
        self.recently_joined.clear()
        self.sent.reset(self.cursor.mark_delete_position)

    # ---- reading ---------------------------------------------------------------------------
    def _read_limit(self) -> int:
        permits = sum(c.permits for c in self.consumers if c.can_receive())
        return self._max_entries_for(permits) if permits > 0 else 0

    def _may_read_new(self) -> bool:
        return len(self.redelivery) < self._look_ahead_limit() and super()._may_read_new()

    def _look_ahead_limit(self) -> int:
        return self.look_ahead.limit(len(self.consumers))

    async def _read(self, limit: int) -> list[Entry]:
        replay = self._replayable(limit)
        if replay:
            discard = self.redelivery.discard
            self._replay_slots = {position: discard(position) for position in replay}
            return await self._replay(replay)
        self._replay_slots = {}
        if not self._may_read_new():
            return []
        # A read may take the redelivery set up to the bound, not past it (getMaxEntriesReadLimit).
        limit = min(limit, max(self._look_ahead_limit() - len(self.redelivery), 1))
        return await self.cursor.read_entries(limit, self.max_read_bytes)

    def _replayable(self, limit: int) -> list[Position]:
        """Up to limit positions in the redelivery set whose consumer could take them now, in
        position order.

        Works hash by hash (hashes in the order they started waiting), not entry by entry: the set
        can hold many thousands of entries of blocked hashes. Within a hash it takes a prefix,
        stopping at the first position that cannot go, so a key's order holds; it stops at limit
        rather than choosing more only to drop them (reads are small, the set may be large)."""
        budget = {c: c.permits for c in self.consumers if c.can_receive()}
        receiving = len(budget)  # consumers with budget left
        chosen: list[Position] = []
        owners, allowed = self._owners, self._allowed
        # Runs on every read while entries wait, over every waiting hash: the owner comes from the
        # memo directly, and hashes whose owner cannot take anything cost one dict lookup.
        for key_hash, positions in self.redelivery.hashes():
            consumer = owners[key_hash] if key_hash in owners else self._owner(key_hash)
            left = budget.get(consumer, 0)
            if left <= 0:
                continue
            for position in positions:
                if left <= 0 or len(chosen) >= limit or not allowed(consumer, position, key_hash):
                    break
                left -= 1
                chosen.append(position)
            budget[consumer] = left
            if left <= 0:
                receiving -= 1
            if len(chosen) >= limit or receiving <= 0:
                break
        chosen.sort()
        return chosen

    # ---- dispatching -----------------------------------------------------------------------
    def _redelivery_hash(self, info: EntryInfo) -> int:
        return self.selector.slot(murmur3_31(sticky_key(info.metadata)))

    def _allowed(self, consumer: "Consumer", position: Position, key_hash: int) -> bool:
        """Rules 3 and 4 of the module docstring (rules 1 and 2 are checked by the callers)."""
        if self.allow_out_of_order:
            return True
        joined_at = self.recently_joined.get(consumer)
        if joined_at is not None and position > joined_at:
            return False
        for other in self.consumers:  # a plain loop: this runs for every entry dispatched
            if other is not consumer and other.pending_hashes.get(key_hash):
                return False
        return True

    def _dispatch(self, entries: list[tuple[Entry, EntryInfo]]) -> None:
        self.sent.catch_up(self.cursor.mark_delete_position)
        held_back: set[int] = set()
        # Each consumer's MESSAGEs of this read leave together, as Pulsar sends per consumer per
        # read; budget counts down its permits meanwhile. Deferring is safe for the ordering rules:
        # a hash has one owner within the call, so no other consumer can take it before the send.
        budget: dict[Consumer, int] = {}
        outgoing: dict[Consumer, list[tuple[Entry, int, int]]] = {}
        # Bound methods hoisted out of the loop: it runs for every entry dispatched.
        slot, owner, allowed, mark_sent = self.selector.slot, self._owner, self._allowed, self.sent.mark_sent
        waiting_below = None if self.allow_out_of_order else self.redelivery.has_hash_below
        known = self._replay_slots
        for entry, info in entries:
            position = entry.position
            key_hash = known.get(position) if known else None
            if key_hash is None:
                key_hash = slot(murmur3_31(sticky_key(info.metadata)))
            consumer = owner(key_hash)
            if consumer is not None and consumer not in budget:
                budget[consumer] = consumer.dispatch_budget()
            if (
                consumer is None
                or budget[consumer] <= 0
                or key_hash in held_back
                or (waiting_below is not None and waiting_below(key_hash, position))
                or not allowed(consumer, position, key_hash)
            ):
                held_back.add(key_hash)
                self.redelivery.add(position, key_hash)
                self.held.keep(entry, info)
                continue
            budget[consumer] -= info.num_messages
            outgoing.setdefault(consumer, []).append((entry, info.num_messages, key_hash))
            mark_sent(position)
        for consumer, batch in outgoing.items():
            consumer.send_messages(batch, self.redelivery_tracker)

    # ---- stats -----------------------------------------------------------------------------
    def stats(self) -> dict:
        stats = super().stats()
        stats.update(self.sent.stats())
        stats["consumersAfterMarkDeletePosition"] = {
            f"consumerName={c.name}, consumerId={c.consumer_id}, address={c.address}": str(position)
            for c, position in self.recently_joined.items()
        }
        return stats

    def consumer_stats(self, consumer: "Consumer") -> dict:
        ranges = self.selector.consumer_ranges().get(consumer, [])
        joined = consumer.last_sent_position_when_joining
        return {
            "keyHashRanges": [f"[{start}, {end}]" for start, end in ranges],
            "lastSentPositionWhenJoining": str(joined) if joined is not None else None,
        }
