"""Counting for `minipulsar perf`: messages, bytes, failures and latencies, per report interval
and for the whole run, and the report lines in pulsar-perf's words and units.

Rates are msg/s and Mbit/s (bytes * 8 / 2^20, as pulsar-perf computes them). Produce latencies are
publish latencies recorded in microseconds and printed in ms with 3 decimals; consume latencies
are end-to-end (receive time - publish time) recorded and printed in whole ms.
"""
from __future__ import annotations

import time
from collections import Counter

_SIGNIFICANT_DIGITS = 3  # HdrHistogram's precision in pulsar-perf
_EXACT_BELOW = 10 ** _SIGNIFICANT_DIGITS


class LatencyHistogram:
    """Non-negative integer samples kept to 3 significant digits, so memory stays bounded however
    long the run. count, mean and max are exact; percentiles are within 0.1 %."""

    def __init__(self) -> None:
        self._buckets: Counter[int] = Counter()
        self.count = 0
        self._sum = 0
        self.max = 0

    def record(self, value: int) -> None:
        value = max(0, int(value))
        self._buckets[_bucket(value)] += 1
        self.count += 1
        self._sum += value
        self.max = max(self.max, value)

    def mean(self) -> float:
        return self._sum / self.count if self.count else 0.0

    def percentile(self, pct: float) -> int:
        """The smallest bucket value with at least pct % (0-100) of the samples at or below it; 0 if empty."""
        if not self.count:
            return 0
        wanted = max(1, -(-self.count * pct // 100))
        seen = 0
        for value in sorted(self._buckets):
            seen += self._buckets[value]
            if seen >= wanted:
                return min(value, self.max)
        return self.max


def _bucket(value: int) -> int:
    if value < _EXACT_BELOW:
        return value
    scale = 10 ** (len(str(value)) - _SIGNIFICANT_DIGITS)
    return value // scale * scale


class Window:
    """What happened between two instants: counts, bytes and the latency histogram."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.messages = 0
        self.bytes = 0
        self.failures = 0
        self.latency = LatencyHistogram()

    def elapsed(self, now: float | None = None) -> float:
        return max(1e-9, (now or time.monotonic()) - self.started)


class Recorder:
    """The perf run's counters: `interval` (restarted by take_interval at each report) and `total`
    (since start()). Called from the event loop only."""

    def __init__(self) -> None:
        self.interval = Window()
        self.total = Window()
        self.started = False

    def start(self) -> None:
        """Begin measuring (after producers/consumers are created)."""
        self.interval, self.total, self.started = Window(), Window(), True

    def record(self, size: int, latency: int | None = None) -> None:
        """One message of `size` bytes done; latency (µs for produce, ms for consume) if measured."""
        for window in (self.interval, self.total):
            window.messages += 1
            window.bytes += size
            if latency is not None:
                window.latency.record(latency)

    def record_failure(self) -> None:
        self.interval.failures += 1
        self.total.failures += 1

    def take_interval(self) -> Window:
        """The interval since the last call (or start), and start a new one."""
        window, self.interval = self.interval, Window()
        return window


def _rates(window: Window, now: float | None = None) -> tuple[float, float]:
    elapsed = window.elapsed(now)
    return window.messages / elapsed, window.bytes * 8 / elapsed / 1024 / 1024


_PERCENTILES = (("med", 50), ("95pct", 95), ("99pct", 99), ("99.9pct", 99.9), ("99.99pct", 99.99))
_SUMMARY_PERCENTILES = _PERCENTILES + (("99.999pct", 99.999),)
_NO_SAMPLES = "no samples"  # rather than zeros that look measured (e.g. a run shorter than --warmup-time)


def _latency_ms(h: LatencyHistogram, percentiles=_PERCENTILES) -> str:
    """A µs histogram as pulsar-perf's producer prints it: ms with 3 decimals."""
    if not h.count:
        return _NO_SAMPLES
    parts = [f"mean: {h.mean() / 1000:7.3f} ms"] + [f"{name}: {h.percentile(p) / 1000:7.3f}" for name, p in percentiles]
    return " - ".join(parts + [f"Max: {h.max / 1000:7.3f}"])


def _latency_whole_ms(h: LatencyHistogram, percentiles=_PERCENTILES) -> str:
    """A ms histogram as pulsar-perf's consumer prints it: whole ms."""
    if not h.count:
        return _NO_SAMPLES
    parts = [f"mean: {h.mean():.3f} ms"] + [f"{name}: {h.percentile(p)}" for name, p in percentiles]
    return " - ".join(parts + [f"Max: {h.max}"])


def produce_interval_line(window: Window, total: Window) -> str:
    rate, mbit = _rates(window)
    failures = window.failures / window.elapsed()
    return (f"Throughput produced: {total.messages:7d} msg --- {rate:8.1f} msg/s --- {mbit:8.1f} Mbit/s"
            f" --- failure {failures:8.1f} msg/s --- Latency: {_latency_ms(window.latency)}")


def produce_summary_lines(total: Window) -> list[str]:
    rate, mbit = _rates(total)
    return [f"Aggregated throughput stats --- {total.messages} records sent --- {rate:.3f} msg/s"
            f" --- {mbit:.3f} Mbit/s --- failed {total.failures} msg",
            f"Aggregated latency stats --- Latency: {_latency_ms(total.latency, _SUMMARY_PERCENTILES)}"]


def consume_interval_line(window: Window, total: Window) -> str:
    rate, mbit = _rates(window)
    return (f"Throughput received: {total.messages:7d} msg --- {rate:.3f} msg/s --- {mbit:.3f} Mbit/s"
            f" --- Latency: {_latency_whole_ms(window.latency)}")


def consume_summary_lines(total: Window) -> list[str]:
    rate, mbit = _rates(total)
    return [f"Aggregated throughput stats --- {total.messages} records received --- {rate:.3f} msg/s"
            f" --- {mbit:.3f} Mbit/s",
            f"Aggregated latency stats --- Latency: {_latency_whole_ms(total.latency, _SUMMARY_PERCENTILES)}"]
