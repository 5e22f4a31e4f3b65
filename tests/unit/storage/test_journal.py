"""The shared journal on real files: what it made durable comes back from it after a crash that
lost the segments, fenced and trimmed ledgers and deleted topics stay so, and a write of
unknown outcome (EIO) fails its appends, which continue on a new ledger. A small group is
written on the loop when the journal thread is idle, any other by the thread, in order; the
failure tests run on both writers.

A crash is a copy of the data dir taken while the factory runs (everything acknowledged is in
the journal by then), in which the segments are cut back as a power loss may leave them.
"""
import asyncio
import errno
import glob
import os
import shutil
import threading
import time
import types

import pytest

from minipulsar.storage import PersistenceError, Position, journal as journal_module, journal_format as jf, segment
from tests.helpers import wait_for_async

EARLIEST = Position(-1, -1)


def crash_copy(src, dst, segments_lost: bool = True):
    """The data dir as a crash could leave it: a copy (of the files that still exist while the
    storage threads work on), without the lock, the segments' entries gone when segments_lost
    (never written behind the journal, or lost with the page cache)."""
    for folder, _, files in os.walk(src):
        target = os.path.join(dst, os.path.relpath(folder, src))
        os.makedirs(target, exist_ok=True)
        for name in files:
            try:
                shutil.copyfile(os.path.join(folder, name), os.path.join(target, name))
            except FileNotFoundError:  # removed by the ledger storage meanwhile
                pass
    os.unlink(os.path.join(dst, "LOCK"))
    if segments_lost:
        for seg in glob.glob(os.path.join(dst, "ledgers", "*", "*.seg")):
            with open(seg, "r+b") as f:
                f.truncate(segment.HEADER_SIZE)
        for idx in glob.glob(os.path.join(dst, "ledgers", "*", "*.idx")):
            os.unlink(idx)


async def datas(ml):
    return [e.data for e in await ml.read_entries(EARLIEST, 1000)]


async def test_a_crash_that_lost_the_segments_gets_every_acknowledged_entry_back(make_factory, tmp_path, writer):
    f = await make_factory(tmp_path / "a", max_entries_per_ledger=7)
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    acked = [b"e%d" % i for i in range(30)]
    for data in acked:
        await ml.add_entry(data)
    crash_copy(tmp_path / "a", tmp_path / "b")
    f2 = await make_factory(tmp_path / "b")
    ml2 = await f2.open("t")
    assert await datas(ml2) == acked
    assert (await ml2.add_entry(b"after")).ledger_id > ml.current_ledger_id  # a new ledger, as on every open


async def test_replay_leaves_entries_already_in_the_segments_alone(make_factory, tmp_path):
    f = await make_factory(tmp_path / "a")
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    for i in range(5):
        await ml.add_entry(b"%d" % i)
    await f.checkpoint()
    for i in range(5, 10):
        await ml.add_entry(b"%d" % i)
    crash_copy(tmp_path / "a", tmp_path / "b", segments_lost=False)
    ml2 = await (await make_factory(tmp_path / "b")).open("t")
    assert await datas(ml2) == [b"%d" % i for i in range(10)]


async def test_a_checkpoint_lets_old_journal_files_go(make_factory, tmp_path):
    f = await make_factory(tmp_path / "a", journal_max_size_mb=1)
    ml = await f.open("t")
    for _ in range(3):
        await ml.add_entry(b"x" * 600_000)  # a journal file a little over 1 MB, then the next
    journal = os.path.join(tmp_path, "a", "journal")
    assert len(jf.list_files(journal)) >= 2
    await f.checkpoint()
    mark = jf.read_checkpoint(journal)
    assert all(seq >= mark.seq for seq in jf.list_files(journal))
    assert len(jf.list_files(journal)) == 1


async def test_a_deleted_topic_stays_deleted_and_its_successor_keeps_only_its_own(make_factory, tmp_path):
    f = await make_factory(tmp_path / "a")
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    for i in range(5):
        await ml.add_entry(b"old%d" % i)
    await f.delete("t")
    ml = await f.open("t")  # the same name again: a new folder, ledger ids from 0 again
    await ml.open_cursor("keep", "earliest")
    await ml.add_entry(b"new")
    crash_copy(tmp_path / "a", tmp_path / "b")
    ml2 = await (await make_factory(tmp_path / "b")).open("t")
    assert await datas(ml2) == [b"new"]


async def test_trimmed_ledgers_are_not_brought_back(make_factory, tmp_path):
    f = await make_factory(tmp_path / "a", max_entries_per_ledger=3, mark_delete_rate_limit=0)
    ml = await f.open("t")
    cursor = await ml.open_cursor("sub", "earliest")
    positions = [await ml.add_entry(b"%d" % i) for i in range(10)]
    cursor.mark_delete(positions[5])  # the first two ledgers are consumed
    await cursor.flush()
    await ml.wait_journaled()  # the TRIM records are durable; the files may still be there
    assert ml.first_position == Position(positions[6].ledger_id, 0)
    crash_copy(tmp_path / "a", tmp_path / "b")
    ml2 = await (await make_factory(tmp_path / "b")).open("t")
    assert await datas(ml2) == [b"%d" % i for i in range(6, 10)]


@pytest.fixture(params=["loop", "thread"])
def writer(request, monkeypatch):
    """Which side writes the test's groups: the loop (small groups, the thread idle: the default)
    or the journal thread (no group is small enough for the loop)."""
    if request.param == "thread":
        monkeypatch.setattr(journal_module, "INLINE_GROUP_BYTES", -1)
    return request.param


@pytest.fixture
def journal_writes(monkeypatch):
    """.writes: every journal or segment write as (thread name, bytes); the journal thread waits
    at .gate (an Event, set) before each write, having set .entered; a synced write takes
    .slow_seconds on the journal's clock (a slow disk, without waiting for one). That clock
    counts nothing else: on a busy machine real synced writes of over INLINE_MAX_WRITE_SECONDS
    would turn the loop's groups over to the thread at random."""
    real = segment.pwritev_all
    seen = types.SimpleNamespace(writes=[], gate=threading.Event(), entered=threading.Event(), slow_seconds=0.0,
                                 clock_ahead=0.0)
    seen.gate.set()

    def pwritev_all(fd, parts, offset, dsync=False):
        name = threading.current_thread().name
        if name == "ml-journal":
            seen.entered.set()
            assert seen.gate.wait(20), "the test never let the journal thread write"
        if dsync:
            seen.clock_ahead += seen.slow_seconds
        seen.writes.append((name, b"".join(parts)))
        return real(fd, parts, offset, dsync)

    monkeypatch.setattr(journal_module.segment, "pwritev_all", pwritev_all)
    monkeypatch.setattr(journal_module, "time",
                        types.SimpleNamespace(perf_counter=lambda: seen.clock_ahead, monotonic=time.monotonic))
    return seen


def journal_writers(writes, marker: bytes) -> list[str]:
    """The threads that wrote journal records holding marker, in order (segment writes left out)."""
    return [name for name, data in writes if marker in data and name != "ml-storage"]


async def test_a_small_group_is_written_on_the_loop_and_a_large_one_by_the_journal_thread(
        make_factory, tmp_path, journal_writes):
    writes = journal_writes.writes
    ml = await (await make_factory(tmp_path)).open("t")
    await ml.add_entry(b"small")
    await ml.add_entry(b"L" * (journal_module.INLINE_GROUP_BYTES + 1))
    assert journal_writers(writes, b"small") == [threading.current_thread().name]
    assert journal_writers(writes, b"LLLL") == ["ml-journal"]
    assert await datas(ml) == [b"small", b"L" * (journal_module.INLINE_GROUP_BYTES + 1)]


async def test_what_the_loop_takes_in_one_turn_after_the_first_append_joins_its_group(
        make_factory, tmp_path, journal_writes):
    """A group goes a turn of the loop after its first append: appends made in that turn (the
    SENDs that reached the socket meanwhile) are written and synced with it, in one write."""
    ml = await (await make_factory(tmp_path)).open("t")
    _, first = ml.append(b"first")
    later = []
    asyncio.get_running_loop().call_soon(lambda: later.append(ml.append(b"second")[1]))
    await asyncio.shield(first)
    assert later == [first]  # the second append shares the first one's group
    held = [data for name, data in journal_writes.writes if name != "ml-storage" and b"first" in data]
    assert len(held) == 1 and b"second" in held[0]
    assert await datas(ml) == [b"first", b"second"]


async def test_a_small_group_waits_behind_a_group_the_journal_thread_has_in_hand(
        make_factory, tmp_path, journal_writes):
    """While the thread holds a group, the loop writes nothing itself: the records keep the order
    in which their groups were submitted."""
    writes, gate, entered = journal_writes.writes, journal_writes.gate, journal_writes.entered
    factory = await make_factory(tmp_path)
    big_ml, small_ml = await factory.open("big"), await factory.open("small")
    gate.clear()
    big = asyncio.ensure_future(big_ml.add_entry(b"B" * (journal_module.INLINE_GROUP_BYTES + 1)))
    await wait_for_async(entered.is_set, "the journal thread to take the large group")
    small = asyncio.ensure_future(small_ml.add_entry(b"small"))
    await wait_for_async(lambda: factory._journal._handed == 2, "the small group to be handed to the thread")
    assert not small.done() and not journal_writers(writes, b"small")
    gate.set()
    await asyncio.gather(big, small)
    held = [data for name, data in writes if name == "ml-journal" and (b"BBBB" in data or b"small" in data)]
    assert [b"BBBB" in data for data in held] == [True, False] and b"small" in held[1]
    assert factory._journal._handed == 0


async def test_while_synced_writes_are_slow_the_loop_leaves_them_to_the_journal_thread(
        make_factory, tmp_path, journal_writes, monkeypatch):
    """A stalling disk must not stall the event loop: once the writes' moving average passes
    INLINE_MAX_WRITE_SECONDS, even small groups go to the thread, until quick writes bring the
    average back down."""
    writes, loop_thread = journal_writes.writes, threading.current_thread().name
    ml = await (await make_factory(tmp_path)).open("t")
    journal_writes.slow_seconds = 0.2
    await ml.add_entry(b"stalled")  # the average was 0: written on the loop, and taking 0.2 s on its clock
    journal_writes.slow_seconds = 0.0
    await ml.add_entry(b"next")
    assert journal_writers(writes, b"stalled") == [loop_thread]
    assert journal_writers(writes, b"next") == ["ml-journal"]
    # 25 ms on average after one slow write; quick writes bring it under 20 ms within a few groups.
    monkeypatch.setattr(journal_module, "INLINE_MAX_WRITE_SECONDS", 0.02)
    for i in range(20):
        await ml.add_entry(b"quick%d" % i)
    assert loop_thread in journal_writers(writes, b"quick")


def journal_file(factory) -> str:
    return jf.file_path(factory.journal_dir, factory._journal.mark.seq)


async def test_synced_records_overwrite_zeros_written_ahead_and_the_file_does_not_grow(make_factory, tmp_path):
    """A synced write within the file's size and its allocated blocks has no file-system metadata
    to commit; the zeros read as the end of the records."""
    factory = await make_factory(tmp_path / "a", journal_pre_alloc_size_mb=1)
    ml = await factory.open("t")
    await ml.open_cursor("keep", "earliest")
    size = os.path.getsize(journal_file(factory))
    assert size == jf.FILE_HEADER.size + (1 << 20)
    for i in range(20):
        await ml.add_entry(b"e%d" % i)
    assert 0 < factory._journal.mark.offset < size and os.path.getsize(journal_file(factory)) == size
    half = [b"H" * (60 << 10)] * 10
    for data in half:  # past half the run: the next run is written behind them
        await ml.add_entry(data)
    await wait_for_async(lambda: os.path.getsize(journal_file(factory)) == size + (1 << 20), "the next run of zeros")
    records = [r for r in jf.read_records(journal_file(factory)) if r.kind == jf.ENTRY]
    assert [r.payload[segment.RECORD_OVERHEAD:] for r in records] == [b"e%d" % i for i in range(20)] + half
    crash_copy(tmp_path / "a", tmp_path / "b")
    assert await datas(await (await make_factory(tmp_path / "b")).open("t")) == [b"e%d" % i for i in range(20)] + half


async def test_a_group_that_does_not_fit_below_the_zeros_waits_one_step_of_the_journal_thread(
        make_factory, tmp_path, journal_writes, monkeypatch):
    """The loop never writes where the thread may be writing zeros: a group past them goes to
    the thread, which appends it after the step of zeros it is writing, before the run's next
    step; the loop writes again once the run is ahead of the records. With the records that
    close to the zeros, the steps are not paced."""
    monkeypatch.setattr(journal_module, "ZERO_STEP_PAUSE_SECONDS", 60.0)
    writes, loop_thread = journal_writes.writes, threading.current_thread().name
    zeroing, steps = threading.Event(), threading.Semaphore(0)
    real = jf.write_zeros

    def write_zeros(fd, offset, length, sync):
        if threading.current_thread().name == "ml-journal":
            zeroing.set()
            assert steps.acquire(timeout=20), "the test never let the journal thread write its zeros"
        real(fd, offset, length, sync)

    monkeypatch.setattr(journal_module.jf, "write_zeros", write_zeros)
    factory = await make_factory(tmp_path, journal_pre_alloc_size_mb=3)
    ml = await factory.open("t")
    big = b"B" * (60 << 10)
    journal, fitting = factory._journal, []
    most = len(big) + journal_module._ENTRY_OVERHEAD + journal_module._NAME_RECORD_MAX  # what the loop allows for
    while journal.mark.offset + most <= journal._allocated:
        fitting.append(await ml.add_entry(big))
    assert zeroing.is_set() and journal_writers(writes, b"BBBB") == [loop_thread] * len(fitting)
    past = asyncio.ensure_future(ml.add_entry(b"P" * (60 << 10)))
    await wait_for_async(lambda: journal._handed == 1, "the group past the zeros to be handed over")
    assert not past.done()
    steps.release()  # the run's first step
    await asyncio.wait_for(past, 10)
    assert journal_writers(writes, b"PPPP") == ["ml-journal"] and journal._filling
    steps.release((3 << 20) // journal_module.ZERO_STEP_BYTES - 1)  # the others
    await wait_for_async(lambda: not journal._filling, "the run of zeros to be reported")
    await ml.add_entry(b"again")
    assert journal_writers(writes, b"again") == [loop_thread]
    assert await datas(ml) == [big] * len(fitting) + [b"P" * (60 << 10), b"again"]


async def test_the_steps_of_a_run_of_zeros_are_paced_and_a_group_goes_between_them(
        make_factory, tmp_path, journal_writes, monkeypatch):
    """Steps of zeros one after another would hold up every synced write of the loop's that meets
    them, so the journal thread pauses ZERO_STEP_PAUSE_SECONDS between two steps; a group handed
    to it during the pause is written at once, not after it."""
    monkeypatch.setattr(journal_module, "ZERO_STEP_PAUSE_SECONDS", 3.0)
    steps, real = [], jf.write_zeros

    def write_zeros(fd, offset, length, sync):
        if threading.current_thread().name == "ml-journal":
            steps.append(time.monotonic())
        real(fd, offset, length, sync)

    monkeypatch.setattr(journal_module.jf, "write_zeros", write_zeros)
    factory = await make_factory(tmp_path, journal_pre_alloc_size_mb=4)  # paced while over 1 MiB of zeros is left
    ml = await factory.open("t")
    while not factory._journal._filling:  # past half the run: the next run starts
        await ml.add_entry(b"H" * (60 << 10))
    # No more records until its first step: had the loop gone on appending while the journal
    # thread was slow to start it (a busy machine), the records could come within a quarter of a
    # run of the zeros, where steps are not paced (they must not fall behind the records).
    await wait_for_async(lambda: steps or None, "the run's first step")
    factory._journal._write_seconds = 1.0  # as after a stalled write: the next group is handed over
    await asyncio.wait_for(ml.add_entry(b"handed"), 2.0)  # within the first pause
    assert journal_writers(journal_writes.writes, b"handed") == ["ml-journal"] and len(steps) == 1
    await wait_for_async(lambda: len(steps) >= 2 or None, "the run's second step")
    assert steps[1] - steps[0] >= 3.0, steps


async def test_zeros_never_take_the_room_the_segments_need(make_factory, tmp_path, monkeypatch):
    """Short of a run plus ROOM_KEPT_BYTES, no zeros: the records are appended, and half a run
    later, with room again, the zeros come back."""
    room = {"bytes": journal_module.ROOM_KEPT_BYTES}
    monkeypatch.setattr(journal_module, "_room", lambda fd: room["bytes"])
    factory = await make_factory(tmp_path, journal_pre_alloc_size_mb=1)
    ml = await factory.open("t")
    await ml.open_cursor("keep", "earliest")
    assert os.path.getsize(journal_file(factory)) == jf.FILE_HEADER.size
    await ml.add_entry(b"appended")
    await wait_for_async(lambda: not factory._journal._filling, "the run that found no room")
    assert os.path.getsize(journal_file(factory)) == factory._journal.mark.offset  # records only
    room["bytes"] = 1 << 40
    later = [b"L" * (60 << 10)] * 10  # past half a run
    for data in later:
        await ml.add_entry(data)
    await wait_for_async(lambda: os.path.getsize(journal_file(factory)) > factory._journal.mark.offset,
                         "a run of zeros ahead of the records once there is room")
    assert await datas(ml) == [b"appended"] + later


@pytest.fixture
def failing_journal_write(monkeypatch):
    """fail(errno, written=...): the journal's next write raises that error; with written the
    bytes reach the file first (a sync whose outcome is unknown: EIO after the write)."""
    from minipulsar.storage import journal as journal_module

    def fail(code: int, written: bool):
        real = segment.pwritev_all
        state = {"left": 1}

        def pwritev_all(fd, parts, offset, dsync=False):
            if state["left"]:
                state["left"] -= 1
                if written:
                    real(fd, parts, offset, dsync=False)
                raise OSError(code, os.strerror(code))
            return real(fd, parts, offset, dsync)

        monkeypatch.setattr(journal_module.segment, "pwritev_all", pwritev_all)
    return fail


async def test_eio_fails_the_appends_fences_the_ledger_and_a_replay_keeps_the_fence(
        make_factory, tmp_path, writer, failing_journal_write):
    """fsyncgate: a write or sync that failed with EIO may or may not be on disk; it is never
    retried and called durable. Its appends fail, the ledger moves to a new ledger, and the
    entries the old journal file may hold past the fence never come back."""
    f = await make_factory(tmp_path / "a")
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    good = [await ml.add_entry(b"good%d" % i) for i in range(3)]
    failing_journal_write(errno.EIO, written=True)
    with pytest.raises(PersistenceError):
        await ml.add_entry(b"ghost")
    after = await ml.add_entry(b"after")
    assert after == Position(good[0].ledger_id + 1, 0)  # fenced: a new ledger
    assert ml.fenced_ledgers == [good[0].ledger_id] and ml.add_entry_errors == 1
    assert len(jf.list_files(os.path.join(tmp_path, "a", "journal"))) == 2  # the suspect file was retired
    assert await datas(ml) == [b"good0", b"good1", b"good2", b"after"]
    crash_copy(tmp_path / "a", tmp_path / "b")
    ml2 = await (await make_factory(tmp_path / "b")).open("t")
    assert await datas(ml2) == [b"good0", b"good1", b"good2", b"after"]


async def test_no_room_cuts_the_failed_write_off_and_numbering_goes_on(make_factory, tmp_path, writer, failing_journal_write):
    f = await make_factory(tmp_path / "a")
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    good = [await ml.add_entry(b"good%d" % i) for i in range(3)]
    failing_journal_write(errno.ENOSPC, written=True)
    with pytest.raises(PersistenceError):
        await ml.add_entry(b"lost")
    assert await ml.add_entry(b"after") == Position(good[0].ledger_id, 3)  # right after the last durable entry
    assert len(jf.list_files(os.path.join(tmp_path, "a", "journal"))) == 1
    crash_copy(tmp_path / "a", tmp_path / "b")
    ml2 = await (await make_factory(tmp_path / "b")).open("t")
    assert await datas(ml2) == [b"good0", b"good1", b"good2", b"after"]


async def test_a_name_record_cut_off_with_its_group_is_written_again(
        make_factory, tmp_path, writer, failing_journal_write):
    """A ledger's first group carries the NAME record that tells a replay its folder; when that
    group is cut off (no room), the next one must carry it again, or a replay cannot place it."""
    f = await make_factory(tmp_path / "a")
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    failing_journal_write(errno.ENOSPC, written=True)
    with pytest.raises(PersistenceError):
        await ml.add_entry(b"lost")
    await ml.add_entry(b"after")
    crash_copy(tmp_path / "a", tmp_path / "b")
    ml2 = await (await make_factory(tmp_path / "b")).open("t")
    assert await datas(ml2) == [b"after"]


def test_a_torn_journal_record_ends_the_file(tmp_path):
    folder = str(tmp_path)
    fd = jf.create_file(folder, 0)
    head = segment.RECORD_HEADER.pack(5, segment.record_crc(b"hello"))
    records = [jf.control_record(jf.NAME, 0, payload=b"t"),
               jf.entry_record(0, 3, 0, head) + head + b"hello",
               jf.entry_record(0, 3, 1, head) + head + b"hello"]
    os.write(fd, b"".join(records))
    os.close(fd)
    path = jf.file_path(folder, 0)
    assert [(r.kind, r.entry_id) for r in jf.read_records(path)] == [(jf.NAME, -1), (jf.ENTRY, 0), (jf.ENTRY, 1)]
    size = os.path.getsize(path)
    for cut in range(size - len(records[-1]), size):
        with open(path, "r+b") as f:
            f.truncate(cut)
        assert [(r.kind, r.entry_id) for r in jf.read_records(path)] == [(jf.NAME, -1), (jf.ENTRY, 0)]
    with open(path, "r+b") as f:  # a flipped bit in the middle record's data
        f.seek(len(records[0]) + jf.RECORD.size + segment.RECORD_OVERHEAD + 1)
        f.write(b"X")
    assert [r.kind for r in jf.read_records(path)] == [jf.NAME]


async def test_the_entries_of_a_round_are_released_a_slice_per_loop_turn():
    """Releasing a round over a thousand ledgers, or a busy ledger's thousands of entries, takes
    milliseconds of the loop: PROGRESS_SLICE entries per turn, so receipts and dispatch go on
    between the slices, and every ledger is released in full."""
    from minipulsar.storage.group_commit import PROGRESS_SLICE, JournalQueue

    released = []

    def ledger(i: int, held: int):
        left = {"entries": held}

        def written(ledger_id, entries, limit):
            n = min(limit, left["entries"])
            left["entries"] -= n
            released.extend([(i, ledger_id, entries)] * n)
            return n
        return types.SimpleNamespace(commit=types.SimpleNamespace(written=written))

    queue = JournalQueue(submit=lambda ops: None, seal=lambda op: None, loop=asyncio.get_running_loop())
    half = PROGRESS_SLICE // 2
    sizes = [1] * half + [3 * PROGRESS_SLICE + 7] + [2] * 50  # many ledgers, and one busy one
    queue.progress([(ledger(i, n), 7, 5) for i, n in enumerate(sizes)])
    assert released == [(i, 7, 5) for i in range(half)] + [(half, 7, 5)] * half  # the busy one cut
    await wait_for_async(lambda: len(released) == sum(sizes), "every entry of the round to be released")
    assert released == [(i, 7, 5) for i, n in enumerate(sizes) for _ in range(n)]
