"""Pulsar's stats rates: per-second rates of plain counters over the last stats interval.

The publish and dispatch paths only add to integer counters (a producer's msg_in / bytes_in, a
consumer's msg_out / bytes_out, ...). Every statsUpdateFrequencyInSecs (Pulsar's default 60) the
broker's stats timer calls update_rates(), and each RateMeter turns the growth of its counters
since the previous tick into msg/s and bytes/s, as Pulsar's Rate.calculateRate does in
BrokerService.updateRates: a rate is the last complete interval's, 0 after an idle interval, and
the first one covers the time since the meter was made. Topic and subscription rates are the sums
of their producers', consumers' and replicators' rates, as in Pulsar's PersistentTopic.getStats.
"""
from __future__ import annotations

import time
from typing import Iterable


class RateMeter:
    """Rates of `width` counters; rates: per second, in the order update() receives them."""

    __slots__ = ("_stamp", "_last", "rates")

    def __init__(self, width: int):
        self._stamp = time.monotonic()
        self._last = (0,) * width
        self.rates = (0.0,) * width

    def update(self, now: float, values: tuple[int, ...]) -> None:
        """The counters read now (time.monotonic()); a counter that went down counts from 0."""
        elapsed = now - self._stamp
        if elapsed <= 0:
            return
        self.rates = tuple((value - last if value >= last else value) / elapsed
                           for value, last in zip(values, self._last))
        self._last = values
        self._stamp = now


def update_rates(topics: Iterable) -> None:
    """One stats tick over loaded topics (persistent and non-persistent): every producer, consumer,
    subscription (its expired messages) and replicator reads its counters into its meter."""
    now = time.monotonic()
    for topic in list(topics):
        for producer in list(topic.producers.values()):
            producer.rates.update(now, (producer.msg_in, producer.bytes_in))
        for subscription in list(topic.subscriptions.values()):
            subscription.update_rates(now)
        replication = getattr(topic, "replication", None)
        if replication is not None:
            for replicator in list(replication.replicators.values()):
                replicator.rates.update(now, (replicator.msg_out, replicator.bytes_out))
