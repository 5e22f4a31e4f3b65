"""Recovery on real files: torn tails cut at every byte, corrupt records reported, indexes rebuilt."""
import glob
import logging
import os
import shutil

import pytest

from minipulsar.storage import LedgerCorruptionError, Position
from minipulsar.storage import segment


def seg_files(folder):
    return sorted(glob.glob(os.path.join(folder, "*.seg")))


async def write_and_close(make_factory, data_dir, datas, **cfg):
    f = await make_factory(data_dir, **cfg)
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    ps = [await ml.add_entry(d) for d in datas]
    folder = ml.folder
    await f.close()
    return folder, ps


async def test_torn_tail_cut_at_every_byte_of_last_record(make_factory, tmp_path):
    datas = [b"first-entry", b"second", b"the-last-record-is-torn"]
    src = tmp_path / "src"
    folder, ps = await write_and_close(make_factory, src, datas, sync_data=False)
    seg = segment.segment_path(folder, ps[-1].ledger_id)
    idx = segment.load_index(folder, ps[-1].ledger_id)
    last_start, full = idx.offsets[-1], idx.end_offset
    rel = os.path.relpath(folder, src)
    for cut in range(last_start, full):
        dst = tmp_path / f"cut{cut}"
        shutil.copytree(src, dst)
        os.unlink(os.path.join(dst, "LOCK"))
        dfolder = os.path.join(dst, rel)
        os.unlink(segment.index_path(dfolder, ps[-1].ledger_id))  # as after a crash: never sealed
        with open(os.path.join(dfolder, os.path.basename(seg)), "r+b") as fh:
            fh.truncate(cut)
        f = await make_factory(dst, sync_data=False)
        ml = await f.open("t")
        got = await ml.read_entries(Position(-1, -1), 10)
        assert [e.data for e in got] == datas[:-1], cut
        assert ml.last_confirmed_position == ps[-2]
        p = await ml.add_entry(b"after")  # still appendable
        assert (await ml.read_entry(p)).data == b"after"
        await f.close()
        shutil.rmtree(dst)


async def test_zero_filled_and_garbage_tail_is_cut(make_factory, tmp_path):
    folder, ps = await write_and_close(make_factory, tmp_path / "d", [b"a", b"bb"], sync_data=False)
    lid = ps[-1].ledger_id
    os.unlink(segment.index_path(folder, lid))
    with open(segment.segment_path(folder, lid), "ab") as fh:
        fh.write(b"\0" * 64 + b"\x05\0\0\0garbage")
    f = await make_factory(tmp_path / "d", sync_data=False)
    ml = await f.open("t")
    assert [e.data for e in await ml.read_entries(Position(-1, -1), 10)] == [b"a", b"bb"]
    assert os.path.getsize(segment.segment_path(folder, lid)) == segment.load_index(folder, lid).end_offset


async def test_corrupt_record_in_sealed_segment_raises_on_read(make_factory, tmp_path, caplog):
    datas = [bytes([65 + i]) * 50 for i in range(10)]
    folder, ps = await write_and_close(make_factory, tmp_path / "d", datas)
    lid = ps[0].ledger_id
    idx = segment.load_index(folder, lid)
    with open(segment.segment_path(folder, lid), "r+b") as fh:  # flip one data byte of entry 5
        fh.seek(idx.offsets[5] + segment.RECORD_OVERHEAD + 10)
        fh.write(b"\xff")
    caplog.set_level(logging.ERROR)
    f = await make_factory(tmp_path / "d")
    ml = await f.open("t")
    assert (await ml.read_entry(ps[4])).data == datas[4]
    assert (await ml.read_entry(ps[6])).data == datas[6]
    with pytest.raises(LedgerCorruptionError, match=f"{lid}:5"):
        await ml.read_entry(ps[5])
    with pytest.raises(LedgerCorruptionError):
        await ml.read_entries(ps[3], 5)
    assert "corrupt record" in caplog.text


async def test_sealed_segment_without_index_is_rescanned_not_cut(make_factory, tmp_path, caplog):
    d = tmp_path / "d"
    folder, ps1 = await write_and_close(make_factory, d, [b"x%d" % i for i in range(6)])
    f = await make_factory(d)
    ml = await f.open("t")
    for i in range(3):
        await ml.add_entry(b"y%d" % i)
    await f.close()
    lid = ps1[0].ledger_id
    idx = segment.load_index(folder, lid)
    os.unlink(segment.index_path(folder, lid))
    with open(segment.segment_path(folder, lid), "r+b") as fh:  # corrupt entry 2's data
        fh.seek(idx.offsets[2] + segment.RECORD_OVERHEAD)
        fh.write(b"Z")
    caplog.set_level(logging.WARNING)
    f = await make_factory(d)
    ml = await f.open("t")
    assert ml.number_of_entries == 9  # nothing silently skipped or cut
    assert (await ml.read_entry(ps1[3])).data == b"x3"
    with pytest.raises(LedgerCorruptionError):
        await ml.read_entry(ps1[2])
    assert "no valid index" in caplog.text and "corrupt" in caplog.text
    assert segment.load_index(folder, lid) is not None  # index rebuilt


async def test_open_uses_persisted_index_without_scanning(make_factory, tmp_path, monkeypatch):
    folder, ps = await write_and_close(make_factory, tmp_path / "d", [b"z" * 100] * 500, sync_data=False)
    scanned = []
    monkeypatch.setattr(segment, "scan_segment", lambda *a, **k: scanned.append(a))
    f = await make_factory(tmp_path / "d", sync_data=False)
    ml = await f.open("t")
    assert ml.number_of_entries == 500 and scanned == []


async def test_a_segment_that_lost_its_header_is_rebuilt_from_the_journal(make_factory, tmp_path):
    """A power loss right after a segment's creation can leave it empty while the journal holds
    its entries: recovery writes the header before the replay appends them."""
    datas = [b"one", b"two", b"three"]
    f = await make_factory(tmp_path / "live")
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    ps = [await ml.add_entry(d) for d in datas]  # durable in the journal once resolved
    shutil.copytree(tmp_path / "live", tmp_path / "cut")  # the disk as the power loss left it
    await f.close()
    os.unlink(tmp_path / "cut" / "LOCK")
    folder = os.path.join(tmp_path / "cut", os.path.relpath(ml.folder, tmp_path / "live"))
    with open(segment.segment_path(folder, ps[0].ledger_id), "wb"):
        pass  # created, nothing of it synced
    f = await make_factory(tmp_path / "cut")
    ml = await f.open("t")
    assert [e.data for e in await ml.read_entries(Position(-1, -1), 10)] == datas
    await f.close()
    f = await make_factory(tmp_path / "cut")  # and the repaired segment opens again
    ml = await f.open("t")
    assert [e.data for e in await ml.read_entries(Position(-1, -1), 10)] == datas
    await f.close()
