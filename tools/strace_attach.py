"""strace attached to every thread of a running process, returned once the kernel shows each one
traced (a developer tool, used by the strace benchmarks and tests).

strace has no ready signal of its own: /proc/<pid>/task/<tid>/status names each thread's tracer
(TracerPid), so the caller knows nothing it does afterwards goes untraced.
"""
from __future__ import annotations

import os
import subprocess
import time


def attach_strace(pid: int, options: list[str], timeout: float = 20.0) -> subprocess.Popen:
    """`strace <options> -p <tid> ...` on every thread of pid (options: -f to follow new threads,
    -o FILE, -e trace=...); returns the strace process once every thread is traced. Raises
    RuntimeError when strace exits first or has not attached after timeout seconds."""
    tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    argv = ["strace", *options]
    for tid in tids:
        argv += ["-p", str(tid)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while not all(tracer_of(pid, tid) == proc.pid for tid in tids):
        if proc.poll() is not None:
            raise RuntimeError(f"strace exited ({proc.returncode}) before attaching to {pid}")
        if time.monotonic() >= deadline:
            proc.kill()
            raise RuntimeError(f"strace did not attach to every thread of {pid} within {timeout} s")
        time.sleep(0.01)  # the poll interval of this deadline-bounded wait
    return proc


def tracer_of(pid: int, tid: int) -> int:
    """The pid tracing thread tid of pid (0: none)."""
    with open(f"/proc/{pid}/task/{tid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("TracerPid:"))
