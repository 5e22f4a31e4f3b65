"""What /proc says about a process, for benchmarks that measure a broker from outside (the broker
itself comes from minipulsar.launcher):

    from minipulsar.launcher import BrokerProcess
    from process_stats import rss_kib
    with BrokerProcess(Path(tmp) / "data", {"brokerMaxConnectionsPerIp": 1000}) as broker:
        print(broker.url, rss_kib(broker.pid))

/proc/<pid>/status gives VmRSS (resident now) and VmHWM (the peak resident size since start),
/proc/<pid>/fd the open descriptors, /proc/<pid>/task/*/stat each thread's CPU time.
"""
from __future__ import annotations

import os
import resource


def proc_status(pid: int) -> dict[str, str]:
    """/proc/<pid>/status as a dict ('VmRSS' -> '123456 kB', ...)."""
    with open(f"/proc/{pid}/status") as status:
        return dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)


def _kib(pid: int, field: str) -> int:
    return int(proc_status(pid)[field].split()[0])


def rss_kib(pid: int) -> int:
    """Resident set size now (VmRSS), KiB."""
    return _kib(pid, "VmRSS")


def peak_rss_kib(pid: int) -> int:
    """The highest resident set size since the process started (VmHWM), KiB."""
    return _kib(pid, "VmHWM")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def raise_nofile_limit() -> int:
    """Lift this process's soft RLIMIT_NOFILE to the hard limit (connection scenarios open
    thousands of sockets); returns the new soft limit. Children started later inherit it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def slope_kib_per_minute(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, KiB) samples, in KiB per minute: growth as one number."""
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_r = sum(r for _, r in samples) / n
    cov = sum((t - mean_t) * (r - mean_r) for t, r in samples)
    var = sum((t - mean_t) ** 2 for t, _ in samples) or 1.0
    return cov / var * 60


def stat_cpu(path: str) -> tuple[str, float]:
    """(name, user + system CPU seconds so far) from a /proc stat file: /proc/<pid>/stat for a
    process (its threads, ended ones too), /proc/<pid>/task/<tid>/stat for one thread."""
    with open(path) as stat:
        head, _, rest = stat.read().rpartition(")")  # the name, in parentheses, may hold anything
    fields = rest.split()
    return head.partition("(")[2], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """User + system CPU seconds each thread of process pid has used so far, by thread name
    (threads of one name summed, the main thread named "main"). A thread that has ended is
    missing, so a difference of two of these counts live threads only."""
    seconds: dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name, spent = stat_cpu(f"/proc/{pid}/task/{tid}/stat")
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        name = "main" if int(tid) == pid else name
        seconds[name] = seconds.get(name, 0.0) + spent
    return seconds


def thread_cpu_between(start: dict[str, float], end: dict[str, float]) -> dict[str, float]:
    """CPU seconds per thread name from one thread_cpu_seconds snapshot to a later one."""
    return {name: spent - start.get(name, 0.0) for name, spent in end.items()}
