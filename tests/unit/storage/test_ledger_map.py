"""LedgerMap: position arithmetic over a ledger map built directly (no files, no event loop).

The map used by most tests, payload sizes in brackets:

    ledger 3   trimmed (absent)
    ledger 4   sealed   [10, 20, 30]
    ledger 5   sealed   []            (empty: e.g. rolled over on an open with no appends)
    ledger 6   sealed   [5, 7]
    ledger 7   current  [1, 2]
"""
import pytest

from minipulsar.storage import EARLIEST, LedgerInfo, Position
from minipulsar.storage.ledger_map import LedgerMap
from tests.unit.storage.segments import index

P = Position
SIZES = {4: [10, 20, 30], 5: [], 6: [5, 7], 7: [1, 2]}
ALL = [P(4, 0), P(4, 1), P(4, 2), P(6, 0), P(6, 1), P(7, 0), P(7, 1)]  # every retained entry, in order


def build(sizes: dict[int, list[int]], current: int) -> LedgerMap:
    return LedgerMap([index(lid, s, 0 if lid == current else 1000 + lid) for lid, s in sizes.items()], current)


@pytest.fixture
def m() -> LedgerMap:
    return build(SIZES, current=7)


@pytest.fixture
def empty_current() -> LedgerMap:
    """The same sealed ledgers; the current ledger 7 has no entry yet."""
    return build({**SIZES, 7: []}, current=7)


@pytest.fixture
def fresh() -> LedgerMap:
    """Everything trimmed: only the empty current ledger 7 is left."""
    return build({7: []}, current=7)


# -- the whole map -----------------------------------------------------------------
def test_summary_of_the_map(m, fresh):
    assert m.ledger_ids == [4, 5, 6, 7]
    assert m.first_position == P(4, 0)
    assert m.before_first() == P(4, -1)
    assert m.number_of_entries == 7
    assert m.total_size == 75
    assert m.spans() == [(4, 3), (6, 2), (7, 2)]  # the empty ledger has no span
    assert m.infos() == [LedgerInfo(4, 3, 60, 1004), LedgerInfo(5, 0, 0, 1005), LedgerInfo(6, 2, 12, 1006),
                         LedgerInfo(7, 2, 3, 0)]
    assert (fresh.first_position, fresh.before_first(), fresh.number_of_entries, fresh.total_size) == \
        (None, P(7, -1), 0, 0)
    assert fresh.spans() == []


def test_first_position_skips_leading_empty_ledgers():
    m = build({5: [], 6: [3], 7: []}, current=7)
    assert m.first_position == P(6, 0)
    assert m.before_first() == P(5, -1)  # "earliest" is before the first retained ledger, even an empty one


def test_changes():
    m = LedgerMap()
    assert m.ledger_ids == [] and m.current_id == 0
    m.add(index(2, [4]))
    new = m.start_ledger(3)
    assert m.current_id == 3 and new.entries == 0 and m.ledgers[3] is new
    assert m.remove(2).ledger_id == 2
    assert m.ledger_ids == [3]
    with pytest.raises(KeyError):
        m.remove(2)


def test_ledgers_stay_in_id_order_whatever_order_they_come_in():
    """Recovered ledgers may come in any order; the map (a plain dict kept in id order, with a
    sorted list of its ids) still walks them oldest first, and a replaced one keeps its place."""
    m = LedgerMap([index(6, [5, 7], 1006), index(4, [10, 20, 30], 1004)], current_id=7)
    m.start_ledger(7)
    m.add(index(5, [], 1005))  # below the highest: the order is rebuilt
    m.add(index(6, [5, 7, 9], 1006))  # the same id again: replaced where it stands
    assert m.ledger_ids == list(m.ledgers) == [4, 5, 6, 7]
    assert [info.ledger_id for info in m.infos()] == [4, 5, 6, 7] and m.ledgers[6].entries == 3
    assert m.before_first() == P(4, -1)
    assert m.previous_position(P(7, 0)) == P(6, 2)
    assert m.next_valid_position(P(4, 2)) == P(6, 0)  # the empty ledger 5 is stepped over
    assert m.count_entries_between(P(4, 0), P(6, 2)) == 5
    m.remove(5)
    assert m.ledger_ids == list(m.ledgers) == [4, 6, 7]
    assert m.first_at_or_after(P(5, 0)) == P(6, 0)
    m.add(index(3, [1], 1003))
    assert m.ledger_ids == list(m.ledgers) == [3, 4, 6, 7]
    assert m.position_leaving_backlog(10**9, P(7, -1)) == P(3, -1)


def test_position_in_spans(m):
    spans = m.spans()
    assert [LedgerMap.position_in(spans, i) for i in range(7)] == ALL
    with pytest.raises(IndexError):
        LedgerMap.position_in(spans, 7)
    with pytest.raises(IndexError):
        LedgerMap.position_in([], 0)


def test_nth_position_from_both_ends(m, fresh):
    assert [m.nth_position(n) for n in range(1, 8)] == ALL
    assert [m.nth_position(n, from_end=True) for n in range(1, 8)] == ALL[::-1]
    assert m.nth_position(8) is None and m.nth_position(8, from_end=True) is None
    assert fresh.nth_position(1) is None and fresh.nth_position(1, from_end=True) is None


# -- stepping --------------------------------------------------------------------
@pytest.mark.parametrize("pos, expected", [
    (P(4, 0), P(4, 1)),
    (P(4, 2), P(6, 0)),      # last entry of a sealed ledger: over the empty ledger 5
    (P(4, -1), P(4, 0)),     # (L, -1) forms
    (P(5, -1), P(6, 0)),
    (P(6, -1), P(6, 0)),
    (P(7, -1), P(7, 0)),
    (P(6, 1), P(7, 0)),      # into the current ledger
    (P(7, 1), P(7, 2)),      # after the last entry: the position the next append gets
    (P(9, 4), P(9, 5)),      # beyond the current ledger: plain successor
    (P(3, 8), P(4, 0)),      # in a trimmed ledger: the first retained entry
    (EARLIEST, P(4, 0)),     # before everything
])
def test_next_valid_position(m, pos, expected):
    assert m.next_valid_position(pos) == expected


def test_next_valid_position_into_an_empty_current_ledger(empty_current, fresh):
    assert empty_current.next_valid_position(P(6, 1)) == P(7, 0)
    assert empty_current.next_valid_position(P(5, -1)) == P(6, 0)
    assert fresh.next_valid_position(EARLIEST) == P(7, 0)
    assert fresh.next_valid_position(P(6, 9)) == P(7, 0)  # the last entry of a trimmed ledger


def test_next_valid_position_walks_every_entry(m):
    walked, pos = [], P(4, -1)
    for _ in ALL:
        pos = m.next_valid_position(pos)
        walked.append(pos)
    assert walked == ALL


@pytest.mark.parametrize("pos, expected", [
    (P(4, 2), P(4, 1)),
    (P(6, 0), P(4, 2)),      # back over the empty ledger 5
    (P(7, 0), P(6, 1)),
    (P(4, 0), P(4, -1)),     # nothing retained before the first entry (ledger 3 is trimmed)
    (P(6, -1), P(4, 2)),     # (L, -1): the last entry before ledger L
    (P(7, 2), P(7, 1)),      # the next entry's position steps back to the last entry
    (P(3, 0), P(3, -1)),     # in a trimmed ledger
    (P(9, 0), P(7, 1)),      # beyond the current ledger
])
def test_previous_position(m, pos, expected):
    assert m.previous_position(pos) == expected


def test_previous_position_in_an_empty_map(fresh):
    assert fresh.previous_position(P(7, 0)) == P(7, -1)


@pytest.mark.parametrize("pos, n, expected", [
    (P(4, -1), 1, P(4, 0)),
    (P(4, -1), 3, P(4, 2)),   # up to a ledger's last entry
    (P(4, -1), 4, P(6, 0)),   # across the empty ledger
    (P(4, 1), 3, P(6, 1)),
    (P(4, -1), 7, P(7, 1)),
    (P(4, -1), 100, P(7, 1)),  # stops at the last entry
    (P(7, 1), 1, P(7, 1)),
    (P(6, 0), 0, P(6, 0)),
    (P(3, 5), 2, P(4, 1)),    # from a trimmed ledger
    (EARLIEST, 1, P(4, 0)),
])
def test_advance(m, pos, n, expected):
    assert m.advance(pos, n) == expected


def test_advance_stops_before_an_empty_current_ledger(empty_current, fresh):
    assert empty_current.advance(P(6, 0), 5) == P(6, 1)
    assert fresh.advance(P(7, -1), 1) == P(7, -1)


@pytest.mark.parametrize("pos, expected", [
    (P(4, -1), P(4, 0)),
    (P(4, 1), P(4, 1)),
    (P(4, 3), P(6, 0)),       # past the end of ledger 4, over the empty ledger 5
    (P(5, -1), P(6, 0)),
    (P(3, 7), P(4, 0)),       # trimmed ledger
    (EARLIEST, P(4, 0)),
    (P(7, 1), P(7, 1)),
    (P(7, 2), None),          # after the last entry
    (P(8, 0), None),
])
def test_first_at_or_after(m, pos, expected):
    assert m.first_at_or_after(pos) == expected


def test_first_at_or_after_with_no_entry_retained(fresh, empty_current):
    assert fresh.first_at_or_after(EARLIEST) is None
    assert empty_current.first_at_or_after(P(6, 2)) is None


# -- counting --------------------------------------------------------------------
@pytest.mark.parametrize("start, end, expected", [
    (P(4, -1), P(7, 1), 7),
    (EARLIEST, P(7, 1), 7),
    (P(4, 0), P(4, 2), 2),
    (P(4, 2), P(6, 0), 1),    # across the empty ledger
    (P(4, -1), P(6, -1), 3),  # (L, -1) as the end: nothing of ledger L
    (P(5, -1), P(6, 1), 2),
    (P(3, 5), P(4, 1), 2),    # from a trimmed ledger
    (P(6, 1), P(9, 9), 2),    # an end beyond the last entry counts what exists
    (P(7, 1), P(9, 9), 0),
    (P(6, 0), P(6, 0), 0),    # empty and reversed intervals
    (P(6, 1), P(4, 0), 0),
])
def test_count_entries_between(m, start, end, expected):
    assert m.count_entries_between(start, end) == expected


@pytest.mark.parametrize("start, end, expected", [
    (P(4, -1), P(7, 1), 75),
    (EARLIEST, P(9, 0), 75),
    (P(4, 0), P(6, 0), 20 + 30 + 5),
    (P(5, -1), P(6, 1), 5 + 7),
    (P(4, 2), P(6, -1), 0),
    (P(3, 1), P(4, 0), 10),   # from a trimmed ledger
    (P(6, 1), P(6, 1), 0),
    (P(6, 1), P(4, 0), 0),
])
def test_size_between(m, start, end, expected):
    assert m.size_between(start, end) == expected


def test_size_between_matches_the_entry_count(m):
    for i, start in enumerate([P(4, -1)] + ALL):
        for end in ALL[i:]:
            picked = [p for p in ALL if start < p <= end]
            assert m.count_entries_between(start, end) == len(picked)
            assert m.size_between(start, end) == sum(SIZES[p.ledger_id][p.entry_id] for p in picked)


@pytest.mark.parametrize("max_bytes, expected", [
    (0, P(7, 1)),             # even the last entry is larger: the last confirmed position
    (2, P(7, 0)),             # keeps (7,1): 2 bytes
    (3, P(6, 1)),             # keeps (7,0), (7,1): 3 bytes
    (10, P(6, 0)),            # keeps 7 + 1 + 2
    (15, P(4, 2)),            # keeps 5 + 7 + 1 + 2, back over the empty ledger
    (74, P(4, 0)),
    (75, P(4, -1)),           # everything fits: before the first entry
    (10**9, P(4, -1)),
])
def test_position_leaving_backlog(m, max_bytes, expected):
    kept = [p for p in ALL if p > expected]
    assert m.position_leaving_backlog(max_bytes, last_confirmed=P(7, 1)) == expected
    assert sum(SIZES[p.ledger_id][p.entry_id] for p in kept) <= max_bytes or expected == P(7, 1)


def test_position_leaving_backlog_with_no_entry(fresh, empty_current):
    assert fresh.position_leaving_backlog(0, last_confirmed=P(7, -1)) == P(7, -1)
    assert empty_current.position_leaving_backlog(7, last_confirmed=P(6, 1)) == P(6, 0)
