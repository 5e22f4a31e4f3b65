"""The write-latency histogram of a managed ledger: time from ``append()`` to durability.

Buckets and their bounds are Pulsar's (``ManagedLedgerMBeanImpl.ENTRY_LATENCY_BUCKETS_USEC``,
the ``addEntryLatency`` stats); counts start when the ledger opens and are never reset here
(the broker's metrics take windows of them).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

# Upper bounds (inclusive, microseconds) of the write latency buckets; one more bucket takes the
# rest. Pulsar's ManagedLedgerMBeanImpl.ENTRY_LATENCY_BUCKETS_USEC.
WRITE_LATENCY_BUCKETS_USEC = (500, 1_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 1_000_000)


@dataclass(frozen=True, slots=True)
class WriteLatency:
    """Entries made durable since the ledger opened, by the time from append() to durability:
    counts[i] has those over bounds_usec[i - 1] and at most bounds_usec[i] microseconds (not
    cumulative; the last count is beyond the last bound); sum_usec adds up every entry's latency."""

    bounds_usec: tuple[int, ...]
    counts: tuple[int, ...]
    sum_usec: int

    @property
    def count(self) -> int:
        return sum(self.counts)


class WriteLatencyRecorder:
    """Plain counters, bumped once per durable group-commit chunk (not per entry)."""

    __slots__ = ("_counts", "_sum_usec")

    def __init__(self) -> None:
        self._counts = [0] * (len(WRITE_LATENCY_BUCKETS_USEC) + 1)
        self._sum_usec = 0

    def record(self, started_ns: int, submitted_ns: int, durable_ns: int, entries: int) -> None:
        """A group's ``entries`` were appended between ``started_ns`` (its first append) and
        ``submitted_ns`` (its hand-over to the journal) and became durable at ``durable_ns``
        (``time.monotonic_ns`` values): each counts once, at the latency of the middle of that
        span (its bucket is exact unless the span straddles a bound)."""
        usec = (durable_ns - (started_ns + submitted_ns) // 2) // 1000
        self._counts[bisect.bisect_left(WRITE_LATENCY_BUCKETS_USEC, usec)] += entries
        self._sum_usec += usec * entries

    def snapshot(self) -> WriteLatency:
        """The counts so far, as an immutable WriteLatency."""
        return WriteLatency(WRITE_LATENCY_BUCKETS_USEC, tuple(self._counts), self._sum_usec)
