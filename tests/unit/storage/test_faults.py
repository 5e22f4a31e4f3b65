"""Faults on real files: a write that hits the file-size limit (EFBIG, like ENOSPC) fails
the waiting appends with PersistenceError, loses nothing acknowledged, and the ledger
keeps working once space returns. The limit is RLIMIT_FSIZE, a real kernel-enforced cap."""
import asyncio
import os
import resource
import signal

import pytest

from minipulsar.storage import PersistenceError, Position, segment


@pytest.fixture
def fsize_limit():
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of a signal
    old = resource.getrlimit(resource.RLIMIT_FSIZE)

    def set_limit(n):
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, old[1]))

    yield set_limit
    resource.setrlimit(resource.RLIMIT_FSIZE, old)
    signal.signal(signal.SIGXFSZ, old_handler)


async def test_disk_full_fails_batch_and_ledger_recovers(make_factory, fsize_limit):
    f = await make_factory()
    ml = await f.open("t")
    await ml.open_cursor("keep", "earliest")
    good = [await ml.add_entry(b"g" * 1000) for _ in range(10)]
    seg_size = os.path.getsize(segment.segment_path(ml.folder, ml.current_ledger_id))
    fsize_limit(seg_size + 2500)  # room for two of the next five records, not all
    results = await asyncio.gather(*[ml.add_entry(b"f" * 1000) for _ in range(5)], return_exceptions=True)
    assert all(isinstance(r, PersistenceError) for r in results)
    assert ml.last_confirmed_position == good[-1]
    fsize_limit(resource.RLIM_INFINITY)  # space returns
    p = await ml.add_entry(b"after")
    assert p == Position(good[0].ledger_id, 10)  # numbering continues right after the last durable entry
    got = await ml.read_entries(Position(-1, -1), 100)
    assert [e.data for e in got] == [b"g" * 1000] * 10 + [b"after"]
    await f.close()
    f2 = await make_factory()
    ml2 = await f2.open("t")
    assert [e.data for e in await ml2.read_entries(Position(-1, -1), 100)] == [b"g" * 1000] * 10 + [b"after"]


async def test_cursor_persist_failure_keeps_previous_state(make_factory, fsize_limit):
    f = await make_factory(mark_delete_rate_limit=0)
    ml = await f.open("t")
    c = await ml.open_cursor("c", "earliest")
    ps = [await ml.add_entry(b"x") for _ in range(3)]
    c.mark_delete(ps[0])
    await c.flush()
    fsize_limit(10)  # no cursor slot fits
    c.mark_delete(ps[2])
    with pytest.raises(PersistenceError):
        await c.flush()
    assert c.persisted_mark_delete_position == ps[0]
    fsize_limit(resource.RLIM_INFINITY)
    await c.flush()
    assert c.persisted_mark_delete_position == ps[2]
