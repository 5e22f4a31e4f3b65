"""The trimming policy (Pulsar internalTrimLedgers) on a ledger map built directly, and the
write-latency recorder: pure functions, no files, no event loop."""
import pytest

from minipulsar.storage import Position
from minipulsar.storage.ledger_map import LedgerMap
from minipulsar.storage.trimming import MIB, ledgers_to_trim
from minipulsar.storage.write_latency import WRITE_LATENCY_BUCKETS_USEC, new_counts, record, snapshot
from tests.unit.storage.segments import index

P = Position
NOW = 10 * 60_000 * 1000  # ms


@pytest.fixture
def m() -> LedgerMap:
    """Sealed ledgers 4 (3 entries, sealed 10 min ago), 5 (empty), 6 (2 entries, sealed just now),
    current 7 (1 entry): 1 MiB entries."""
    return LedgerMap([index(4, [MIB] * 3, NOW - 10 * 60_000), index(5, [], NOW - 5 * 60_000),
                      index(6, [MIB] * 2, NOW), index(7, [MIB])], current_id=7)


@pytest.mark.parametrize("slowest, expected", [
    (P(4, 1), []),            # ledger 4 is not wholly consumed
    (P(4, 2), [4, 5]),        # an empty ledger behind a consumed one goes too
    (P(6, 0), [4, 5]),
    (P(6, 1), [4, 5, 6]),
    (P(7, 0), [4, 5, 6]),     # never the current ledger
    (P(9, 9), [4, 5, 6]),
])
def test_without_retention_every_consumed_sealed_ledger_goes(m, slowest, expected):
    assert ledgers_to_trim(m, slowest, (0, 0), NOW) == expected


def test_retention_time_keeps_ledgers_sealed_more_recently(m):
    assert ledgers_to_trim(m, P(7, 0), (7, -1), NOW) == [4]        # 10 min old: expired; 5 min: kept
    assert ledgers_to_trim(m, P(7, 0), (5, -1), NOW) == [4, 5]     # exactly at the limit: expired
    assert ledgers_to_trim(m, P(7, 0), (-1, -1), NOW) == []        # unlimited


def test_retention_size_keeps_what_the_quota_holds(m):
    # 6 MiB retained; a ledger goes while the rest stays at/over the quota without it
    assert ledgers_to_trim(m, P(7, 0), (-1, 3), NOW) == [4, 5]     # 3 MiB left: at the quota
    assert ledgers_to_trim(m, P(7, 0), (-1, 4), NOW) == []         # 3 MiB left would be under 4
    assert ledgers_to_trim(m, P(7, 0), (-1, 0), NOW) == [4, 5, 6]


def test_the_walk_stops_at_the_first_ledger_that_stays():
    # ledger 4 is recent (kept by time), so the old ledger 5 behind it stays too
    m = LedgerMap([index(4, [1], NOW), index(5, [1], 0), index(6, [])], current_id=6)
    assert ledgers_to_trim(m, P(5, 0), (1, -1), NOW) == []


def test_only_the_current_ledger():
    assert ledgers_to_trim(LedgerMap([index(7, [])], current_id=7), P(7, -1), (0, 0), NOW) == []


def test_write_latency_buckets():
    counts = new_counts()
    record(counts, started_ns=0, submitted_ns=0, durable_ns=500_000, entries=2)  # 500 us: first bucket (inclusive)
    record(counts, started_ns=0, submitted_ns=2_000_000, durable_ns=2_001_000, entries=1)  # middle of the span: 1001 us
    record(counts, started_ns=0, submitted_ns=0, durable_ns=5_000_000_000, entries=3)  # beyond the last bound
    got = snapshot(counts)
    assert got.bounds_usec == WRITE_LATENCY_BUCKETS_USEC
    assert got.counts == (2, 0, 1, 0, 0, 0, 0, 0, 0, 3)
    assert got.count == 6 and got.sum_usec == 2 * 500 + 1001 + 3 * 5_000_000
