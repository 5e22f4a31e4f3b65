"""Produce/consume throughput of the bundled client, importable by bench/perf.py.

    produce(url, topic, n, size, batching) -> {"messages", "seconds", "msg_per_s", "mb_per_s"}
    consume(url, topic, n)                 -> same keys

Run directly to measure the bundled client next to the official one against a broker it starts
(a `python -m broker broker` child process on a free port, temporary data dir):

    python bench/perf_bundled.py [-n 100000] [--size 100] [--no-batching] [--url pulsar://...]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import client as mp  # noqa: E402


def _figures(n: int, size: int, seconds: float) -> dict:
    return {"messages": n, "seconds": round(seconds, 3), "msg_per_s": round(n / seconds),
            "mb_per_s": round(n * size / seconds / 1e6, 2)}


async def produce(url: str, topic: str, n: int, size: int, batching: bool) -> dict:
    """Publish n messages of size bytes with send_async (pipelined), wait for every receipt."""
    payload = os.urandom(size)
    async with mp.Client(url, operation_timeout_seconds=30) as client:
        producer = await client.create_producer(
            topic, batching_enabled=batching, batching_max_messages=1000, batching_max_publish_delay_ms=10,
            max_pending_messages=5000, block_if_queue_full=True)
        started = time.perf_counter()
        futures = [await producer.send_async(payload) for _ in range(n)]
        await producer.flush()
        elapsed = time.perf_counter() - started
        failed = sum(1 for f in futures if f.exception() is not None)
        if failed:
            raise RuntimeError(f"{failed} sends failed")
    return _figures(n, size, elapsed)


async def consume(url: str, topic: str, n: int) -> dict:
    """Receive and acknowledge n messages from the start of topic (subscription 'perf', Earliest)."""
    async with mp.Client(url, operation_timeout_seconds=30) as client:
        consumer = await client.subscribe(topic, "perf", initial_position=mp.InitialPosition.Earliest,
                                          receiver_queue_size=1000)
        started = time.perf_counter()
        size = 0
        for _ in range(n):
            msg = await consumer.receive(30_000)
            size += len(msg.data())
            await consumer.acknowledge(msg)
        elapsed = time.perf_counter() - started
    return _figures(n, size // max(n, 1), elapsed)


def official_produce(url: str, topic: str, n: int, size: int, batching: bool) -> dict:
    import pulsar
    payload = os.urandom(size)
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, batching_enabled=batching, batching_max_messages=1000,
                                      batching_max_publish_delay_ms=10, max_pending_messages=5000,
                                      block_if_queue_full=True)
    started = time.perf_counter()
    for _ in range(n):
        producer.send_async(payload, None)
    producer.flush()
    elapsed = time.perf_counter() - started
    client.close()
    return _figures(n, size, elapsed)


def official_consume(url: str, topic: str, n: int, size: int) -> dict:
    import pulsar
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(topic, "perf", initial_position=pulsar.InitialPosition.Earliest)
    started = time.perf_counter()
    for _ in range(n):
        consumer.acknowledge(consumer.receive(30_000))
    elapsed = time.perf_counter() - started
    client.close()
    return _figures(n, size, elapsed)


def _start_broker() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="perf-bundled-")
    proc = subprocess.Popen([sys.executable, "-m", "broker", "broker", "--data-dir", data, "--broker-service-port",
                             str(port), "--bind-address", "127.0.0.1"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, f"pulsar://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("broker did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--no-batching", action="store_true")
    parser.add_argument("--url")
    args = parser.parse_args()
    batching = not args.no_batching
    proc, url = (None, args.url) if args.url else _start_broker()
    try:
        for name in ("bundled", "official"):
            topic = f"persistent://public/default/perf-{name}-{uuid.uuid4().hex[:8]}"
            if name == "bundled":
                p = asyncio.run(produce(url, topic, args.n, args.size, batching))
                c = asyncio.run(consume(url, topic, args.n))
            else:
                p = official_produce(url, topic, args.n, args.size, batching)
                c = official_consume(url, topic, args.n, args.size)
            print(f"{name:8s} produce: {p['msg_per_s']:>9,} msg/s {p['mb_per_s']:>7} MB/s   "
                  f"consume: {c['msg_per_s']:>9,} msg/s {c['mb_per_s']:>7} MB/s   "
                  f"(n={args.n}, size={args.size}, batching={batching})")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
