"""Cutting ranges into pieces of about equal entry counts, given each ledger's entry count.

With the entry count of every ledger (pipeline.ledger_stats), the entries of a range ``(start,
end]`` are known exactly even when it spans many ledgers, so a planner can hand every Spark task
about the same share: ``balance`` gives each partition a number of pieces in proportion to its
entries (at least one) and cuts its entries evenly, at whole-entry positions, across ledger
boundaries where it falls so. Ledgers that hold no entry (or are gone) are simply stepped over.
"""
from __future__ import annotations

from itertools import accumulate, pairwise

from minipulsar.pipeline.offsets import Position

Span = tuple[int, int, int]  # (ledger id, first entry, last entry), both entries inclusive


def entry_spans(start: Position, end: Position, ledgers: dict[int, int]) -> list[Span]:
    """The entries of (start, end], ledger by ledger. The entry holding start is included when start
    names a message inside it (batch index >= 0). end's ledger is counted up to end even when the
    stats lag behind it."""
    spans = []
    for ledger_id in sorted(set(ledgers) | {end.ledger_id}):
        if ledger_id < start.ledger_id or ledger_id > end.ledger_id:
            continue
        first = 0
        if ledger_id == start.ledger_id:
            first = start.entry_id if start.batch_index >= 0 else start.entry_id + 1
        last = end.entry_id if ledger_id == end.ledger_id else ledgers[ledger_id] - 1
        if first <= last:
            spans.append((ledger_id, first, last))
    return spans


def cut(start: Position, end: Position, spans: list[Span], pieces: int) -> list[tuple[Position, Position]]:
    """(start, end] as `pieces` ranges of about equal entry counts (fewer when there are fewer
    entries), cut after whole entries."""
    total = sum(last - first + 1 for _, first, last in spans)
    pieces = max(1, min(pieces, total))
    ends_before = list(accumulate(last - first + 1 for _, first, last in spans))
    bounds, span = [start], 0
    for k in range(1, pieces):
        target = total * k // pieces  # the cut goes after the target-th entry of the range
        while ends_before[span] < target:
            span += 1
        ledger_id, _, last = spans[span]
        entry = last - (ends_before[span] - target)
        bounds.append(Position(ledger_id, entry, -1))
    bounds.append(end)
    return [(a, b) for a, b in pairwise(bounds) if a != b]


def balance(ranges: list[tuple[str, Position, Position]], ledgers: dict[str, dict[int, int]],
            pieces: int) -> list[tuple[str, Position, Position]]:
    """About `pieces` ranges over all of ranges (one per partition: (partition, start, end)),
    shared out in proportion to each partition's entries."""
    spans = {p: entry_spans(a, b, ledgers.get(p, {})) for p, a, b in ranges}
    sizes = {p: sum(last - first + 1 for _, first, last in s) for p, s in spans.items()}
    total = sum(sizes.values()) or 1
    out = []
    for p, a, b in ranges:
        if not spans[p]:  # nothing known about it: leave it whole
            out.append((p, a, b))
            continue
        share = max(1, round(pieces * sizes[p] / total))
        out.extend((p, x, y) for x, y in cut(a, b, spans[p], share))
    return out
