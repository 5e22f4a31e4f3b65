"""Positions and the (lower, upper] range set (Pulsar individualDeletedMessages)."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from minipulsar.storage import EARLIEST, Position, PositionRangeSet


def P(text):
    return Position.parse(text)


def test_position_total_order_and_str():
    ps = [Position(2, 0), Position(1, 10), Position(1, 2), EARLIEST, Position(1, -1)]
    assert sorted(ps) == [EARLIEST, Position(1, -1), Position(1, 2), Position(1, 10), Position(2, 0)]
    assert str(Position(3, 7)) == "3:7"
    assert Position.parse("3:7") == Position(3, 7)
    assert Position(1, 99999) < Position(2, 0)


def test_single_entry_range_is_open_closed():
    rs = PositionRangeSet()
    rs.add(P("3:5"))
    assert rs.ranges() == [(P("3:4"), P("3:5"))]
    assert P("3:5") in rs and P("3:4") not in rs and P("3:6") not in rs
    rs.add(P("3:0"))
    assert rs.ranges()[0] == (P("3:-1"), P("3:0"))


def test_pip282_individually_sent_positions_worked_example():
    """PIP-282: last sent 3:0; send 3:1-3:3, 3:5, 3:8-3:10, then 3:7, 3:6, 3:4."""
    last_sent = P("3:0")
    sent = PositionRangeSet()

    def send(*positions):
        nonlocal last_sent
        for p in positions:
            sent.add(p)
        # the contiguous prefix above last_sent folds into it (like mark-delete)
        first = sent.ranges()[0] if sent else None
        if first and first[0] <= last_sent:
            last_sent = first[1]
            sent.remove_at_most(last_sent)

    send(*(P(f"3:{i}") for i in (1, 2, 3, 5, 8, 9, 10)))
    assert last_sent == P("3:3")
    assert sent.ranges() == [(P("3:4"), P("3:5")), (P("3:7"), P("3:10"))]
    send(P("3:7"))
    assert last_sent == P("3:3")
    assert sent.ranges() == [(P("3:4"), P("3:5")), (P("3:6"), P("3:10"))]
    send(P("3:6"))
    assert last_sent == P("3:3")
    assert sent.ranges() == [(P("3:4"), P("3:10"))]
    send(P("3:4"))
    assert last_sent == P("3:10")
    assert sent.ranges() == []


def test_ranges_do_not_merge_across_ledgers():
    rs = PositionRangeSet()
    rs.add(P("1:9"))
    rs.add(P("2:0"))
    assert len(rs) == 2
    assert rs.entry_count == 2


def test_remove_at_most_cuts_straddling_range():
    rs = PositionRangeSet([(P("1:2"), P("1:8")), (P("1:10"), P("1:12"))])
    assert rs.entry_count == 8
    rs.remove_at_most(P("1:5"))
    assert rs.ranges() == [(P("1:5"), P("1:8")), (P("1:10"), P("1:12"))]
    assert rs.entry_count == 5
    rs.remove_at_most(P("2:0"))
    assert rs.ranges() == [] and rs.entry_count == 0


def test_ranges_limit_returns_lowest_first():
    rs = PositionRangeSet()
    for i in range(0, 100, 2):
        rs.add(P(f"5:{i}"))
    assert len(rs) == 50
    assert rs.ranges(limit=3) == [(P("5:-1"), P("5:0")), (P("5:1"), P("5:2")), (P("5:3"), P("5:4"))]


@given(st.sets(st.integers(min_value=0, max_value=60), max_size=40))
def test_range_set_matches_a_plain_set(entries):
    rs = PositionRangeSet()
    for e in entries:
        rs.add(Position(7, e))
    assert {e for e in range(-1, 62) if Position(7, e) in rs} == entries
    assert rs.entry_count == len(entries)
    ranges = rs.ranges()
    # disjoint, sorted, non-touching (merged)
    for (lo1, up1), (lo2, up2) in zip(ranges, ranges[1:]):
        assert up1 < lo2


@pytest.fixture(params=[PositionRangeSet.LIST_LIMIT, 2], ids=["list", "sorted-list"])
def list_limit(request, monkeypatch):
    """Run with the default limit and with 2, so the SortedList form is exercised too."""
    monkeypatch.setattr(PositionRangeSet, "LIST_LIMIT", request.param)


@given(st.lists(st.tuples(st.sampled_from(["add", "range", "cut"]), st.integers(0, 2), st.integers(-1, 40),
                          st.integers(1, 6)), max_size=60))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the limit holds for every example
def test_range_set_operations_match_a_plain_set(list_limit, operations):
    """Adds, range adds and remove_at_most over three ledgers, checked against a set of positions
    after every step: membership, entry count, range queries, and disjoint non-touching ranges."""
    rs, model = PositionRangeSet(), set()
    for op, ledger, entry, width in operations:
        if op == "add" and entry >= 0:
            rs.add(Position(ledger, entry))
            model.add(Position(ledger, entry))
        elif op == "range":
            rs.add_range(Position(ledger, entry), Position(ledger, entry + width))
            model.update(Position(ledger, e) for e in range(entry + 1, entry + width + 1))
        elif op == "cut":
            rs.remove_at_most(Position(ledger, entry))
            model = {p for p in model if p > Position(ledger, entry)}
        universe = [Position(lid, e) for lid in range(3) for e in range(-1, 48)]
        assert {p for p in universe if p in rs} == model
        assert rs.entry_count == len(model)
        for p in universe:
            found = rs.range_containing(p)
            assert (found is not None) == (p in model)
            above = rs.first_range_above(p)
            higher = [q for q in model if q > p]
            assert (above is None) == (not higher)
            if above is not None:
                assert above[0] < min(higher) <= above[1]
        ranges = rs.ranges()
        for (lo1, up1), (lo2, up2) in zip(ranges, ranges[1:]):
            assert up1 < lo2 or (up1.ledger_id != lo2.ledger_id)
