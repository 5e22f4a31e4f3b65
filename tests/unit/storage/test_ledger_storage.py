"""The ledger storage thread on real files: written groups reach it without a wake-up each, and
a checkpoint still finds every entry in the segments."""
import asyncio
import gc
import os
import threading
from array import array

import pytest

from minipulsar.storage import journal, ledger_storage, segment, journal_format as jf
from minipulsar.storage.journal import AppendOp
from tests.helpers import wait_for_async
from tests.unit.storage.test_journal import crash_copy, datas


def context_switches(thread) -> int:
    """Times the thread gave up the CPU of its own accord (a wait that blocked, the GIL included)."""
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("voluntary_ctxt_switches"))


def copy_of_the_segments_alone(src, dst) -> None:
    """dst: a crash copy of the data dir src without its journal files, so that only what the
    ledger storage wrote into the segments (and checkpointed) can be read back."""
    crash_copy(src, dst, segments_lost=False)
    journal_folder = os.path.join(dst, "journal")
    for seq in jf.list_files(journal_folder):
        os.unlink(jf.file_path(journal_folder, seq))


async def test_appends_do_not_wake_the_thread_while_a_round_gathers(make_factory, tmp_path, monkeypatch):
    """At a thousand groups a second a wake-up per group costs a futex and takes the GIL from the
    loop each time: the first group of a round wakes the thread, it looks for the rest every
    POLL_SECONDS (here: not before the checkpoint), and a checkpoint is acted on at once."""
    monkeypatch.setattr(ledger_storage, "WRITE_BEHIND_SECONDS", 600.0)
    monkeypatch.setattr(ledger_storage, "POLL_SECONDS", 600.0)
    factory = await make_factory(tmp_path / "a")
    ml = await factory.open("t")
    await ml.open_cursor("keep", "earliest")
    await ml.add_entry(b"e0")  # starts the round
    thread = factory._storage._thread
    before = context_switches(thread)
    expected = [b"e%d" % i for i in range(200)]
    for data in expected[1:]:  # a group each
        await ml.add_entry(data)
    assert context_switches(thread) - before < 10  # one wake-up per group made it 199 and more
    await factory.checkpoint()
    copy_of_the_segments_alone(tmp_path / "a", tmp_path / "b")
    assert await datas(await (await make_factory(tmp_path / "b")).open("t")) == expected


@pytest.mark.parametrize("inline_max_write_seconds", [journal.INLINE_MAX_WRITE_SECONDS, -1.0],
                         ids=["the-loop-writes-groups", "the-journal-thread-writes-groups"])
async def test_entries_waiting_to_be_written_behind_hold_nothing_the_collector_tracks(
        make_factory, tmp_path, monkeypatch, inline_max_write_seconds):
    """Durable entries wait up to WRITE_BEHIND_SECONDS for their segments: at 1,000 topics x 10
    msg/s, ten thousand operations at any time. Kept as AppendOps, each with a list and an array,
    they made every young collection meanwhile longer and were promoted to the older generations;
    kept as a tuple per operation, a young collection that met them still took 3-8 ms of the
    loop. What waits, on the loop's side and the ledger storage's, is one list per ledger of
    atoms (bytes, ints) that the collector does not track, without a collection first. The
    journal thread writes the groups while the loop's own writes are slow (a loaded machine): it
    keeps nothing either."""
    monkeypatch.setattr(ledger_storage, "WRITE_BEHIND_SECONDS", 600.0)
    monkeypatch.setattr(journal, "INLINE_MAX_WRITE_SECONDS", inline_max_write_seconds)
    factory = await make_factory(tmp_path / "a")
    ledgers = [await factory.open(f"t{i}") for i in range(50)]
    for ml in ledgers:
        await ml.open_cursor("keep", "earliest")
        await ml.add_entry(b"first")  # starts the round; the cache and the ledger map exist
    for group in range(20):  # 1,000 appends, one operation per ledger per group
        await asyncio.gather(*(ml.add_entry(b"e%d" % group) for ml in ledgers))
    await wait_for_async(lambda: not factory._storage._inbox)  # taken into the round that gathers
    waiting = list(factory._storage._pending.values())
    unwritten = [entries for ml in ledgers for entries in ml._commit._unwritten._entries.values()]
    assert len(waiting) == len(unwritten) == len(ledgers)  # one list per ledger on each side
    assert sum(map(len, waiting)) == 21 * len(ledgers) * ledger_storage.RUN_FIELDS  # a run per operation
    assert sum(map(len, unwritten)) == 21 * len(ledgers)
    assert not [atom for atoms in waiting + unwritten for atom in atoms if gc.is_tracked(atom)]
    owners = {ml._commit.owner for ml in ledgers}
    assert not [o for o in gc.get_objects() if type(o) is AppendOp and o.owner in owners]
    assert factory._storage.checkpoints == 0  # nothing written behind yet: the entries wait
    for ml in ledgers:
        assert await datas(ml) == [b"first"] + [b"e%d" % group for group in range(20)]


def test_written_groups_waiting_in_the_inbox_are_atoms_the_collector_lets_go(tmp_path):
    """While a checkpoint syncs 10,000 segments (seconds) the written groups wait in the inbox:
    tens of thousands of appends. A tuple holding its owner stays tracked and was promoted to
    every older generation, each of whose collections scanned it; a tuple of atoms is untracked
    by the first young collection that meets it. The owners wait in one list per group. The
    record offsets are int64 bytes, the same whether the operation made an array (two entries)
    or not (one)."""
    storage = ledger_storage.LedgerStorage(str(tmp_path), sync=True, open_file_limit=10, flush_interval=600.0,
                                           loop=None, progress=lambda _: None, delete_journal_before=lambda _: None)
    owners = [journal.JournalLedger(str(tmp_path / f"t{i}")) for i in range(3)]
    ops = [AppendOp(owner, 7, 0, 64, b"entry") for owner in owners]
    ops[2].add(b"next")  # an operation of two entries has an offsets array; one of one entry, none
    storage.intake(ops, jf.Mark(1, 0))  # not started: the group stays in the inbox
    (stored, waiting_owners, mark, needs_answer), = storage._inbox
    assert waiting_owners == owners and not needs_answer and mark == jf.Mark(1, 0)
    assert [run[:3] for run in stored] == [(7, 0, 64)] * 3
    second = 64 + segment.RECORD_OVERHEAD + len(b"entry")
    assert [run[5] for run in stored] == [array("q", offsets).tobytes() for offsets in ([64], [64], [64, second])]
    gc.collect()  # whichever generation the tuples are in by now
    assert not [run for run in stored if gc.is_tracked(run)]


async def test_a_round_and_a_checkpoint_over_many_ledgers_pause_for_the_loop(make_factory, tmp_path, monkeypatch):
    """A round's writes and a checkpoint's syncs over 120 ledgers pause twice each (every
    BREATHE_EVERY_LEDGERS = 50 ledgers), on the storage thread, and lose nothing: the segments
    alone give every entry back."""
    monkeypatch.setattr(ledger_storage, "WRITE_BEHIND_SECONDS", 600.0)
    pauses = []
    monkeypatch.setattr(ledger_storage, "_breathe", lambda: pauses.append(threading.current_thread().name))
    factory = await make_factory(tmp_path / "a", flush_interval_ms=600_000)  # no checkpoint comes due meanwhile
    ledgers = [await factory.open(f"t{i}") for i in range(120)]
    for ml in ledgers:
        await ml.open_cursor("keep", "earliest")
        await ml.add_entry(b"e-" + ml.name.encode())
    await factory.checkpoint()  # one round writes the 120 ledgers, then their segments are synced
    assert pauses == ["ml-storage"] * 4
    copy_of_the_segments_alone(tmp_path / "a", tmp_path / "b")
    reopened = await make_factory(tmp_path / "b")
    for i in range(120):
        assert await datas(await reopened.open(f"t{i}")) == [b"e-t%d" % i]


async def test_the_segment_the_open_made_takes_the_first_entries_without_being_made_again(
        make_factory, tmp_path, monkeypatch):
    """The open makes the new ledger's segment (its header); the ledger storage writes the first
    entries into it rather than making it again (an O_TRUNC create cost ~0.15 ms of kernel time,
    at every topic's first message). A ledger rolled to later is still made by the ledger storage,
    and after a checkpoint the entries of both read back from the segments alone (their durability
    across a power cut is the power-loss tests')."""
    makers = []
    real = segment.create_segment

    def create_segment(folder, ledger_id, sync):
        makers.append((threading.current_thread().name, ledger_id))
        return real(folder, ledger_id, sync)

    monkeypatch.setattr(segment, "create_segment", create_segment)
    factory = await make_factory(tmp_path / "a", max_entries_per_ledger=2)
    ml = await factory.open("t")
    await ml.open_cursor("keep", "earliest")
    first = ml.current_ledger_id
    expected = [b"e%d" % i for i in range(3)]  # the third entry rolls to the next ledger
    for data in expected:
        await ml.add_entry(data)
    await factory.checkpoint()
    assert [m for m in makers if m[0] == "ml-storage"] == [("ml-storage", first + 1)]
    copy_of_the_segments_alone(tmp_path / "a", tmp_path / "b")
    assert await datas(await (await make_factory(tmp_path / "b")).open("t")) == expected
