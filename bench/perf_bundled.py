"""Produce/consume throughput of the bundled asyncio client, used by bench/perf.py --client bundled.

    produce(url, topic, n, size, batching) -> {"messages", "seconds", "msg_per_s", "mb_per_s"}
    consume(url, topic, n)                 -> same keys
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minipulsar import client as mp  # noqa: E402


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
