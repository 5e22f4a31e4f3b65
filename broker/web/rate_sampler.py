"""Rates from counters: a counter's growth per second between two readings at least
RATE_MIN_INTERVAL_SECONDS apart. /metrics keeps one sampler per topic for its scrapes and
/admin/v2/broker-stats/topics one of its own, so neither moves the other's windows."""
from __future__ import annotations

RATE_MIN_INTERVAL_SECONDS = 1.0  # a rate is recomputed once its previous reading is at least this old


class RateSampler:
    """The last reading and rate of each counter, by key (a tuple naming the counter)."""

    def __init__(self):
        self._rates: dict[tuple, tuple[float, int, float]] = {}  # key -> (when, value, rate)
        self._touched: set[tuple] = set()

    def rate(self, key: tuple, value: int, now: float) -> float:
        """Per second growth of the counter `key` (value: its current reading; now: time.monotonic())."""
        self._touched.add(key)
        last = self._rates.get(key)
        if last is None:
            self._rates[key] = (now, value, 0.0)
            return 0.0
        then, before, rate = last
        if now - then >= RATE_MIN_INTERVAL_SECONDS:
            grown = value - before if value >= before else value  # a counter that restarted counts from 0
            rate = grown / (now - then)
            self._rates[key] = (now, value, rate)
        return rate

    def forget_untouched(self) -> None:
        """Drop the counters not read since the last call (subscriptions, producers that are gone)."""
        for key in self._rates.keys() - self._touched:
            del self._rates[key]
        self._touched.clear()
