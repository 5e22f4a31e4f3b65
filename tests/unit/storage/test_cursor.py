"""ManagedCursor: acks, ranges, backlog, seek/reset/skip, persistence, the range cap."""
import asyncio
import glob
import logging
import os

import pytest

from minipulsar.storage import CursorError, Position, cursor_store
from tests.helpers import wait_for_async


async def ledger_with(make_factory, n, **cfg):
    f = await make_factory(**cfg)
    ml = await f.open("t")
    c = await ml.open_cursor("sub", "earliest")
    ps = [await ml.add_entry(b"%d" % i) for i in range(n)]
    return f, ml, c, ps


async def test_initial_positions(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 3)
    lid = ps[0].ledger_id
    assert c.mark_delete_position == Position(lid, -1)
    assert c.read_position == ps[0]
    latest = await ml.open_cursor("latest")
    assert latest.mark_delete_position == ps[-1]
    assert not latest.has_more_entries() and c.has_more_entries()
    assert latest.number_of_entries_in_backlog() == 0 and c.number_of_entries_in_backlog() == 3


async def test_individual_acks_move_mark_delete_over_prefix(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 10)
    c.delete([ps[2], ps[3], ps[5]])
    assert c.mark_delete_position == Position(ps[0].ledger_id, -1)
    assert c.individually_deleted_ranges() == [(ps[1], ps[3]), (ps[4], ps[5])]
    assert c.is_deleted(ps[3]) and not c.is_deleted(ps[4])
    assert c.number_of_entries_in_backlog() == 7
    c.delete([ps[0], ps[1]])
    assert c.mark_delete_position == ps[3]
    assert c.individually_deleted_ranges() == [(ps[4], ps[5])]
    c.delete([ps[4]])
    assert c.mark_delete_position == ps[5] and c.individually_deleted_ranges_count == 0
    assert c.number_of_entries_in_backlog() == 4


async def test_mark_delete_is_cumulative_and_clamped(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 5)
    c.delete([ps[3]])
    c.mark_delete(ps[1], {"k": 7})
    assert c.mark_delete_position == ps[1] and c.properties == {"k": 7}
    c.mark_delete(ps[0])  # no-op: below
    assert c.mark_delete_position == ps[1]
    c.mark_delete(ps[2])  # merges with the individually deleted 3
    assert c.mark_delete_position == ps[3]
    c.mark_delete(Position(ps[0].ledger_id + 5, 0))
    assert c.mark_delete_position == ps[-1]


async def test_prefix_crosses_ledger_boundary(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 8, max_entries_per_ledger=4)
    assert ps[4] == Position(ps[3].ledger_id + 1, 0)
    c.delete([ps[4], ps[5]])
    c.mark_delete(ps[3])
    assert c.mark_delete_position == ps[5]


async def test_read_entries_skips_deleted_and_advances(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 6)
    c.delete([ps[1], ps[2]])
    got = await c.read_entries(3)
    assert [e.position for e in got] == [ps[0], ps[3], ps[4]]
    assert c.read_position == ps[5]
    c.rewind()
    assert c.read_position == ps[0]
    c.seek(ps[4])
    assert (await c.read_entries(10))[0].position == ps[4]
    assert not c.has_more_entries()
    c.mark_delete(ps[2])
    c.seek(ps[0])  # clamped to after mark-delete
    assert c.read_position == ps[3]


async def test_reset_skip_clear(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 10)
    c.delete([ps[3], ps[6]])
    c.skip_entries(4)  # skips 0,1,2,4 (3 already deleted)
    assert c.mark_delete_position == ps[4]
    assert c.individually_deleted_ranges() == [(ps[5], ps[6])]
    c.reset_cursor(ps[2])
    assert c.mark_delete_position == ps[1] and c.read_position == ps[2]
    assert c.individually_deleted_ranges() == []
    c.clear_backlog()
    assert c.mark_delete_position == ps[-1] and c.number_of_entries_in_backlog() == 0
    c.reset_cursor(Position(-1, -1))
    assert c.read_position == ps[0] and c.number_of_entries_in_backlog() == 10


async def test_persistence_and_reload(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 10)
    c.delete([ps[0], ps[1], ps[4], ps[7], ps[8]])
    c.mark_delete(ps[1], {"replicated": 1})
    c.set_cursor_property("owner", "me")
    persisted = []
    c.add_persist_listener(lambda: persisted.append(c.last_persisted_ranges_count))
    await f.close()
    assert persisted == [2]
    f2 = await make_factory()
    ml2 = await f2.open("t")
    c2 = ml2.cursors["sub"]
    assert c2.mark_delete_position == ps[1]
    assert c2.individually_deleted_ranges() == [(ps[3], ps[4]), (ps[6], ps[8])]
    assert c2.properties == {"replicated": 1} and c2.cursor_properties == {"owner": "me"}
    assert (await ml2.open_cursor("sub", "latest")) is c2  # existing state wins
    await ml2.delete_cursor("sub")
    assert "sub" not in ml2.cursors and not glob.glob(os.path.join(ml2.cursor_folder, "*"))


async def test_range_cap_persists_lowest_ranges(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 40, max_unacked_ranges_to_persist=5)
    c.delete(ps[1::2])  # 20 holes -> 20 ranges
    await c.flush()
    assert c.last_persisted_ranges_count == 5 and c.last_persist_dropped_ranges
    assert not c.is_cursor_data_fully_persistable()
    await f.close()
    f2 = await make_factory(max_unacked_ranges_to_persist=5)
    c2 = (await f2.open("t")).cursors["sub"]
    assert c2.individually_deleted_ranges() == [(ps[i - 1], ps[i]) for i in (1, 3, 5, 7, 9)]
    assert c2.number_of_entries_in_backlog() == 35  # the dropped acks come back (at-least-once)
    ml2 = await f2.open("t")
    ml2.config.max_unacked_ranges_to_persist = 100  # changed at runtime
    c2.delete([ps[11]])
    await c2.flush()
    assert c2.last_persisted_ranges_count == 6 and not c2.last_persist_dropped_ranges


async def test_persist_is_rate_limited(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 50, mark_delete_rate_limit=5.0)
    count = []
    c.add_persist_listener(lambda: count.append(1))
    loop = asyncio.get_running_loop()
    started = loop.time()
    for p in ps:
        c.mark_delete(p)
        await asyncio.sleep(0.01)  # the acks' pace, the input: 0.5 s of acks on an idle machine, longer on a busy one
    await wait_for_async(lambda: c.persisted_mark_delete_position == ps[-1], "the last mark-delete persisted")
    # ~5/s over however long the acks took (one more for the flush at either end), not 50
    assert 2 <= len(count) <= 5 * (loop.time() - started) + 2


async def test_non_durable_cursor_is_never_written(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 5)
    before = sorted(os.listdir(ml.cursor_folder))
    r = ml.new_non_durable_cursor(ps[2])
    assert [e.position for e in await r.read_entries(10)] == ps[2:]
    r2 = ml.new_non_durable_cursor(ps[2], inclusive=False)
    assert (await r2.read_entries(1))[0].position == ps[3]
    r.mark_delete(ps[4])
    await r.flush()
    assert sorted(os.listdir(ml.cursor_folder)) == before and r.name not in ml.cursors


async def test_corrupt_cursor_slot_falls_back_to_previous_state(make_factory, caplog):
    f, ml, c, ps = await ledger_with(make_factory, 5, mark_delete_rate_limit=0)
    c.mark_delete(ps[1])
    await c.flush()
    c.mark_delete(ps[3])
    await c.flush()
    slots = glob.glob(os.path.join(ml.cursor_folder, "*.cur.*"))
    await f.close()
    newest = max(slots, key=lambda path: cursor_store.decode(open(path, "rb").read()).seq)
    assert cursor_store.decode(open(newest, "rb").read()).mark_delete == ps[3]
    with open(newest, "r+b") as fh:  # a torn write of the newest slot
        fh.truncate(os.path.getsize(newest) - 3)
    caplog.set_level(logging.WARNING)
    f2 = await make_factory()
    c2 = (await f2.open("t")).cursors["sub"]
    assert c2.mark_delete_position == ps[1]
    assert "fell back to the previous state" in caplog.text
    c2.mark_delete(ps[4])  # and the next persist overwrites the bad slot, not the good one
    await c2.flush()
    assert cursor_store.decode(open(newest, "rb").read()).mark_delete == ps[4]


async def test_closed_cursor_rejects_acks(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 2)
    await c.close()
    with pytest.raises(CursorError):
        c.mark_delete(ps[0])


async def test_replay_entries_reads_again_and_names_what_is_gone(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 6)
    entries = await c.read_entries(6)
    assert [e.position for e in entries] == ps
    c.delete([ps[1], ps[4]])
    replayed, skipped = await c.replay_entries([ps[4], ps[0], ps[1], ps[3]])
    assert [(e.position, e.data) for e in replayed] == [(ps[0], b"0"), (ps[3], b"3")]
    assert skipped == [ps[1], ps[4]]
    assert c.read_position == ml.next_valid_position(ps[-1])  # a replay does not move the read position


async def test_reset_cursor_clamps_to_the_first_entry_and_the_end(make_factory):
    f, ml, c, ps = await ledger_with(make_factory, 4)
    end = ml.next_valid_position(ps[-1])
    c.reset_cursor(Position(-1, 5))  # any negative ledger id: the first entry
    assert c.read_position == ps[0]
    c.reset_cursor(Position((1 << 63) - 1, (1 << 63) - 1))  # latest: the next entry written
    assert c.read_position == end and c.mark_delete_position == ps[-1]
    c.reset_cursor(ps[2])
    assert c.read_position == ps[2] and c.mark_delete_position == ps[1]


async def test_deleted_cursor_removes_its_files_and_stops_persisting(make_factory, tmp_path):
    f, ml, c, ps = await ledger_with(make_factory, 3)
    files = glob.glob(os.path.join(ml.cursor_folder, "*"))
    assert files
    c.delete([ps[0]])  # schedules a persist
    await ml.delete_cursor("sub")
    assert glob.glob(os.path.join(ml.cursor_folder, "*")) == []
    assert "sub" not in ml.cursors
    with pytest.raises(CursorError):
        c.delete([ps[1]])
