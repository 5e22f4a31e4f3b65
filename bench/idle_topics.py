"""What idle topics and idle connections cost a broker: threads, open descriptors, resident memory;
minipulsar (fsync on) beside pulsar-lite in the same run.

    python bench/idle_topics.py                         # 10,000 idle topics, 5,000 idle connections
    python bench/idle_topics.py --topics 2000 --connections 1000

For each broker: threads (/proc/<pid>/task), descriptors (/proc/<pid>/fd) and RSS (VmRSS) after
start, after --topics topics were loaded (the official client subscribes to each with a durable
subscription, which keeps the topic from being deleted as inactive, then closes the consumer),
and after --connections sockets completed CONNECT and then stayed silent. Prints the figures and
the growth per 1,000 topics / connections.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_compare import minipulsar, pulsar_lite, stop_brokers_on_sigterm  # noqa: E402  (bench/ is not a package)
from memory import idle_connections  # noqa: E402
from process_stats import open_fds, rss_kib  # noqa: E402

BROKERS = {"minipulsar": minipulsar, "pulsar-lite": pulsar_lite}


def figures(pid: int) -> dict[str, int]:
    return {"threads": len(os.listdir(f"/proc/{pid}/task")), "fds": open_fds(pid), "rss_mib": rss_kib(pid) // 1024}


def load_topics(url: str, count: int) -> None:
    client = pulsar.Client(url, operation_timeout_seconds=60, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        base = f"persistent://public/default/idle-{uuid.uuid4().hex[:8]}"
        for i in range(count):
            client.subscribe(f"{base}-{i}", "keep").close()
    finally:
        client.close()


def measure(name: str, args) -> list[tuple[str, dict[str, int]]]:
    rows = []
    with tempfile.TemporaryDirectory() as workdir, BROKERS[name](False, args, workdir) as url:
        rows.append(("started", figures(url.pid)))
        started = time.monotonic()
        load_topics(url, args.topics)
        rows.append((f"+{args.topics} topics ({time.monotonic() - started:.0f} s)", figures(url.pid)))
        sockets = idle_connections(int(url.rsplit(":", 1)[1]), args.connections)
        rows.append((f"+{args.connections} connections", figures(url.pid)))
        for sock in sockets:
            sock.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=5_000)
    parser.add_argument("--brokers", nargs="+", default=list(BROKERS), choices=list(BROKERS))
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    print("$ python bench/idle_topics.py " + shlex.join(sys.argv[1:]), flush=True)
    for name in args.brokers:
        rows = measure(name, args)
        for label, values in rows:
            print(f"{name:11s} {label:28s} threads {values['threads']:4d}  fds {values['fds']:6d}  "
                  f"RSS {values['rss_mib']:6d} MiB", flush=True)
        (_, start), (_, topics), (_, conns) = rows
        per_topics = {k: (topics[k] - start[k]) * 1000 / max(1, args.topics) for k in start}
        per_conns = {k: (conns[k] - topics[k]) * 1000 / max(1, args.connections) for k in start}
        print(f"{name:11s} per 1,000 topics: threads {per_topics['threads']:+.1f}  fds {per_topics['fds']:+.1f}  "
              f"RSS {per_topics['rss_mib']:+.1f} MiB;  per 1,000 connections: fds {per_conns['fds']:+.1f}  "
              f"RSS {per_conns['rss_mib']:+.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
