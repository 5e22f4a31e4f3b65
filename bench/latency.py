"""Publish latency at a steady rate, unbatched, with the official client: minipulsar (fsync on)
beside pulsar-lite in the same run.

    python bench/latency.py                         # 10,000 msg/s for 20 s, 100-byte messages
    python bench/latency.py --rate 5000 --seconds 30 --rounds 3
    python bench/latency.py --brokers minipulsar minipulsar-unsynced pulsar-lite  # what the fsync costs

Messages are sent in 1 ms ticks (rate/1000 per tick) and each one's latency is measured from its
send_async call to its callback. Prints p50 / p99 / p99.9 / max in ms and the rate achieved, per
broker and round, then the median over rounds, with the broker process's CPU per message (cpu_us,
user + system, all its threads) and this process's CPU in cores (client_cores: the sender and the
official client's threads). The two share the machine's cores: when together they need about all
of them, every broker's latency is mostly waiting for a core, and the figures say so.
minipulsar-unsynced is minipulsar with journalSyncData off, pulsar-lite's terms: beside the synced
run it shows how much of the latency is the disk's. Last, bench/disk_sync.py times the disk alone
for --disk-seconds: 1,000 synced writes a second, about what the journal writes at 10,000 msg/s.
"""
from __future__ import annotations

import argparse
import functools
import shlex
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from disk_sync import GROUP_BYTES, summary, timed_writes  # noqa: E402
from percentile import percentile  # noqa: E402
from perf_compare import cpu_seconds, minipulsar, own_cpu_seconds, pulsar_lite, stop_brokers_on_sigterm  # noqa: E402  (bench/ is not a package)

BROKERS = {"minipulsar": minipulsar, "minipulsar-unsynced": functools.partial(minipulsar, sync=False),
           "pulsar-lite": pulsar_lite}


def steady_publish(url, rate: int, seconds: float, size: int) -> dict:
    """url: a BrokerURL (the broker's pid is read for its CPU)."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(f"persistent://public/default/lat-{uuid.uuid4().hex[:8]}",
                                      batching_enabled=False, block_if_queue_full=True, max_pending_messages=10000)
    latencies: list[float] = []
    done = threading.Event()
    total = int(rate * seconds)
    payload = b"x" * size

    def callback(result, _message_id, started):
        latencies.append(time.perf_counter() - started)
        if len(latencies) == total:
            done.set()

    per_tick, start = max(1, rate // 1000), time.perf_counter()
    broker_cpu, own_cpu = cpu_seconds(url.pid), own_cpu_seconds()
    for sent in range(0, total, per_tick):
        due = start + sent / rate
        while (now := time.perf_counter()) < due:
            time.sleep(min(due - now, 0.0005))  # pacing the sender, not waiting on the broker
        for _ in range(min(per_tick, total - sent)):
            t0 = time.perf_counter()
            producer.send_async(payload, lambda r, m, t0=t0: callback(r, m, t0))
    done.wait(60)
    elapsed = time.perf_counter() - start
    broker_cpu, own_cpu = cpu_seconds(url.pid) - broker_cpu, own_cpu_seconds() - own_cpu
    producer.close()
    client.close()
    ms = [x * 1e3 for x in latencies]
    return {"rate": len(ms) / elapsed, "p50": percentile(ms, 0.5), "p99": percentile(ms, 0.99),
            "p99.9": percentile(ms, 0.999), "max": max(ms), "cpu_us": broker_cpu / len(ms) * 1e6,
            "client_cores": own_cpu / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=10_000, help="messages per second")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--brokers", nargs="+", default=["minipulsar", "pulsar-lite"], choices=list(BROKERS))
    parser.add_argument("--disk-seconds", type=float, default=5,
                        help="then time the disk's own synced writes (bench/disk_sync.py) this long; 0: no")
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    results: dict[str, list[dict]] = {name: [] for name in args.brokers}
    for round_no in range(args.rounds):
        for name in args.brokers:
            with tempfile.TemporaryDirectory() as workdir, BROKERS[name](False, args, workdir) as url:
                figures = steady_publish(url, args.rate, args.seconds, args.size)
            results[name].append(figures)
            print(f"round {round_no + 1} {name:19s} " + "  ".join(f"{k} {v:,.2f}" for k, v in figures.items()))
    medians = {name: {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
               for name, rounds in results.items()}
    for name, figures in medians.items():
        print(f"median {name:19s} " + "  ".join(f"{k} {v:,.2f}" for k, v in figures.items()))
    if "pulsar-lite" in medians:  # the targets are these ratios
        lite = medians["pulsar-lite"]
        for name in (name for name in medians if name != "pulsar-lite"):
            print(f"{name} / pulsar-lite: p50 {medians[name]['p50'] / lite['p50']:.2f}x  "
                  f"p99 {medians[name]['p99'] / lite['p99']:.2f}x")
    if args.disk_seconds:  # the floor under a synced publish, the same hour
        with tempfile.TemporaryDirectory() as folder:
            timings = timed_writes(folder, 1000, args.disk_seconds, GROUP_BYTES)
        print("the disk alone, 1,000 a second:", summary(timings, GROUP_BYTES))


if __name__ == "__main__":
    main()
