"""A consumer as the broker sees it: one client consumer handle on one subscription.

It holds the permits the client granted with FLOW (counted in messages: a batch of N costs N,
and permits may go below zero when a batch is larger than what was left, as in Pulsar) and the
pending acks: entries sent to it and not yet acknowledged, so they can be redelivered when it
closes or asks for redelivery. It is the one door to its connection: dispatchers, the
subscription and the topic call `send_messages`, `flow`, `notify_active_consumer_change` and
`disconnect` here, never the connection, and the connection learns only ids, positions and bytes.
Source: Pulsar Consumer (pendingAcks, messagePermits, sendMessages, flowPermits, disconnect).
"""
from __future__ import annotations

import collections
import math
import time
from typing import TYPE_CHECKING, Iterable

from minipulsar.broker.stats_rates import RateMeter
from minipulsar.broker.stats_shapes import CONSUMER_ZERO, date_text, now_ms
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Entry, Position

if TYPE_CHECKING:
    from minipulsar.broker.connection_protocols import ConsumerConnection
    from minipulsar.broker.specs import ConsumerSpec
    from minipulsar.broker.dispatchers.redelivery_tracker import RedeliveryTracker
    from minipulsar.broker.subscription import Subscription


class Consumer:
    """spec: what the client asked for (ConsumerSpec); connection: its door (ConsumerConnection)."""

    def __init__(self, subscription: "Subscription", connection: "ConsumerConnection", spec: ConsumerSpec):
        self.subscription = subscription
        self.connection = connection
        self.consumer_id = spec.consumer_id
        self.name = spec.name
        self.sub_type = spec.sub_type
        self.priority_level = spec.priority_level
        self.epoch = spec.epoch
        self.metadata = dict(spec.metadata)
        self.read_compacted = spec.read_compacted
        self.key_shared_mode = spec.key_shared_mode
        self.hash_ranges = list(spec.hash_ranges)
        self.allow_out_of_order = spec.allow_out_of_order
        self.permits = 0
        # Position -> (messages in the entry, sticky key hash). A plain dict: every entry sent and
        # every ack touches it, and only a cumulative ack needs the positions in order.
        self.pending_acks: dict[Position, tuple[int, int]] = {}
        self.pending_hashes: collections.Counter = collections.Counter()  # sticky key hash -> pending entries
        # Only Key_Failover's selector compares consumers by their recent dispatch rate.
        self.dispatch_rate = DecayingRate() if self.sub_type == api.CommandSubscribe.Key_Failover else None
        self.last_sent_position_when_joining: Position | None = None
        self.closed = False
        self.connected_since = time.time()
        self.msg_out = 0  # messages and bytes sent (Pulsar's msgOutCounter / bytesOutCounter)
        self.bytes_out = 0
        self.entries_out = 0  # entries sent (avgMessagesPerEntry)
        self.msg_redelivered = 0  # messages this consumer asked to get again (msgRateRedeliver)
        self.msg_acked = 0  # messages it acknowledged (messageAckRate)
        # Pulsar's timestamps, ms since the epoch (0 = never): one clock read per FLOW, per
        # dispatch batch and per ACK command, never per message.
        self.first_flow_ms = self.last_flow_ms = 0
        self.first_sent_ms = self.last_sent_ms = 0
        self.last_acked_ms = 0
        self.rates = RateMeter(4)  # msg_out, bytes_out, msg_redelivered, msg_acked per second
        # maxUnackedMessagesPerConsumer (0 = none; Shared and Key_Shared): sending stops at the
        # limit and resumes once half of it is acknowledged, as Pulsar's blockedConsumerOnUnackedMsgs.
        self.max_unacked_messages = 0
        self.blocked_on_unacked = False
        self._unacked = 0

    def __repr__(self) -> str:
        return f"Consumer({self.name!r}, id={self.consumer_id}, sub={self.subscription.name!r})"

    @property
    def address(self) -> str:
        return self.connection.peer_address

    @property
    def unacked_messages(self) -> int:
        """Messages sent and not yet acknowledged (batches count their messages)."""
        return self._unacked

    def can_receive(self) -> bool:
        """True when the client has permits, its socket is not backed up and it is not blocked
        on unacknowledged messages."""
        return not self.closed and self.permits > 0 and not self.blocked_on_unacked and self.connection.is_writable()

    def dispatch_budget(self) -> int:
        """Messages a dispatcher may send in one go now: 0 unless can_receive(), else the permits,
        within what maxUnackedMessagesPerConsumer still allows (a batch may overdraw, as in Pulsar)."""
        if not self.can_receive():
            return 0
        if self.max_unacked_messages:
            return min(self.permits, self.max_unacked_messages - self._unacked)
        return self.permits

    # ---- the door to the connection --------------------------------------------------------
    def flow(self, permits: int) -> None:
        """FLOW: the client grants `permits` more messages; the dispatcher may send again."""
        self.permits += permits
        self.last_flow_ms = now_ms()
        self.first_flow_ms = self.first_flow_ms or self.last_flow_ms
        self.subscription.consumer_flow(self)

    def writable(self) -> None:
        """The connection's socket drained: what waited for it may go now."""
        self.subscription.consumer_flow(self)

    def send_messages(self, entries: Iterable[tuple[Entry, int, int]], redelivery: "RedeliveryTracker") -> None:
        """Write a MESSAGE per (entry, message count, sticky key hash), with the entry's redelivery
        count; charge permits; keep them as pending acks until acknowledged or given back."""
        subscription = self.subscription
        # Loop invariants hoisted: this runs for every entry dispatched.
        batch_acks = subscription.batch_acks if subscription.batch_acks else None
        counted = bool(redelivery)
        partition = subscription.topic.partition_index
        send, consumer_id, epoch = self.connection.send_message, self.consumer_id, self.epoch
        pending_acks, pending_hashes = self.pending_acks, self.pending_hashes
        messages = size = count = 0
        for entry, num_messages, key_hash in entries:
            position = entry.position
            ack_set = batch_acks.ack_set(position) if batch_acks is not None else None
            if ack_set is not None:  # only the unacknowledged indexes of a partly acked batch go out
                num_messages = batch_acks.unacked_count(position, num_messages)
            send(consumer_id, entry, partition, redelivery.count(position) if counted else 0, epoch, ack_set)
            pending_acks[position] = (num_messages, key_hash)
            pending_hashes[key_hash] += 1
            messages += num_messages
            size += len(entry.data)
            count += 1
        self._unacked += messages
        self.permits -= messages
        self.msg_out += messages
        self.bytes_out += size
        self.entries_out += count
        self.last_sent_ms = now_ms()
        self.first_sent_ms = self.first_sent_ms or self.last_sent_ms
        if self.dispatch_rate is not None:
            self.dispatch_rate.record(messages)
        if self.max_unacked_messages and self._unacked >= self.max_unacked_messages:
            self.blocked_on_unacked = True

    def send_at_once(self, entry: Entry, num_messages: int) -> None:
        """Non-persistent topics: write one MESSAGE and charge permits, keeping nothing pending
        (there is nothing to redeliver; Pulsar's non-persistent dispatchers keep no pending acks)."""
        self.connection.send_message(self.consumer_id, entry, self.subscription.topic.partition_index, 0,
                                     self.epoch, None)
        self.permits -= num_messages
        self.msg_out += num_messages
        self.bytes_out += len(entry.data)
        self.entries_out += 1
        self.last_sent_ms = now_ms()
        self.first_sent_ms = self.first_sent_ms or self.last_sent_ms

    def notify_active_consumer_change(self, active: bool) -> None:
        """Failover: tell the client whether it is now the active consumer."""
        if not self.closed:
            self.connection.send_active_consumer_change(self.consumer_id, active)

    def reached_end_of_topic(self) -> None:
        """The topic is terminated and this consumer's subscription has read everything."""
        if not self.closed:
            self.connection.send_reached_end_of_topic(self.consumer_id)

    def disconnect(self) -> None:
        """The broker closes this consumer (CLOSE_CONSUMER); the client reconnects by itself."""
        self.connection.close_consumer_by_broker(self.consumer_id)

    def redeliver(self, positions: list[Position] | None) -> None:
        """REDELIVER_UNACKNOWLEDGED_MESSAGES: the listed (None: all) pending entries go back."""
        pending = self.pending_acks
        wanted = list(pending) if positions is None else positions
        self.msg_redelivered += sum(pending[p][0] for p in wanted if p in pending)
        self.subscription.redeliver_unacknowledged(self, positions)

    def close(self) -> None:
        """The client closed it, or its connection went: leave the subscription."""
        if not self.closed:
            self.closed = True
            self.subscription.remove_consumer(self)

    def _drop(self, position: Position) -> tuple[int, int] | None:
        value = self._drop_quietly(position)
        if value is not None:
            self._released(value[0])
        return value

    def _drop_quietly(self, position: Position) -> tuple[int, int] | None:
        """Forget position's pending ack without unblocking: the caller calls _released."""
        value = self.pending_acks.pop(position, None)
        if value is not None:
            hashes, key_hash = self.pending_hashes, value[1]
            left = hashes[key_hash] - 1
            if left:
                hashes[key_hash] = left
            else:
                del hashes[key_hash]
        return value

    def _released(self, messages: int) -> None:
        """messages are no longer unacknowledged: unblock at half of maxUnackedMessagesPerConsumer."""
        self._unacked -= messages
        if self.blocked_on_unacked and self._unacked <= self.max_unacked_messages // 2:
            self.blocked_on_unacked = False
            self.subscription.consumer_flow(self)

    def clear_pending(self) -> None:
        """Forget every pending ack (the cursor was reset; nothing sent before counts)."""
        self.pending_acks.clear()
        self.pending_hashes.clear()
        self._unacked = 0
        self.blocked_on_unacked = False

    def remove_pending(self, positions: Iterable[Position]) -> list[Position]:
        """Drop the pending acks of positions; returns those that were not pending here."""
        missing, released = [], 0
        for position in positions:  # every acknowledgement: one loop, one unblock check
            value = self._drop_quietly(position)
            if value is None:
                missing.append(position)
            else:
                released += value[0]
        self._count_acked(released)
        if released:
            self._released(released)
        return missing

    def remove_pending_up_to(self, position: Position) -> None:
        """Drop pending acks at or below position (a cumulative ack)."""
        released = 0
        for key in [key for key in self.pending_acks if key <= position]:
            value = self._drop(key)
            released += value[0] if value is not None else 0
        self._count_acked(released)

    def _count_acked(self, messages: int) -> None:
        """An ACK acknowledged messages this consumer held (messageAckRate, lastAckedTimestamp)."""
        if messages:
            self.msg_acked += messages
            self.last_acked_ms = now_ms()

    def take_pending(self, positions: Iterable[Position] | None = None) -> list[tuple[Position, int]]:
        """Remove and return (position, hash) of pending entries: those listed, or all when None."""
        wanted = list(self.pending_acks.keys()) if positions is None else positions
        taken = []
        for position in wanted:
            value = self._drop(position)
            if value is not None:
                taken.append((position, value[1]))
        return taken

    def update_rates(self, now: float) -> None:
        """The stats timer's tick (broker/stats_rates.py)."""
        self.rates.update(now, (self.msg_out, self.bytes_out, self.msg_redelivered, self.msg_acked))

    def stats(self) -> dict:
        """Pulsar ConsumerStats (broker/stats_shapes.py); priorityLevel is ours."""
        rate, throughput, redeliver, acks = self.rates.rates
        return {
            **CONSUMER_ZERO,
            "msgRateOut": rate,
            "msgThroughputOut": throughput,
            "bytesOutCounter": self.bytes_out,
            "msgOutCounter": self.msg_out,
            "msgRateRedeliver": redeliver,
            "messageAckRate": acks,
            "consumerName": self.name,
            "availablePermits": self.permits,
            "unackedMessages": self.unacked_messages,
            "avgMessagesPerEntry": round(self.msg_out / self.entries_out) if self.entries_out else 0,
            "blockedConsumerOnUnackedMsgs": self.blocked_on_unacked,
            "address": self.address,
            "connectedSince": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.connected_since)),
            "clientVersion": getattr(self.connection, "client_version", ""),
            "lastAckedTimestamp": self.last_acked_ms,
            "lastConsumedTimestamp": self.last_sent_ms,
            "firstMessagesSentTimestamp": self.first_sent_ms,
            "lastConsumedFlowTimestamp": self.last_flow_ms,
            "firstConsumedFlowTimestamp": self.first_flow_ms,
            "metadata": dict(self.metadata),
            "lastAckedTime": date_text(self.last_acked_ms),
            "lastConsumedTime": date_text(self.last_sent_ms),
            "priorityLevel": self.priority_level,
        }


AGE_STEP_SECONDS = 0.05  # DecayingRate.record decays at most this often (an error below 0.4 %)


class DecayingRate:
    """Messages per second, decayed exponentially (half-life in seconds): the 'recent dispatch
    rate' the Key_Failover proposal compares consumers by."""

    def __init__(self, half_life: float = 10.0):
        self._decay = math.log(2) / half_life
        self._value = 0.0
        self._stamp = time.monotonic()

    def _age(self, now: float) -> None:
        self._value *= math.exp(-self._decay * (now - self._stamp))
        self._stamp = now

    def record(self, n: int) -> None:
        now = time.monotonic()
        if now - self._stamp >= AGE_STEP_SECONDS:  # decaying per call would cost an exp() per entry sent
            self._age(now)
        self._value += n

    def rate(self) -> float:
        self._age(time.monotonic())
        return self._value * self._decay
