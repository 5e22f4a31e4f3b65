"""What a subscription adds up from its consumers for Pulsar's SubscriptionStats: counters that
outlive the consumers that made them, rates summed over the connected ones, the latest timestamps.
Shared by persistent and non-persistent subscriptions. Source: Pulsar PersistentSubscription
(msgOutFromRemovedConsumer, bytesOutFromRemovedConsumers, getStats).
"""
from __future__ import annotations


class ConsumerCounters:
    """Mixin for subscriptions (anything with `consumers`): msgOutCounter / bytesOutCounter are
    the consumers' own counters summed, plus what consumers that left had counted (Pulsar's
    PersistentSubscription msgOutFromRemovedConsumer / bytesOutFromRemovedConsumers); rates are the
    connected consumers' summed and the last*Timestamp fields the latest of any consumer's, as
    Pulsar's getStats adds them up. It has slots, as the subscriptions built on it do: with a
    thousand topics a subscription is seldom still in the processor's caches when its consumers'
    acks and dispatch touch it (docs/performance.md, "Counting instead of timing, and slots")."""

    __slots__ = ("_removed_msg_out", "_removed_bytes_out", "_removed_latest")

    def __init__(self) -> None:
        self._removed_msg_out = 0
        self._removed_bytes_out = 0
        self._removed_latest = (0, 0, 0)  # lastConsumedFlow, lastConsumed, lastAcked of consumers that left

    @property
    def msg_out_counter(self) -> int:
        return self._removed_msg_out + sum(c.msg_out for c in self.consumers)

    @property
    def bytes_out_counter(self) -> int:
        return self._removed_bytes_out + sum(c.bytes_out for c in self.consumers)

    def _keep_counters_of(self, consumer) -> None:
        """consumer is leaving: what it sent still counts."""
        if consumer in self.consumers:
            self._removed_msg_out += consumer.msg_out
            self._removed_bytes_out += consumer.bytes_out
            self._removed_latest = tuple(map(max, self._removed_latest, _latest(consumer)))

    def update_consumer_rates(self, now: float) -> None:
        for consumer in list(self.consumers):
            consumer.update_rates(now)

    def consumer_totals(self) -> dict:
        """The subscription-level sums of its consumers' stats (SubscriptionStats fields)."""
        rates = [consumer.rates.rates for consumer in self.consumers]
        flow, sent, acked = self._removed_latest
        for consumer in self.consumers:
            flow, sent, acked = map(max, (flow, sent, acked), _latest(consumer))
        return {
            "msgRateOut": sum((r[0] for r in rates), 0.0),
            "msgThroughputOut": sum((r[1] for r in rates), 0.0),
            "bytesOutCounter": self.bytes_out_counter,
            "msgOutCounter": self.msg_out_counter,
            "msgRateRedeliver": sum((r[2] for r in rates), 0.0),
            "messageAckRate": sum((r[3] for r in rates), 0.0),
            "lastConsumedFlowTimestamp": flow,
            "lastConsumedTimestamp": sent,
            "lastAckedTimestamp": acked,
        }


def _latest(consumer) -> tuple[int, int, int]:
    return consumer.last_flow_ms, consumer.last_sent_ms, consumer.last_acked_ms
