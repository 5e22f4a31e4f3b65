"""UnwrittenEntries: durable entries memory holds until the ledger storage has written them."""
from __future__ import annotations

import gc

from minipulsar.storage.unwritten import UnwrittenEntries


def held(first_ledger: list[bytes], second_ledger: list[bytes]) -> UnwrittenEntries:
    """Ledger 3 from entry 10 on, then ledger 4 (a roll-over) from entry 0, in two reports each."""
    unwritten = UnwrittenEntries()
    unwritten.add(3, 10, first_ledger[:2])
    unwritten.add(3, 12, first_ledger[2:])
    unwritten.add(4, 0, second_ledger[:1])
    unwritten.add(4, 1, second_ledger[1:])
    return unwritten


def test_reads_are_served_only_when_memory_holds_every_entry_asked_for():
    unwritten = held([b"a", b"bb", b"ccc"], [b"x", b"yy"])
    assert unwritten.read(3, 10, 12) == [b"a", b"bb", b"ccc"]
    assert unwritten.read(3, 11, 11) == [b"bb"]
    assert unwritten.read(4, 0, 1) == [b"x", b"yy"]
    assert unwritten.read(3, 9, 11) is None  # entry 9 is in its segment already
    assert unwritten.read(3, 12, 13) is None  # entry 13 is not durable
    assert unwritten.read(5, 0, 0) is None
    assert (unwritten.first(3), unwritten.first(4), unwritten.first(5)) == (10, 0, None)


def test_the_written_entries_go_oldest_ledger_first_within_the_limit_with_their_bytes():
    unwritten = held([b"a", b"bb", b"ccc"], [b"x", b"yy"])
    assert unwritten.release(3, 12, limit=10) == (2, 3)  # ledger 3's entries 10 and 11 written
    assert unwritten.first(3) == 12 and unwritten.read(3, 12, 12) == [b"ccc"]
    assert unwritten.release(4, 1, limit=1) == (1, 3)  # ledger 3's last entry, then the limit
    assert unwritten.first(3) is None and unwritten.first(4) == 0
    assert unwritten.release(4, 1, limit=10) == (1, 1)  # only what ledger 4's segment has
    assert unwritten.read(4, 1, 1) == [b"yy"]
    assert unwritten.release(4, 1, limit=10) == (0, 0)  # nothing more written
    assert unwritten.release(4, 9, limit=10) == (1, 2)  # never more than memory holds
    assert len(unwritten) == 0 and unwritten.first(4) is None


def test_a_ledger_written_behind_a_later_one_keeps_that_later_one():
    unwritten = held([b"a"], [b"x", b"yy"])
    assert unwritten.release(3, 11, limit=100) == (1, 1)
    assert unwritten.read(4, 0, 1) == [b"x", b"yy"]


def test_a_ledger_written_out_and_then_added_to_again_starts_from_its_new_entries():
    unwritten = UnwrittenEntries()
    unwritten.add(5, 0, [b"a"])
    assert unwritten.release(5, 1, limit=10) == (1, 1)
    unwritten.add(5, 1, [b"b"])  # the same ledger as the last add, whose list went
    assert unwritten.first(5) == 1 and unwritten.read(5, 1, 1) == [b"b"] and len(unwritten) == 1
    assert unwritten.forget(5) == 1
    unwritten.add(5, 2, [b"c"])
    assert unwritten.first(5) == 2 and unwritten.read(5, 2, 2) == [b"c"]


def test_forget_and_clear_return_the_bytes_let_go():
    unwritten = held([b"a", b"bb"], [b"xyz"])
    assert unwritten.forget(3) == 3 and unwritten.first(3) is None
    assert unwritten.forget(3) == 0
    assert unwritten.read(4, 0, 0) == [b"xyz"]
    assert unwritten.clear() == 3 and len(unwritten) == 0


def test_a_report_adds_no_object_the_collector_tracks():
    """One list per ledger, grown in place: a thousand reports of one entry each, as at a thousand
    topics, leave the collector's youngest generation no larger."""
    unwritten = UnwrittenEntries()
    unwritten.add(7, 0, [b"e"])
    datas = [[b"e%d" % i] for i in range(1000)]
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects(0))
        for i in range(1, 1001):
            unwritten.add(7, i, datas[i - 1])
        # A tuple per report would add a thousand; the margin is for whatever another thread of
        # the test process allocates meanwhile.
        assert len(gc.get_objects(0)) < before + 50
    finally:
        gc.enable()
    assert unwritten.read(7, 0, 1000)[-1] == b"e999"
