"""Replication lag between two broker processes (clusters a and b) at a fixed publish rate.

Produces --rate msg/s for --seconds into cluster a with the official client; a consumer in
cluster b records, per message, now - publish_time (the origin's publish time travels with the
replicated entry). Prints p50 / p99 / max lag in ms and the counts. Run by hand:

    python bench/replication_lag.py --rate 1000 --seconds 10
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar  # noqa: E402

from minipulsar.launcher import BrokerProcess, free_port  # noqa: E402
from perf_compare import stop_brokers_on_sigterm  # noqa: E402  (bench/ is this script's folder, first on sys.path)
from tests.e2e.replication.geo import cluster_env  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--sync", action="store_true", help="journalSyncData=true (fsync every group commit)")
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    tmp = Path(tempfile.mkdtemp(prefix="repl-lag-"))
    ports = {"a": free_port(), "b": free_port()}
    peers = ",".join(f"{n}=pulsar://127.0.0.1:{p}" for n, p in ports.items())
    env = cluster_env(peers, 1000, journalSyncData=str(args.sync).lower())
    procs = {n: BrokerProcess(tmp / n, port=ports[n], args=("--cluster-name", n), env=env).start() for n in ports}
    try:
        run(procs, args)
    finally:
        for p in procs.values():
            p.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run(procs, args) -> None:
    topic = "persistent://public/default/lag"
    ca = pulsar.Client(procs["a"].url)
    cb = pulsar.Client(procs["b"].url)
    consumer = cb.subscribe(topic, "lag", initial_position=pulsar.InitialPosition.Earliest)
    producer = ca.create_producer(topic, batching_enabled=False, max_pending_messages=10000,
                                  block_if_queue_full=True)
    total = int(args.rate * args.seconds)
    lags: list[float] = []

    def consume():
        while len(lags) < total:
            try:
                msg = consumer.receive(10000)
            except pulsar.Timeout:
                return
            lags.append(time.time() * 1000 - msg.publish_timestamp())
            consumer.acknowledge(msg)

    thread = threading.Thread(target=consume)
    thread.start()
    payload = b"x" * args.size
    start = time.monotonic()
    for i in range(total):
        producer.send_async(payload, None)
        delay = start + (i + 1) / args.rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    producer.flush()
    achieved = total / (time.monotonic() - start)
    thread.join()
    lags.sort()
    print(f"published {total} at {achieved:.0f} msg/s into a; received {len(lags)} in b")
    if lags:
        print(f"replication lag ms: p50 {statistics.median(lags):.1f}  p99 {lags[int(len(lags) * 0.99) - 1]:.1f}"
              f"  max {lags[-1]:.1f}")
    ca.close()
    cb.close()


if __name__ == "__main__":
    main()
