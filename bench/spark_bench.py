"""Spark benchmarks of the "pulsar" data source (run by hand, not in CI; prints numbers).

    python bench/spark_bench.py batch -n 1000000 --size 100 [--unbatched] [--min-partitions 2]
    python bench/spark_bench.py latency --seconds 60 --rate 200

batch: starts a broker (child process, temporary data dir), publishes n messages of `size` bytes
with the official client, then times a Spark batch read (local[2]) that touches every value, and
prints rows/s and MB/s.

latency: starts a broker and the example pipeline (python -m minipulsar.pipeline.example, trigger 1 s,
10 s windows), publishes `rate` messages/s with event time = send time, and consumes the
per-window totals topic. A message's end-to-end latency is the time from its send until a total
for its window arrives that counts it; prints p50/p95/max over the run.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pulsar

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(data_dir: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "minipulsar", "broker", "--data-dir", data_dir,
                             "--broker-service-port", str(port), "--web-service-port", "0", "--bind-address", "127.0.0.1"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"pulsar://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("broker did not start")


def publish(url: str, topic: str, n: int, size: int, batching: bool) -> float:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, batching_enabled=batching, batching_max_messages=1000,
                                      batching_max_publish_delay_ms=10, max_pending_messages=20000,
                                      block_if_queue_full=True)
    payload = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        producer.send_async(payload, None)
    producer.flush()
    elapsed = time.perf_counter() - t0
    client.close()
    return elapsed


def batch(args) -> None:
    from minipulsar.pipeline.session import local_session

    with tempfile.TemporaryDirectory() as data:
        proc, url = start_broker(data)
        try:
            topic = "bench-spark-batch"
            took = publish(url, topic, args.n, args.size, not args.unbatched)
            print(f"published {args.n} x {args.size} B ({'unbatched' if args.unbatched else 'batched'}) "
                  f"in {took:.1f} s")
            spark = local_session("spark-bench", args.master)
            spark.sparkContext.setLogLevel("ERROR")
            df = (spark.read.format("pulsar").option("service.url", url).option("topic", topic)
                  .option("minPartitions", str(args.min_partitions)).load())
            for attempt in range(args.repeat):
                t0 = time.perf_counter()
                rows, total = df.selectExpr("count(*) AS n", "sum(length(value)) AS b").first()
                elapsed = time.perf_counter() - t0
                assert rows == args.n, (rows, args.n)
                print(f"run {attempt + 1}: read {rows} rows ({total / 1e6:.0f} MB of values) in {elapsed:.1f} s: "
                      f"{rows / elapsed:,.0f} rows/s, {total / elapsed / 1e6:.1f} MB/s "
                      f"({df.rdd.getNumPartitions()} partitions, {args.master})")
            spark.stop()
        finally:
            proc.terminate()
            proc.wait(20)


def latency(args) -> None:
    with tempfile.TemporaryDirectory() as data:
        proc, url = start_broker(data)
        example = None
        try:
            topic, out_topic = "bench-events", "bench-events-window-totals"
            client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
            consumer = client.subscribe(out_topic, "bench", initial_position=pulsar.InitialPosition.Earliest)
            producer = client.create_producer(topic, batching_enabled=False)
            example = subprocess.Popen(
                [sys.executable, "-m", "minipulsar.pipeline.example", "--service-url", url, "--topic", topic,
                 "--output-topic", out_topic, "--parquet-dir", f"{data}/counts", "--checkpoint-dir", f"{data}/cp",
                 "--trigger", args.trigger, "--window", "10 seconds", "--master", args.master],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
            time.sleep(args.warmup)
            sent: dict[str, list[float]] = {}  # window start -> send times, in order
            arrivals: list[tuple[float, str, int]] = []
            stop = threading.Event()

            def consume():
                while not stop.is_set():
                    try:
                        m = consumer.receive(500)
                    except pulsar.Timeout:
                        continue
                    body = json.loads(m.data())
                    arrivals.append((time.time(), body["windowStart"], body["count"]))
                    consumer.acknowledge(m)

            reader = threading.Thread(target=consume)
            reader.start()
            end = time.time() + args.seconds
            while time.time() < end:
                now = time.time()
                window = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - now % 10))
                producer.send(b"e", partition_key=f"key-{len(arrivals) % 5}", event_timestamp=int(now * 1000))
                sent.setdefault(window, []).append(now)
                time.sleep(1.0 / args.rate)
            time.sleep(args.drain)
            stop.set()
            reader.join()
            latencies, missing = [], 0
            for window, times in sent.items():
                counts = sorted((t, c) for t, w, c in arrivals if w == window)
                for i, t_sent in enumerate(times):
                    seen = next((t for t, c in counts if c >= i + 1), None)
                    if seen is None:
                        missing += 1
                    else:
                        latencies.append(seen - t_sent)
            latencies.sort()
            n = len(latencies)
            print(f"{sum(map(len, sent.values()))} messages at {args.rate}/s over {args.seconds} s, trigger "
                  f"{args.trigger}: end-to-end latency p50 {latencies[n // 2]:.2f} s, p95 "
                  f"{latencies[int(n * 0.95)]:.2f} s, max {latencies[-1]:.2f} s; {missing} not seen in a total")
            client.close()
        finally:
            if example is not None:
                example.terminate()
                example.wait(60)
            proc.terminate()
            proc.wait(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    b = sub.add_parser("batch")
    b.add_argument("-n", type=int, default=1_000_000)
    b.add_argument("--size", type=int, default=100)
    b.add_argument("--unbatched", action="store_true")
    b.add_argument("--min-partitions", type=int, default=2)
    b.add_argument("--master", default="local[2]")
    b.add_argument("--repeat", type=int, default=2)
    lat = sub.add_parser("latency")
    lat.add_argument("--seconds", type=float, default=60)
    lat.add_argument("--rate", type=float, default=200)
    lat.add_argument("--trigger", default="1 second")
    lat.add_argument("--warmup", type=float, default=25, help="seconds for Spark to start the queries")
    lat.add_argument("--drain", type=float, default=15)
    lat.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(ROOT))
    batch(args) if args.mode == "batch" else latency(args)


if __name__ == "__main__":
    main()
