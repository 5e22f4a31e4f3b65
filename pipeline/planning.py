"""Planning on the driver: where each partition starts and ends, and how the ranges are cut into
Spark input partitions.

* ``resolve_positions`` turns ``startingOffsets`` / ``endingOffsets`` / ``startingTime`` into one
  ``Position`` per topic partition.
* ``plan_ranges`` makes one ``TopicRange`` per topic partition with messages in ``(start, end]``,
  cut at ledger boundaries (a ledger holds at most ``managedLedgerMaxEntriesPerLedger`` entries;
  ledger ids grow by one per roll-over and entry ids restart at 0). With the ``admin.url``
  option, the broker's admin API tells every ledger's entry count, and the ranges are cut again
  into pieces of equal entry counts, across ledgers (pipeline.balanced_ranges). Without it, until
  there are ``min_partitions`` ranges, it halves the largest range that lies inside one ledger
  (there its entry count is known: ``end.entryId - start.entryId``). A range starting at
  ``earliest`` is first pinned to the partition's first message, so it can be cut too.
* ``advance`` is the admission control of ``maxEntriesPerTrigger``: a position at most ``n``
  entries after a start.

Entries, not messages, are counted: a batch entry counts once (as Apache Pulsar's connector
counts ``maxEntriesPerTrigger``).
"""
from __future__ import annotations

import asyncio
import logging

import aiohttp

from minipulsar.client import Client

from minipulsar.pipeline import broker_queries as q
from minipulsar.pipeline.balanced_ranges import balance
from minipulsar.pipeline.ledger_stats import ledger_entries
from minipulsar.pipeline.offsets import EARLIEST, Position, exclusive_start_before, may_hold_messages
from minipulsar.pipeline.range_reader import TopicRange

log = logging.getLogger(__name__)

MAX_LEDGER_SEGMENTS = 64  # per topic partition; more ledgers are grouped into this many ranges


def _topic_of(partition: str) -> str:
    from minipulsar.client.topic_name import PARTITION_SUFFIX

    base, sep, index = partition.rpartition(PARTITION_SUFFIX)
    return base if sep and index.isdigit() else partition


async def resolve_positions(c: Client, partitions: list[str], spec, default: str,
                            publish_time_ms: int | None = None, timeout_ms: int = 5000) -> dict[str, Position]:
    """{partition: Position} for an offsets option value.

    spec: None (use default), 'earliest', 'latest', or {topic or partition: Position | 'earliest'
    | 'latest'} — a base topic name applies to all of its partitions, partitions not named use
    default. publish_time_ms (startingTime), when given, wins over spec.
    """
    if publish_time_ms is not None:
        return await q.positions_at_time(c, partitions, publish_time_ms, timeout_ms)
    wanted: dict[str, Position | str] = {}
    for partition in partitions:
        if isinstance(spec, dict):
            wanted[partition] = spec.get(partition, spec.get(_topic_of(partition), default))
        else:
            wanted[partition] = spec or default
    need_last = [p for p, w in wanted.items() if w == "latest"]
    lasts = await q.last_positions(c, need_last) if need_last else {}
    return {p: lasts[p] if w == "latest" else EARLIEST if w == "earliest" else w for p, w in wanted.items()}


def _ledger_segments(start: Position, end: Position) -> list[tuple[Position, Position]]:
    """(start, end] cut at each ledger boundary (L, -1); grouped when there are too many ledgers."""
    if start.ledger_id >= end.ledger_id:
        return [(start, end)]
    ledgers = list(range(start.ledger_id + 1, end.ledger_id + 1))
    step = max(1, -(-len(ledgers) // MAX_LEDGER_SEGMENTS))
    bounds = [start] + [Position(lid, -1, -1) for lid in ledgers[::step]] + [end]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if may_hold_messages(a, b)]


def _entries_inside_ledger(start: Position, end: Position) -> int:
    """Entries of (start, end] when both lie in one ledger, else 0 (unknown)."""
    if start.ledger_id != end.ledger_id or start.ledger_id < 0:
        return 0
    return end.entry_id - start.entry_id


async def _pinned(c: Client, partition: str, start: Position, end: Position,
                  timeout_ms: int) -> tuple[str, Position, Position] | None:
    """(partition, start, end) with an earliest start moved to just before the first message;
    None when the range holds no message."""
    if not may_hold_messages(start, end):
        return None
    if start.is_earliest:
        first = await q.first_message_after(c, partition, EARLIEST, timeout_ms)
        if first is None:
            return None
        start = exclusive_start_before(first)
        if not may_hold_messages(start, end):
            return None
    return partition, start, end


def _halve_until(ranges: list[tuple[str, Position, Position]], min_partitions: int) -> None:
    """Halve the largest range inside one ledger until there are min_partitions ranges."""
    while len(ranges) < min_partitions:
        sizes = [_entries_inside_ledger(a, b) for _, a, b in ranges]
        if not sizes or max(sizes) < 2:
            return
        i = sizes.index(max(sizes))
        partition, a, b = ranges[i]
        middle = Position(a.ledger_id, a.entry_id + sizes[i] // 2, -1)
        ranges[i:i + 1] = [(partition, a, middle), (partition, middle, b)]


async def _ledger_counts(admin_url: str, partitions: list[str]) -> dict[str, dict[int, int]] | None:
    try:
        return await ledger_entries(admin_url, partitions)
    except (aiohttp.ClientError, TimeoutError, ValueError, KeyError) as exc:
        log.warning("no ledger stats from %s (%s); planning without entry counts", admin_url, exc)
        return None


async def plan_ranges(c: Client, starts: dict[str, Position], ends: dict[str, Position],
                      min_partitions: int = 1, timeout_ms: int = 5000,
                      admin_url: str | None = None) -> list[TopicRange]:
    """The input partitions for (starts[p], ends[p]] over every partition p in ends (a partition
    missing from starts starts at earliest). Empty ranges are left out.

    Ranges are cut at ledger boundaries. With admin_url, the entry count of every ledger is asked
    (pipeline.ledger_stats) and the same number of ranges — or min_partitions, when more — is cut
    again into pieces of equal entry counts (pipeline.balanced_ranges); without it, the largest
    range inside one ledger is halved until there are min_partitions ranges.
    """
    found = await asyncio.gather(*(_pinned(c, p, starts.get(p, EARLIEST), e, timeout_ms) for p, e in ends.items()))
    pinned = [item for item in found if item is not None]
    ranges = [(p, a, b) for p, start, end in pinned for a, b in _ledger_segments(start, end)]
    counts = await _ledger_counts(admin_url, [p for p, _, _ in pinned]) if admin_url and pinned else None
    if counts is not None:
        ranges = balance(pinned, counts, max(min_partitions, len(ranges)))
    else:
        _halve_until(ranges, min_partitions)
    log.debug("planned %d ranges over %d partitions", len(ranges), len(ends))
    return [TopicRange(p, a, b) for p, a, b in ranges]


async def advance(c: Client, partition: str, start: Position, last: Position, entries: int,
                  timeout_ms: int = 5000) -> Position:
    """A position at most `entries` entries after start and not after last (maxEntriesPerTrigger).

    Inside one ledger this is arithmetic on entry ids. Otherwise the first message after start is
    looked up (ledgers may be missing or shorter than their id suggests) and counting starts at its
    entry; a range that then runs past the end of that ledger simply stops at the ledger's end.
    """
    if not may_hold_messages(start, last):
        return start
    if start.is_earliest or start.ledger_id != last.ledger_id:
        first = await q.first_message_after(c, partition, start, timeout_ms)
        if first is None:
            return start
        base = Position(first.ledger_id(), first.entry_id() - 1, -1)
    else:
        base = start
    if start.batch_index >= 0 and base.entry == start.entry:
        base = Position(base.ledger_id, base.entry_id - 1, -1)  # the rest of start's batch counts as one
    end = Position(base.ledger_id, base.entry_id + entries, -1)
    if end.entry >= last.entry:
        return last
    return end
