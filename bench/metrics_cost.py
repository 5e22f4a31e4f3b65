"""What GET /metrics costs the publish path: produce throughput with and without a scraper.

    python bench/metrics_cost.py [--messages 50000] [--size 1024] [--rounds 3] [--idle-topics 0]

Starts `python -m minipulsar broker` on a temporary data dir (as bench/perf.py --embedded does),
then, per round, publishes --messages unbatched messages with the official client's send_async
(at most --max-pending in flight) to a fresh topic with one subscription, (a) with nothing
scraping and (b) while a thread GETs /metrics every --interval seconds. Prints msg/s of every run,
the median of each mode, their ratio, the scrapes made and their mean duration. --idle-topics
adds topics with a subscription and no traffic, so each scrape renders more.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

import pulsar
import requests

from minipulsar.launcher import BrokerProcess
from perf_compare import stop_brokers_on_sigterm  # bench/ is this script's folder, first on sys.path


class Scraper(threading.Thread):
    """GET url every interval seconds until stopped; counts scrapes and their time."""

    def __init__(self, url: str, interval: float):
        super().__init__(daemon=True)
        self.url, self.interval = url, interval
        self.stopped = threading.Event()
        self.durations: list[float] = []
        self.bytes = 0

    def run(self) -> None:
        session = requests.Session()
        while not self.stopped.is_set():
            started = time.perf_counter()
            response = session.get(self.url, timeout=10)
            response.raise_for_status()
            self.durations.append(time.perf_counter() - started)
            self.bytes = len(response.content)
            self.stopped.wait(self.interval)


def produce(client: pulsar.Client, n: int, size: int, max_pending: int) -> float:
    """msg/s of n unbatched messages on a fresh topic with one (idle) subscription."""
    topic = f"persistent://public/default/metrics-cost-{uuid.uuid4().hex[:8]}"
    consumer = client.subscribe(topic, "bench")
    producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=max_pending,
                                      block_if_queue_full=True)
    payload = b"x" * size
    done = threading.Event()
    failures = []

    def last(result, _msg_id):
        if result != pulsar.Result.Ok:
            failures.append(result)
        done.set()

    start = time.perf_counter()
    for _ in range(n - 1):
        producer.send_async(payload, None)
    producer.send_async(payload, last)
    producer.flush()
    done.wait(120)
    elapsed = time.perf_counter() - start
    producer.close()
    consumer.close()
    if failures:
        raise RuntimeError(f"publish failed: {failures[0]}")
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50000)
    parser.add_argument("--size", type=int, default=1024, help="payload bytes")
    parser.add_argument("--max-pending", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each mode, alternating")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between scrapes")
    parser.add_argument("--idle-topics", type=int, default=0, help="extra topics without traffic")
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"{args.messages} unbatched messages of {args.size} B per run, {args.rounds} rounds, "
          f"scrape every {args.interval * 1000:.0f} ms, {args.idle_topics} idle topics")
    broker = BrokerProcess(log_level="WARNING").start()  # a temporary data dir, removed at the end
    url, web_url = broker.service_url, broker.web_service_url
    client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        idle = [client.subscribe(f"persistent://public/default/idle-{uuid.uuid4().hex[:8]}", "idle")
                for _ in range(args.idle_topics)]
        produce(client, min(args.messages, 5000), args.size, args.max_pending)  # warm-up
        results: dict[str, list[float]] = {"no scraper": [], "scraping": []}
        scrapes: list[float] = []
        body = 0
        for round_ in range(args.rounds):
            for mode in ("no scraper", "scraping"):
                scraper = Scraper(web_url + "/metrics", args.interval) if mode == "scraping" else None
                if scraper:
                    scraper.start()
                rate = produce(client, args.messages, args.size, args.max_pending)
                if scraper:
                    scraper.stopped.set()
                    scraper.join(10)
                    scrapes += scraper.durations
                    body = scraper.bytes
                results[mode].append(rate)
                print(f"round {round_ + 1} {mode:11s} {rate:10,.0f} msg/s"
                      + (f"  ({len(scraper.durations)} scrapes)" if scraper else ""))
        base, scraped = (statistics.median(results[m]) for m in ("no scraper", "scraping"))
        print(f"median no scraper {base:10,.0f} msg/s")
        print(f"median scraping   {scraped:10,.0f} msg/s")
        print(f"ratio scraping / no scraper: {scraped / base:.3f}")
        if scrapes:
            print(f"scrapes: {len(scrapes)}, mean {statistics.mean(scrapes) * 1000:.2f} ms, "
                  f"max {max(scrapes) * 1000:.2f} ms, {body:,} B each")
        for consumer in idle:
            consumer.close()
    finally:
        client.close()
        broker.cleanup()


if __name__ == "__main__":
    main()
