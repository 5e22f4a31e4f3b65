"""pulsar-perf style throughput and latency check against any pulsar:// URL.

    python bench/perf.py --url pulsar://127.0.0.1:6650 [--messages 50000] [--size 1024]
    python bench/perf.py --url A --url B       # compare two brokers side by side in one run
    python bench/perf.py --embedded            # also start a minipulsar broker process on a temp dir
    python bench/perf.py --embedded --key-shared 4 --keys 1000   # Key_Shared: 4 consumers, 1000 keys
    python bench/perf.py --embedded --client bundled             # the bundled asyncio client instead
    python bench/perf.py --compare [--rounds 2]   # minipulsar vs pulsar-lite vs the null broker

For each URL and for batching off and on it publishes --messages messages of --size bytes with
send_async (at most --max-pending in flight), records the publish latency (send_async call to its
callback) of every 20th message, then consumes them all on an Exclusive subscription created
before publishing.
Prints msg/s, MB/s and publish latency p50/p99/p99.9 in ms, with the official pulsar client
(or, with --client bundled, msg/s and MB/s of the bundled client from bench/perf_bundled.py).

--compare instead starts minipulsar (fsync on), pulsar-lite and the storage-less null broker
(bench/null_broker) in alternating rounds and prints a table of median msg/s, ratio to pulsar-lite
and percentage of the null broker's ceiling (bench/perf_compare.py). It defaults to 100,000
messages of 100 bytes (500,000 for the batched figures, --batched-messages); the other modes
default to 50,000 of 1,024.
"""
from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import threading
import time
import uuid
from pathlib import Path

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minipulsar.launcher import BrokerProcess  # noqa: E402
import perf_compare  # noqa: E402  (bench/ is this script's folder, first on sys.path)
from percentile import percentile  # noqa: E402


LATENCY_SAMPLE_EVERY = 20


def run_produce(client: pulsar.Client, topic: str, n: int, size: int, batching: bool, max_pending: int) -> dict:
    producer = client.create_producer(
        topic, batching_enabled=batching, batching_max_messages=1000, batching_max_publish_delay_ms=1,
        max_pending_messages=max_pending, block_if_queue_full=True)
    payload = b"x" * size
    latencies: list[float] = []
    errors = []
    done = threading.Event()

    def callback(result, _msg_id, started, last):
        # Python callbacks cost the C++ client's I/O thread the GIL: only every Nth message has one.
        latencies.append(time.perf_counter() - started)
        if result != pulsar.Result.Ok:
            errors.append(result)
        if last:
            done.set()

    start = time.perf_counter()
    for i in range(n):
        if i % LATENCY_SAMPLE_EVERY == 0 or i == n - 1:
            t0 = time.perf_counter()
            producer.send_async(payload, lambda r, m, t0=t0, last=(i == n - 1): callback(r, m, t0, last))
        else:
            producer.send_async(payload, None)
    producer.flush()
    done.wait(60)
    elapsed = time.perf_counter() - start
    producer.close()
    if errors:
        raise RuntimeError(f"{len(errors)} publishes failed, first: {errors[0]}")
    return {
        "msg/s": n / elapsed,
        "MB/s": n * size / elapsed / 1e6,
        "p50 ms": percentile(latencies, 0.50) * 1e3,
        "p99 ms": percentile(latencies, 0.99) * 1e3,
        "p99.9 ms": percentile(latencies, 0.999) * 1e3,
    }


def run_consume(consumer: pulsar.Consumer, n: int, size: int) -> dict:
    start = time.perf_counter()
    for _ in range(n):
        consumer.acknowledge(consumer.receive(30000))
    elapsed = time.perf_counter() - start
    return {"msg/s": n / elapsed, "MB/s": n * size / elapsed / 1e6}


def run_key_shared(client: pulsar.Client, topic: str, args) -> dict:
    """Publish --messages keyed messages (--keys distinct keys, key-based batching) while
    --key-shared consumers on one Key_Shared subscription receive and acknowledge them."""
    consumers = [client.subscribe(topic, "perf-ks", consumer_type=pulsar.ConsumerType.KeyShared,
                                  consumer_name=f"ks{i}", receiver_queue_size=1000) for i in range(args.key_shared)]
    received = [0] * len(consumers)

    def drain(index: int, consumer: pulsar.Consumer) -> None:
        while sum(received) < args.messages:
            try:
                msg = consumer.receive(200)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(msg)
            received[index] += 1

    threads = [threading.Thread(target=drain, args=(i, c), daemon=True) for i, c in enumerate(consumers)]
    producer = client.create_producer(topic, batching_enabled=True, batching_type=pulsar.BatchingType.KeyBased,
                                      batching_max_publish_delay_ms=1, block_if_queue_full=True,
                                      max_pending_messages=args.max_pending)
    payload = b"x" * args.size
    start = time.perf_counter()
    for t in threads:
        t.start()
    for i in range(args.messages):
        producer.send_async(payload, None, partition_key=f"key-{i % args.keys}")
    producer.flush()
    for t in threads:
        t.join(120)
    elapsed = time.perf_counter() - start
    for c in consumers:
        c.close()
    return {"msg/s": sum(received) / elapsed, "MB/s": sum(received) * args.size / elapsed / 1e6,
            "per consumer min": min(received), "max": max(received)}


def bench_bundled(url: str, args) -> list[tuple[str, dict]]:
    import perf_bundled

    rows = []
    for batching in (False, True):
        topic = f"persistent://public/default/perf-{uuid.uuid4().hex[:8]}"
        label = "batching on " if batching else "batching off"
        produced = asyncio.run(perf_bundled.produce(url, topic, args.messages, args.size, batching))
        consumed = asyncio.run(perf_bundled.consume(url, topic, args.messages))
        for name, row in ((f"produce {label}", produced), (f"consume {label}", consumed)):
            rows.append((f"{url} bundled {name}", {"msg/s": row["msg_per_s"], "MB/s": row["mb_per_s"]}))
    return rows


def bench_url(url: str, args) -> list[tuple[str, dict]]:
    if args.client == "bundled":
        return bench_bundled(url, args)
    client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    rows = []
    try:
        if args.key_shared:
            topic = f"persistent://public/default/perf-ks-{uuid.uuid4().hex[:8]}"
            label = f"Key_Shared {args.key_shared} consumers, {args.keys} keys, end to end"
            return [(f"{url} {label}", run_key_shared(client, topic, args))]
        for batching in (False, True):
            topic = f"persistent://public/default/perf-{uuid.uuid4().hex[:8]}"
            consumer = client.subscribe(topic, "perf", receiver_queue_size=1000)
            label = "batching on " if batching else "batching off"
            rows.append((f"{url} produce {label}", run_produce(client, topic, args.messages, args.size, batching, args.max_pending)))
            rows.append((f"{url} consume {label}", run_consume(consumer, args.messages, args.size)))
            consumer.close()
    finally:
        client.close()
    return rows


def start_broker_process() -> tuple[BrokerProcess, str]:
    """`python -m minipulsar broker` on free loopback ports with a temporary data dir."""
    broker = BrokerProcess(log_level="WARNING").start()
    return broker, broker.service_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", action="append", default=[], help="broker service URL; repeat to compare")
    parser.add_argument("--embedded", action="store_true", help="also start a minipulsar broker process")
    parser.add_argument("--client", choices=("official", "bundled"), default="official")
    parser.add_argument("--messages", type=int, help="messages per figure (50000; 100000 with --compare)")
    parser.add_argument("--size", type=int, help="payload bytes (1024; 100 with --compare)")
    parser.add_argument("--max-pending", type=int, default=5000)
    parser.add_argument("--key-shared", type=int, default=0, metavar="N",
                        help="instead: N Key_Shared consumers receiving while a producer publishes")
    parser.add_argument("--keys", type=int, default=1000, help="distinct keys in --key-shared mode")
    parser.add_argument("--compare", action="store_true",
                        help="instead: minipulsar, pulsar-lite and the null broker in alternating rounds")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of --compare (default 2)")
    parser.add_argument("--batched-messages", type=int, default=500_000,
                        help="messages per batched figure of --compare (default 500000)")
    parser.add_argument("--null-batch", type=int, default=1000,
                        help="messages per entry the null broker serves to batched consumers (--compare)")
    args = parser.parse_args()
    perf_compare.stop_brokers_on_sigterm()
    if args.messages is None:
        args.messages = 100_000 if args.compare else 50_000
    if args.size is None:
        args.size = 100 if args.compare else 1024
    print(f"command: python {shlex.join(sys.argv)}", flush=True)
    if args.compare:
        perf_compare.main(args, run_produce)
        return
    embedded, url = start_broker_process() if args.embedded or not args.url else (None, None)
    urls = args.url + ([url] if url else [])
    print(f"{args.messages} messages of {args.size} B")
    try:
        for url in urls:
            try:
                rows = bench_url(url, args)
            except Exception as exc:  # one broker failing must not hide the others' figures
                print(f"{url}: failed: {type(exc).__name__}: {exc}")
                continue
            for name, row in rows:
                figures = "  ".join(f"{k} {v:,.1f}" for k, v in row.items())
                print(f"{name:60s} {figures}")
    finally:
        if embedded:
            embedded.cleanup()  # stop it and remove its temporary data dir


if __name__ == "__main__":
    main()
