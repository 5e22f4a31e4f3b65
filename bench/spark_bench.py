"""Spark benchmarks of the "pulsar" data source (run by hand, not in CI; prints numbers).

    python bench/spark_bench.py batch -n 1000000 --size 100 [--unbatched] [--min-partitions 2] [--no-admin-url]
    python bench/spark_bench.py keepup --rate 1000 --seconds 300
    python bench/spark_bench.py latency --seconds 60 --rate 200

batch: starts a broker (child process, temporary data dir), publishes n messages of `size` bytes
with the official client, then times a Spark batch read (local[2]) that touches every value, and
prints rows/s and MB/s. The read gets the broker's admin.url (ranges cut by ledger entry counts)
unless --no-admin-url.

keepup: starts a broker and runs the example (python -m minipulsar.pipeline.example --demo-rate
RATE --run-seconds SECONDS, default trigger of 1 s) and prints what it published and counted, the
micro-batch durations (p50/p95/max), Spark's "falling behind" warnings and ERROR lines.

latency: starts a broker and the example pipeline (python -m minipulsar.pipeline.example, trigger 1 s,
10 s windows), publishes `rate` messages/s with event time = send time, and consumes the
per-window totals topic. A message's end-to-end latency is the time from its send until a total
for its window arrives that counts it; prints p50/p95/max over the run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pulsar

from minipulsar.launcher import BrokerProcess
from perf_compare import stop_brokers_on_sigterm  # bench/ is this script's folder, first on sys.path
from percentile import percentile  # bench/ is this script's folder, first on sys.path

ROOT = Path(__file__).resolve().parent.parent


def start_broker(folder: str) -> BrokerProcess:
    """A broker child process with its data dir (and log) in folder, ready when returned."""
    return BrokerProcess(Path(folder) / "data", log_level="WARNING", cwd=ROOT).start()


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
        broker = start_broker(data)
        url, admin_url = broker.service_url, broker.web_service_url
        try:
            topic = "bench-spark-batch"
            took = publish(url, topic, args.n, args.size, not args.unbatched)
            print(f"published {args.n} x {args.size} B ({'unbatched' if args.unbatched else 'batched'}) "
                  f"in {took:.1f} s")
            spark = local_session("spark-bench", args.master, log_level="ERROR",
                                  **{"spark.ui.showConsoleProgress": "false"})
            reader = (spark.read.format("pulsar").option("service.url", url).option("topic", topic)
                      .option("minPartitions", str(args.min_partitions)))
            df = (reader if args.no_admin_url else reader.option("admin.url", admin_url)).load()
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
            broker.stop()


def latency(args) -> None:
    with tempfile.TemporaryDirectory() as data:
        broker = start_broker(data)
        url = broker.service_url
        example = None
        try:
            topic, out_topic = "bench-events", "bench-events-window-totals"
            client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
            consumer = client.subscribe(out_topic, "bench", initial_position=pulsar.InitialPosition.Earliest)
            producer = client.create_producer(topic, batching_enabled=False)
            example = subprocess.Popen(
                [sys.executable, "-m", "minipulsar.pipeline.example", "--service-url", url, "--topic", topic,
                 "--output-topic", out_topic, "--output-dir", f"{data}/example",
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
                example.send_signal(signal.SIGINT)  # the example stops cleanly on Ctrl-C
                example.wait(60)
            broker.stop()


def keepup(args) -> None:
    with tempfile.TemporaryDirectory() as data:
        broker = start_broker(data)
        url = broker.service_url
        try:
            t0 = time.monotonic()
            run = subprocess.run(
                [sys.executable, "-m", "minipulsar.pipeline.example", "--service-url", url, "--topic", "bench-keepup",
                 "--demo-rate", str(args.rate), "--run-seconds", str(args.seconds), "--output-dir", f"{data}/example",
                 "--master", args.master],
                cwd=ROOT, capture_output=True, text=True, timeout=args.seconds + 600)
            elapsed = time.monotonic() - t0
        finally:
            broker.stop()
    out = run.stdout + run.stderr
    batches = [(int(n), int(ms)) for n, ms in re.findall(r"^batch \d+: (\d+) messages in (\d+) ms", out, re.M)]
    durations = [ms for _, ms in batches[1:]]  # the first batch includes the JVM's warm-up
    published = re.search(r"demo producer: (\d+) messages published", out)
    behind = out.count("is falling behind")
    errors = sum(1 for line in out.splitlines() if " ERROR " in line or line.startswith("ERROR"))
    print(f"example at {args.rate:g} msg/s for {args.seconds:g} s (exit {run.returncode}, {elapsed:.0f} s in all): "
          f"{published.group(1) if published else '?'} published, {sum(n for n, _ in batches)} read in "
          f"{len(batches)} micro-batches; batch duration after the first p50 {percentile(durations, 0.5):.0f} ms, "
          f"p95 {percentile(durations, 0.95):.0f} ms, max {max(durations, default=0):.0f} ms; "
          f"{behind} 'falling behind' warnings, {errors} ERROR lines, {len(out.splitlines())} lines of output")


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
    b.add_argument("--no-admin-url", action="store_true", help="plan without the admin API's ledger sizes")
    k = sub.add_parser("keepup")
    k.add_argument("--rate", type=float, default=1000)
    k.add_argument("--seconds", type=float, default=300)
    k.add_argument("--master", default="local[2]")
    lat = sub.add_parser("latency")
    lat.add_argument("--seconds", type=float, default=60)
    lat.add_argument("--rate", type=float, default=200)
    lat.add_argument("--trigger", default="1 second")
    lat.add_argument("--warmup", type=float, default=25, help="seconds for Spark to start the queries")
    lat.add_argument("--drain", type=float, default=15)
    lat.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(ROOT))
    {"batch": batch, "keepup": keepup, "latency": latency}[args.mode](args)


if __name__ == "__main__":
    main()
