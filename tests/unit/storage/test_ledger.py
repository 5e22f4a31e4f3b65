"""ManagedLedger on real segment files: appends, reads, roll-over, trimming, reopen."""
import asyncio
import os
import threading

import pytest

from minipulsar.storage import segment
from minipulsar.storage import (DataDirLockedError, LedgerClosedError, ManagedLedgerConfig, ManagedLedgerFactory,
                     Position)


async def test_append_read_and_positions(make_factory):
    f = await make_factory()
    ml = await f.open("public/default/persistent/t")
    assert ml.last_confirmed_position == Position(ml.current_ledger_id, -1)
    assert ml.first_position is None and ml.number_of_entries == 0
    ps = await asyncio.gather(*[ml.add_entry(b"m%d" % i) for i in range(20)])
    lid = ml.current_ledger_id
    assert ps == [Position(lid, i) for i in range(20)]
    assert ml.last_confirmed_position == Position(lid, 19)
    assert ml.number_of_entries == 20
    assert ml.total_size == sum(len(b"m%d" % i) for i in range(20))
    entries = await ml.read_entries(Position(lid, 5), 3)
    assert [(e.position, e.data) for e in entries] == [(Position(lid, i), b"m%d" % i) for i in (5, 6, 7)]
    assert await ml.read_entries(Position(lid, 20), 10) == []
    assert (await ml.read_entry(Position(lid, 19))).data == b"m19"
    assert await ml.read_entry(Position(lid, 20)) is None


async def test_read_limits_bytes_but_returns_at_least_one(make_factory):
    f = await make_factory(entry_cache_size_mb=0)  # force reads from disk
    ml = await f.open("t")
    await asyncio.gather(*[ml.add_entry(bytes([i]) * 1000) for i in range(10)])
    lid = ml.current_ledger_id
    got = await ml.read_entries(Position(lid, 0), 100, max_bytes=2500)
    assert [e.data[0] for e in got] == [0, 1]
    got = await ml.read_entries(Position(lid, 3), 100, max_bytes=10)
    assert len(got) == 1 and got[0].data == bytes([3]) * 1000
    got = await ml.read_entries(Position(-1, -1), 100)
    assert len(got) == 10 and got[0].position == Position(lid, 0)


async def test_roll_over_by_entries_and_reads_across_ledgers(make_factory):
    f = await make_factory(max_entries_per_ledger=10)
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")  # holds every ledger back from trimming
    first = ml.current_ledger_id
    ps = [await ml.add_entry(b"%d" % i) for i in range(25)]
    assert ps[9] == Position(first, 9) and ps[10] == Position(first + 1, 0) and ps[24] == Position(first + 2, 4)
    assert ml.ledger_ids == [first, first + 1, first + 2]
    got = await ml.read_entries(Position(first, 8), 5)
    assert [e.position for e in got] == [Position(first, 8), Position(first, 9), Position(first + 1, 0),
                                         Position(first + 1, 1), Position(first + 1, 2)]
    assert ml.next_valid_position(Position(first, 9)) == Position(first + 1, 0)
    assert ml.next_valid_position(Position(first + 2, 4)) == Position(first + 2, 5)
    assert ml.count_entries_between(Position(first, 5), Position(first + 2, 1)) == 4 + 10 + 2
    await f.checkpoint()  # the ledger storage writes behind the journal: let it catch up
    assert os.path.exists(os.path.join(ml.folder, f"{first:012d}.idx"))  # sealed with an index


async def test_roll_over_reports_before_the_sealed_index_is_written(make_factory, monkeypatch):
    """The first append of a new ledger is durable without waiting for the old ledger's offset
    index (its syncs used to hold every roll-over's receipts): the journal makes appends durable
    while the ledger storage behind it still writes the index."""
    f = await make_factory(max_entries_per_ledger=2)
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    first = ml.current_ledger_id
    await ml.add_entry(b"a")
    await ml.add_entry(b"b")
    release, written, real_write_index = threading.Event(), [], segment.write_index

    def held_write_index(folder, idx, sync):
        release.wait(10)
        real_write_index(folder, idx, sync)
        written.append(idx.ledger_id)

    monkeypatch.setattr(segment, "write_index", held_write_index)
    assert await asyncio.wait_for(ml.add_entry(b"c"), 5) == Position(first + 1, 0)
    checkpoint = asyncio.ensure_future(f.checkpoint())  # the ledger storage seals the first ledger
    assert await asyncio.wait_for(ml.add_entry(b"d"), 5) == Position(first + 1, 1)  # not held by it
    assert written == [] and not os.path.exists(segment.index_path(ml.folder, first))
    release.set()
    await checkpoint
    assert written == [first] and segment.load_index(ml.folder, first).entries == 2


async def test_a_cancelled_append_waiter_leaves_the_rest_of_its_group_commit_alone(make_factory):
    """Appends of one group commit share one future: cancelling one awaiting caller failed the
    others with CancelledError and left the ledger unable to finish the batch."""
    f = await make_factory()
    ml = await f.open("t")
    first, second = asyncio.ensure_future(ml.add_entry(b"a")), asyncio.ensure_future(ml.add_entry(b"b"))
    await asyncio.sleep(0)  # both appended, into the same chunk
    first.cancel()
    lid = ml.current_ledger_id
    assert await asyncio.wait_for(second, 5) == Position(lid, 1)
    assert await asyncio.wait_for(ml.add_entry(b"c"), 5) == Position(lid, 2)
    assert [e.data for e in await ml.read_entries(Position(lid, 0), 10)] == [b"a", b"b", b"c"]


async def test_roll_over_by_size(make_factory):
    f = await make_factory(max_size_per_ledger_mb=1)
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    for _ in range(5):
        await ml.add_entry(b"x" * (300 * 1024))
    assert len(ml.ledger_ids) == 2  # 4 x 300 KiB reach 1 MiB, the 5th rolls


async def test_trimming_follows_slowest_durable_cursor(make_factory):
    f = await make_factory(max_entries_per_ledger=5)
    ml = await f.open("t")
    c1 = await ml.open_cursor("c1", "earliest")
    c2 = await ml.open_cursor("c2", "earliest")
    reader = ml.new_non_durable_cursor(Position(-1, -1))
    ps = [await ml.add_entry(b"%d" % i) for i in range(23)]
    assert len(ml.ledger_ids) == 5
    c1.mark_delete(ps[14])
    await c1.flush()
    assert len(ml.ledger_ids) == 5  # c2 still at the start
    c2.mark_delete(ps[11])
    await c2.flush()
    assert ml.first_position == Position(ps[10].ledger_id, 0)  # ledger 0 and 1 gone (wholly <= 2:1? no, <= 1:4)
    assert ml.number_of_entries == 13
    # the reader (non-durable) did not hold anything back; its reads skip forward
    got = await reader.read_entries(3)
    assert got[0].position == ps[10]
    await ml.delete_cursor("c2")
    assert ml.first_position == ps[15]  # now only c1 (md 2:4 = last of its ledger) counts


async def test_no_cursors_trims_everything_but_current(make_factory):
    f = await make_factory(max_entries_per_ledger=3)
    ml = await f.open("t")
    for i in range(10):
        await ml.add_entry(b"x")
    assert ml.ledger_ids == [ml.current_ledger_id]
    assert ml.number_of_entries == 1


async def test_retention_size_keeps_consumed_ledgers(make_factory):
    f = await make_factory(max_entries_per_ledger=2, retention_time_minutes=-1, retention_size_mb=1)
    ml = await f.open("t")
    c = await ml.open_cursor("c", "earliest")
    for i in range(10):
        await ml.add_entry(b"x" * 100)
    c.clear_backlog()
    await c.flush()
    assert ml.number_of_entries == 10  # 1 KB retained < 1 MB quota, time unlimited


async def test_reopen_rolls_and_keeps_entries(make_factory, tmp_path):
    f = await make_factory()
    ml = await f.open("a/b")
    await ml.open_cursor("sub", "earliest")  # keeps the entries from trimming at reopen
    ps = [await ml.add_entry(b"e%d" % i) for i in range(5)]
    await f.close()
    f2 = await make_factory()
    ml2 = await f2.open("a/b")
    assert ml2.current_ledger_id == ps[-1].ledger_id + 1
    assert ml2.last_confirmed_position == ps[-1]
    assert [e.data for e in await ml2.read_entries(Position(-1, -1), 10)] == [b"e%d" % i for i in range(5)]
    assert set(ml2.cursors) == {"sub"}
    assert f2.list_names() == ["a/b"] and f2.exists("a/b") and not f2.exists("a/c")
    p = await ml2.add_entry(b"new")
    assert p == Position(ml2.current_ledger_id, 0)


async def test_factory_open_same_instance_names_and_delete(make_factory, tmp_path):
    f = await make_factory()
    names = ["public/default/persistent/x", "../escape", ".", "a%2Fb", "ü/" + "n" * 300]
    opened = await asyncio.gather(*[f.open(n) for n in names])
    assert await f.open(names[0]) is opened[0]
    assert sorted(f.list_names()) == sorted(names)
    for ml in opened:  # every folder is inside the data dir
        assert os.path.dirname(ml.folder) == os.path.join(str(tmp_path / "data"), "ledgers")
    await f.delete(names[1])
    assert not f.exists(names[1]) and names[1] not in f.list_names()
    with pytest.raises(LedgerClosedError):
        await opened[1].add_entry(b"x")


async def test_data_dir_lock_refuses_second_factory(make_factory, tmp_path):
    await make_factory()
    other = ManagedLedgerFactory(tmp_path / "data", ManagedLedgerConfig())
    with pytest.raises(DataDirLockedError, match=str(tmp_path / "data")):
        await other.start()


async def test_closed_ledger_refuses_appends_and_close_flushes(make_factory):
    f = await make_factory()
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    pending = [asyncio.ensure_future(ml.add_entry(b"p%d" % i)) for i in range(50)]
    await asyncio.sleep(0)
    await ml.close()
    assert all(t.done() and not t.exception() for t in pending)
    with pytest.raises(LedgerClosedError):
        await ml.add_entry(b"late")
    ml2 = await f.open("t")
    assert ml2.number_of_entries == 50
    assert ml2.last_confirmed_position == Position(ml2.current_ledger_id - 1, 49)


async def test_entry_listener_and_find_newest_matching(make_factory):
    f = await make_factory(max_entries_per_ledger=7)
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    calls = []
    ml.add_entry_listener(lambda: calls.append(ml.last_confirmed_position))
    ps = [await ml.add_entry(i.to_bytes(4, "big")) for i in range(30)]
    assert calls and calls[-1] == ps[-1]
    found = await ml.find_newest_matching(lambda d: int.from_bytes(d, "big") <= 17)
    assert found == ps[17]
    assert await ml.find_newest_matching(lambda d: False) is None
    assert await ml.find_newest_matching(lambda d: True) == ps[-1]


async def test_group_commit_batches_many_appends_per_sync(make_factory):
    f = await make_factory()
    ml = await f.open("t")
    batches = []
    queue = ml._commit._queue
    orig = queue._submit
    queue._submit = lambda ops: (batches.append(sum(len(op.datas) for op in ops)), orig(ops))
    await asyncio.gather(*[ml.add_entry(b"x") for _ in range(2000)])
    assert sum(batches) == 2000
    assert len(batches) < 2000 / 10  # many appends share one write + fdatasync


async def test_one_group_commit_serves_every_ledger(make_factory):
    """The journal is shared: appends to many ledgers in one loop turn go out as one journal
    write (one sync), whatever the number of ledgers."""
    f = await make_factory()
    ledgers = [await f.open(f"t{i}") for i in range(200)]
    groups = []
    queue = ledgers[0]._commit._queue
    orig = queue._submit
    queue._submit = lambda ops: (groups.append(len({op.owner for op in ops})), orig(ops))
    for _ in range(3):
        await asyncio.gather(*[ml.add_entry(b"x") for ml in ledgers])
    assert groups == [200, 200, 200]
    for ml in ledgers:
        assert [e.data for e in await ml.read_entries(Position(-1, -1), 10)] == [b"x"] * 3


async def test_trimming_everything_leaves_nothing_promised_and_moves_cursors(make_factory, tmp_path):
    """Pulsar's advanceCursorsIfNecessary: after a trim, the last confirmed position is the current
    ledger's (L, -1) when no entry is retained, and cursors below the first retained ledger move up."""
    f = await make_factory(max_entries_per_ledger=2)
    ml = await f.open("t")
    cursor = await ml.open_cursor("sub", "earliest")
    positions = [await ml.add_entry(b"%d" % i) for i in range(4)]  # ledgers of 2 entries each
    cursor.mark_delete(positions[-1])
    await cursor.flush()  # the persist lets the sealed ledgers go
    await ml.close()
    ml = await f.open("t")  # reopening rolls over: every entry is in a sealed, consumed ledger
    assert ml.number_of_entries == 0
    assert ml.last_confirmed_position == Position(ml.current_ledger_id, -1)
    assert ml.cursors["sub"].mark_delete_position == Position(ml.ledger_ids[0], -1)


async def test_appends_are_cached_only_while_a_cursor_is_active(make_factory):
    """Pulsar's OpAddEntry caches an entry only when the ledger hasActiveCursors(); the last
    cursor to go inactive empties the cache. Uncached entries still read back (from memory until
    the ledger storage writes them, then from the segment)."""
    f = await make_factory()
    ml = await f.open("t")
    cursor = await ml.open_cursor("sub", "earliest")
    await ml.add_entry(b"a" * 100)
    assert ml.cache_size == 0 and not cursor.is_active and not ml.has_active_cursors
    cursor.set_active()
    reader = ml.new_non_durable_cursor(None)
    reader.set_active()
    await asyncio.gather(*[ml.add_entry(b"b" * 100) for _ in range(3)])
    assert ml.cache_size == 300 and cursor.is_active and reader.is_active
    cursor.set_inactive()
    await ml.add_entry(b"c" * 100)
    assert ml.cache_size == 400 and not cursor.is_active  # the reader is still active
    reader.set_inactive()
    assert ml.cache_size == 0 and not ml.has_active_cursors
    await ml.add_entry(b"d" * 100)
    assert ml.cache_size == 0
    await f.checkpoint()
    entries = await ml.read_entries(Position(ml.current_ledger_id, 0), 10)
    assert [e.data[0] for e in entries] == [ord(c) for c in "abbbcd"]
    cursor.set_active()
    await ml.delete_cursor("sub")  # a deleted cursor is no longer active
    assert not ml.has_active_cursors
