"""The disk's own synced-write latency, the floor under a synced publish: small appends to one
preallocated file, each written with ``pwritev(..., RWF_DSYNC)`` (what the journal does for a group),
at a steady rate as a publish at that rate would ask for them.

    python bench/disk_sync.py                      # 1,000 writes/s of 1,300 B for 10 s, in a temp dir
    python bench/disk_sync.py --rate 0 --seconds 2 # back to back
    python bench/disk_sync.py --dir /data          # on the disk a broker's data dir would use

Prints p50 / p99 / p99.9 / max in ms, how many writes took over --slow-ms, and the largest number of
those in any 250 ms window (slow writes on a virtual disk come in bursts). Run it the same hour as
bench/latency.py: a broker that syncs cannot answer faster than this, and days differ.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time

from percentile import percentile  # bench/ is this script's folder, first on sys.path

BURST_WINDOW_SECONDS = 0.25
GROUP_BYTES = 1300  # about what the journal writes for a 1 ms group of ten 100 B messages


def timed_writes(folder: str, rate: int, seconds: float, size: int) -> list[tuple[float, float]]:
    """(start, seconds taken) of each synced write; the file is preallocated and synced first, so a
    write changes no metadata (as the journal's zeros ahead)."""
    path = os.path.join(folder, "disk_sync.probe")
    count = int(rate * seconds)
    span = 64 << 20
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, bytes(span), 0)
        os.fsync(fd)
        record, offset, timings = [b"x" * size], 0, []
        start = time.perf_counter()
        while len(timings) < count if rate else time.perf_counter() - start < seconds:
            if rate:
                due = start + len(timings) / rate
                while (now := time.perf_counter()) < due:
                    time.sleep(min(due - now, 0.0002))
            began = time.perf_counter()
            os.pwritev(fd, record, offset, os.RWF_DSYNC)
            timings.append((began, time.perf_counter() - began))
            offset = (offset + size) % (span - size)
        return timings
    finally:
        os.close(fd)
        os.unlink(path)


def largest_burst(slow_starts: list[float]) -> int:
    """The most slow writes that started within any BURST_WINDOW_SECONDS."""
    most, first = 0, 0
    for last, started in enumerate(slow_starts):
        while started - slow_starts[first] > BURST_WINDOW_SECONDS:
            first += 1
        most = max(most, last - first + 1)
    return most


def summary(timings: list[tuple[float, float]], size: int, slow_ms: float = 0.5) -> str:
    """One line of figures for timed_writes' result."""
    ms = [taken * 1e3 for _, taken in timings]
    slow = [began for began, taken in timings if taken * 1e3 > slow_ms]
    p50, p99, p999 = (percentile(ms, q) for q in (0.5, 0.99, 0.999))
    return (f"{len(ms)} synced writes of {size} B: p50 {p50:.3f}  p99 {p99:.3f}  p99.9 {p999:.3f}  "
            f"max {max(ms):.3f} ms;  over {slow_ms} ms: {len(slow)} ({100 * len(slow) / len(ms):.1f} %), "
            f"at most {largest_burst(slow)} in {BURST_WINDOW_SECONDS * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000, help="writes per second; 0: back to back")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--size", type=int, default=GROUP_BYTES, help="bytes per write")
    parser.add_argument("--slow-ms", type=float, default=0.5)
    parser.add_argument("--dir", default=None, help="where to write (default: the temp dir the benchmarks use)")
    args = parser.parse_args()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        timings = timed_writes(folder, args.rate, args.seconds, args.size)
    print(summary(timings, args.size, args.slow_ms))


if __name__ == "__main__":
    main()
