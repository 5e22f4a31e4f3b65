"""Storage benchmark (run by hand): append throughput, cursor ack rate, ledger open time,
each compared with the disk's own sequential write bandwidth measured in the same run.

    python bench/storage_bench.py [--dir /path/on/the/disk] [--seconds 2] [--open-gib 1]
                                  [--sizes 100,1024,65536] [--concurrency 1,16,256] [--no-sync-off]

Targets (sync on): >= 150,000 appends/s of 100 B entries with 256 appenders;
>= 70% of the disk's sequential bandwidth with 64 KiB entries; open of 1 GiB < 2 s.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minipulsar.storage import ManagedLedgerConfig, ManagedLedgerFactory, Position  # noqa: E402

MIB = 1024 * 1024


def disk_bandwidth(folder: str, total_mb: int = 1024, sync_every_mb: int = 4) -> float:
    """MB/s of 64 KiB os.write calls with fdatasync (then page drop) every ``sync_every_mb`` MB (dd-like)."""
    path = os.path.join(folder, "disk-bench.tmp")
    block = os.urandom(64 * 1024)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    written = 0
    try:
        while written < total_mb * MIB:
            os.write(fd, block)
            written += len(block)
            if written % (sync_every_mb * MIB) == 0:
                os.fdatasync(fd)
                # same page-cache treatment as the ledger's writer, so the ratio compares like with like
                os.posix_fadvise(fd, written - sync_every_mb * MIB, sync_every_mb * MIB, os.POSIX_FADV_DONTNEED)
        os.fdatasync(fd)
    finally:
        os.close(fd)
        os.unlink(path)
    return written / MIB / (time.perf_counter() - t0)


async def append_case(folder: str, size: int, conc: int, sync: bool, seconds: float) -> tuple[float, float]:
    """(appends/s, MB/s) of ``conc`` concurrent appenders of ``size``-byte entries for ``seconds``."""
    shutil.rmtree(folder, ignore_errors=True)
    factory = ManagedLedgerFactory(folder, ManagedLedgerConfig(sync_data=sync))
    await factory.start()
    ml = await factory.open("bench/topic")
    data = os.urandom(size)
    count = 0
    stop = False

    async def appender():
        nonlocal count
        add = ml.add_entry
        while not stop:
            await add(data)
            count += 1

    tasks = [asyncio.create_task(appender()) for _ in range(conc)]
    await asyncio.sleep(0.2)  # warm-up
    start_count, t0 = count, time.perf_counter()
    await asyncio.sleep(seconds)
    n, elapsed = count - start_count, time.perf_counter() - t0
    stop = True
    await asyncio.gather(*tasks)
    await factory.close()
    shutil.rmtree(folder, ignore_errors=True)
    return n / elapsed, n * size / MIB / elapsed


async def ack_case(folder: str, entries: int = 200_000) -> tuple[float, float]:
    """(individual acks/s, cumulative mark-deletes/s) on a durable cursor (persists rate-limited)."""
    shutil.rmtree(folder, ignore_errors=True)
    factory = ManagedLedgerFactory(folder, ManagedLedgerConfig(sync_data=False))
    await factory.start()
    ml = await factory.open("bench/acks")
    cur = await ml.open_cursor("sub", "earliest")
    await asyncio.gather(*[ml.add_entry(b"x") for _ in range(entries)])
    lid = ml.last_confirmed_position.ledger_id
    positions = [Position(l, e) for l in range(ml.first_position.ledger_id, lid + 1)
                 for e in range(ml.config.max_entries_per_ledger)][:entries]
    # individual acks: odd entries first (holes), then the even ones (ranges merge away)
    t0 = time.perf_counter()
    for p in positions[1::2]:
        cur.delete((p,))
    for p in positions[0::2]:
        cur.delete((p,))
    individual = entries / (time.perf_counter() - t0)
    assert cur.number_of_entries_in_backlog() == 0
    cur.reset_cursor(positions[0])
    t0 = time.perf_counter()
    for p in positions:
        cur.mark_delete(p)
    cumulative = entries / (time.perf_counter() - t0)
    await factory.close()
    shutil.rmtree(folder, ignore_errors=True)
    return individual, cumulative


async def open_case(folder: str, gib: float, entry_size: int = 1024) -> tuple[float, int]:
    """Seconds to open a ledger holding ``gib`` GiB of ``entry_size`` entries (written unsynced)."""
    shutil.rmtree(folder, ignore_errors=True)
    cfg = ManagedLedgerConfig(sync_data=False)
    factory = ManagedLedgerFactory(folder, cfg)
    await factory.start()
    ml = await factory.open("bench/open")
    await ml.open_cursor("keep", "earliest")  # keep everything from trimming
    total = int(gib * 1024 * MIB // entry_size)
    data = os.urandom(entry_size)
    for _ in range(0, total, 10_000):
        await asyncio.gather(*[ml.add_entry(data) for _ in range(10_000)])
    await factory.close()
    factory = ManagedLedgerFactory(folder, cfg)
    await factory.start()
    t0 = time.perf_counter()
    ml = await factory.open("bench/open")
    elapsed = time.perf_counter() - t0
    n = ml.number_of_entries
    await factory.close()
    shutil.rmtree(folder, ignore_errors=True)
    return elapsed, n


async def main(args) -> None:
    base = tempfile.mkdtemp(prefix="storage-bench-", dir=args.dir)
    try:
        print("command:", " ".join([os.path.basename(sys.executable), *sys.argv]))
        print(f"dir: {base}  loop: {type(asyncio.get_running_loop()).__module__}  cpus: {os.cpu_count()}")
        disk = disk_bandwidth(base, args.disk_mb)
        print(f"disk sequential write ({args.disk_mb} MB in 64 KiB writes, fdatasync every 4 MB): {disk:.1f} MB/s")
        print(f"{'entry':>7} {'appenders':>9} {'sync':>5} {'appends/s':>11} {'MB/s':>8} {'vs disk':>8}")
        syncs = [True] if args.no_sync_off else [True, False]
        for sync in syncs:
            for size in args.sizes:
                for conc in args.concurrency:
                    rate, mbps = await append_case(os.path.join(base, "a"), size, conc, sync, args.seconds)
                    print(f"{size:>7} {conc:>9} {'on' if sync else 'off':>5} {rate:>11,.0f} {mbps:>8.1f} "
                          f"{mbps / disk:>7.0%}", flush=True)
        individual, cumulative = await ack_case(os.path.join(base, "c"))
        print(f"cursor acks: individual delete {individual:,.0f}/s, cumulative mark_delete {cumulative:,.0f}/s")
        if args.open_gib > 0:
            t, n = await open_case(os.path.join(base, "o"), args.open_gib)
            print(f"ledger open: {args.open_gib} GiB of 1 KiB entries ({n:,} entries) in {t:.3f} s "
                  f"(= {args.open_gib * 1024 / t:,.0f} MB/s of data, {args.open_gib * 1024 / t / disk:.1f}x disk)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", default=None, help="parent folder on the disk to measure (default: system temp)")
    p.add_argument("--seconds", type=float, default=2.0, help="measured seconds per append case")
    p.add_argument("--open-gib", type=float, default=1.0, help="GiB for the open-time case (0 = skip)")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100, 1024, 65536])
    p.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16, 256])
    p.add_argument("--disk-mb", type=int, default=1024, help="MB written to measure the disk's bandwidth")
    p.add_argument("--no-sync-off", action="store_true", help="only measure with sync on")
    return p.parse_args()


if __name__ == "__main__":
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main(parse_args()))
