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


# A managed ledger's counts, a plain list its group commit bumps in place (no object of their
# own: at 1,000 topics a report touches a ledger per entry, and each object more is a cache miss):
# one count of entries per bucket (the last beyond the last bound), then at SUM_USEC the sum of
# every entry's latency in microseconds.
SUM_USEC = len(WRITE_LATENCY_BUCKETS_USEC) + 1


def new_counts() -> list[int]:
    """Zeroed counts (the shape above)."""
    return [0] * (SUM_USEC + 1)


def record(counts: list[int], started_ns: int, submitted_ns: int, durable_ns: int, entries: int) -> None:
    """A share's ``entries`` were appended between ``started_ns`` (its first append) and
    ``submitted_ns`` (its hand-over to the journal) and became durable at ``durable_ns``
    (``time.monotonic_ns`` values): each counts once, at the latency of the middle of that span
    (its bucket is exact unless the span straddles a bound)."""
    usec = (durable_ns - (started_ns + submitted_ns) // 2) // 1000
    counts[bisect.bisect_left(WRITE_LATENCY_BUCKETS_USEC, usec)] += entries
    counts[SUM_USEC] += usec * entries


def snapshot(counts: list[int]) -> WriteLatency:
    """The counts so far, as an immutable WriteLatency."""
    return WriteLatency(WRITE_LATENCY_BUCKETS_USEC, tuple(counts[:SUM_USEC]), counts[SUM_USEC])
