"""Topic compaction throughput: a broker process, --messages keyed messages over --keys keys, then
one compaction timed end to end (REST trigger to SUCCESS), and a read_compacted reader over the view.

    python bench/compaction.py                                  # 1,000,000 messages, 10,000 keys, 100 B
    python bench/compaction.py --messages 200000 --keys 1000 --size 1024

Prints messages/s and MB/s of the compaction (messages and entry bytes it read), the compacted
ledger's entries and size, and the reader's rate over the view. The broker runs with fsync on, as
users run it; the producer batches (the official client, 1,000 messages per batch at most).
"""
from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pulsar
import requests

from minipulsar.launcher import BrokerProcess
from perf_compare import stop_brokers_on_sigterm  # bench/ is this script's folder, first on sys.path


def produce(client: pulsar.Client, topic: str, messages: int, keys: int, size: int) -> float:
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=1000,
                                      batching_max_publish_delay_ms=5, block_if_queue_full=True,
                                      max_pending_messages=10000)
    payload = b"x" * size
    started = time.perf_counter()
    for i in range(messages):
        producer.send_async(payload, None, partition_key=f"key-{i % keys}")
    producer.flush()
    producer.close()
    return time.perf_counter() - started


def compact(base: str) -> float:
    started = time.perf_counter()
    requests.put(base + "/compaction", timeout=30).raise_for_status()
    while (status := requests.get(base + "/compaction", timeout=30).json())["status"] == "RUNNING":
        time.sleep(0.05)  # status poll
    if status["status"] != "SUCCESS":
        raise SystemExit(f"compaction failed: {status}")
    return time.perf_counter() - started


def read_view(client: pulsar.Client, topic: str) -> tuple[int, float]:
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    started, count = time.perf_counter(), 0
    while reader.has_message_available():
        reader.read_next(10000)
        count += 1
    reader.close()
    return count, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=100, help="payload bytes")
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", log_level="WARNING", startup_timeout=60).start()
        port, web_port = broker.port, broker.web_port
        client = pulsar.Client(f"pulsar://127.0.0.1:{port}", logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            topic = f"persistent://public/default/compaction-bench-{uuid.uuid4().hex[:8]}"
            base = f"http://127.0.0.1:{web_port}/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}"
            produce_s = produce(client, topic, args.messages, args.keys, args.size)
            stored = requests.get(base + "/stats", timeout=30).json()["storageSize"]
            compact_s = compact(base)
            view = requests.get(base + "/internalStats", timeout=30).json()["compactedLedger"]
            count, read_s = read_view(client, topic)
        finally:
            client.close()
            broker.stop()
    print(f"produced {args.messages:,} messages ({args.size} B, {args.keys:,} keys) in {produce_s:.1f} s; "
          f"topic {stored / 1e6:.1f} MB")
    print(f"compaction: {compact_s:.2f} s = {args.messages / compact_s:,.0f} msg/s, "
          f"{stored / compact_s / 1e6:.1f} MB/s (trigger to SUCCESS, both phases)")
    print(f"compacted ledger: {view['entries']:,} entries, {view['size'] / 1e6:.2f} MB")
    print(f"read_compacted reader: {count:,} messages in {read_s:.2f} s = {count / read_s:,.0f} msg/s")
    if count != args.keys:
        raise SystemExit(f"expected {args.keys} messages in the view, read {count}")


if __name__ == "__main__":
    main()
