"""The dispatchers' bookkeeping structures against plain models, under random operation sequences:
the redelivery set (dict + lazy heap + per-hash lists), held entries, and the cursor's
"nothing acknowledged from here on" check that lets a read skip per-entry lookups."""
from __future__ import annotations

import random

import pytest

from minipulsar.broker.dispatchers.held_entries import PARSED_OVERHEAD_BYTES, HeldBudget, HeldEntries
from minipulsar.broker.dispatchers.redelivery import RedeliverySet
from minipulsar.broker.entry_info import entry_info
from minipulsar.storage import Entry, Position
from minipulsar.storage.cursor import ManagedCursor
from minipulsar.storage.range_set import PositionRangeSet
from tests.unit.broker.dispatch_harness import entry_bytes


def random_position(rng: random.Random) -> Position:
    return Position(rng.choice((3, 4)), rng.randrange(40))


@pytest.mark.parametrize("seed", range(20))
def test_redelivery_set_matches_a_sorted_model(seed):
    rng = random.Random(seed)
    redelivery, model = RedeliverySet(), {}
    for _ in range(3000):
        op = rng.random()
        if op < 0.45:
            position, key_hash = random_position(rng), rng.randrange(5)
            redelivery.add(position, key_hash)
            model.setdefault(position, key_hash)
        elif op < 0.8:
            position = random_position(rng)
            assert redelivery.discard(position) == model.pop(position, None)  # the hash it waited under
        elif op < 0.9:
            n = rng.randrange(1, 6)
            expected = sorted(model)[:n]
            assert redelivery.pop_first(n) == expected
            for position in expected:
                del model[position]
        else:
            key_hash, position = rng.randrange(5), random_position(rng)
            below = any(p < position for p, h in model.items() if h == key_hash)
            assert redelivery.has_hash_below(key_hash, position) == below
        assert len(redelivery) == len(model)
        assert list(redelivery) == sorted(model.items())
        by_hash = {h: sorted(p for p, ph in model.items() if ph == h) for h in set(model.values())}
        assert dict(redelivery.hashes()) == by_hash


def test_redelivery_heap_is_rebuilt_when_removed_positions_pile_up():
    redelivery = RedeliverySet()
    for entry_id in range(5000):  # Key_Shared adds and discards without ever popping
        redelivery.add(Position(1, entry_id), entry_id % 7)
        redelivery.discard(Position(1, entry_id))
    assert len(redelivery._heap) <= 1024 + 1
    redelivery.add(Position(1, 9), 2)
    assert redelivery.pop_first(3) == [Position(1, 9)]


def test_held_entries_share_one_byte_budget_and_give_back_the_parsed_info():
    data = entry_bytes("k")
    size = len(data) + PARSED_OVERHEAD_BYTES
    budget = HeldBudget(lambda: 3 * size)
    held, other = HeldEntries(budget), HeldEntries(budget)
    other.keep(Entry(Position(9, 0), data), entry_info(data))
    entries = [Entry(Position(1, i), data) for i in range(3)]
    for entry in entries:
        held.keep(entry, entry_info(entry.data))
    assert len(held) == 2  # the third would pass the shared bound: it will be read again instead
    assert budget.used == 3 * size
    assert held.entry(Position(1, 0)) is entries[0]
    assert held.take_info(Position(1, 0)) == entry_info(data)
    assert held.entry(Position(1, 0)) is None
    held.keep(entries[2], entry_info(data))  # room again
    held.discard(Position(1, 1))
    assert [held.entry(Position(1, i)) for i in range(3)] == [None, None, entries[2]]
    held.clear()
    other.clear()
    assert budget.used == 0


@pytest.mark.parametrize("seed", range(10))
def test_cursor_none_deleted_from_matches_is_deleted(seed):
    rng = random.Random(seed)
    for _ in range(300):
        cursor = object.__new__(ManagedCursor)  # only the acknowledgement state is used
        cursor._md, cursor._ranges = Position(3, rng.randrange(-1, 10)), PositionRangeSet()
        for _ in range(rng.randrange(7)):
            position = random_position(rng)
            if position > cursor._md:
                cursor._ranges.add(position)
        start = random_position(rng)
        later = [Position(ledger, entry) for ledger in (3, 4) for entry in range(41)]
        expected = not any(cursor.is_deleted(p) for p in later if p >= start)
        assert cursor._none_deleted_from(start) == expected
