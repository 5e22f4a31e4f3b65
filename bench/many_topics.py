"""Produce throughput and publish latency over many topics, minipulsar (fsync on) beside pulsar-lite.

    python bench/many_topics.py                           # 1, 100, 1000 topics, unbatched, 2 rounds
    python bench/many_topics.py --topics 1 100 1000 10000 --batched --rounds 2
    python bench/many_topics.py --partitions 1000 --brokers minipulsar  # one topic of 1,000 partitions
    python bench/many_topics.py --paced 10 --topics 1000  # 1,000 topics x 10 msg/s each: latency only
    python bench/many_topics.py --paced 10 --topics 1000 --clients 2  # the same from two client processes
    python bench/many_topics.py --topics 1 1000 --brokers minipulsar pulsar-lite null  # and the null broker
    python bench/many_topics.py --topics 1 1000 --clients 2 --messages 100000  # two client processes

One official client, one producer per topic (or one partitioned producer), every topic with a
durable subscription; --messages (50,000) messages of --size (100) bytes are sent round-robin
across the topics with send_async, at most --window in flight. The rate is messages / wall time
from the first send to the last receipt; latency is each message's send_async -> callback. The
brokers alternate within each round (minipulsar, pulsar-lite, ...), and the ratio minipulsar /
pulsar-lite is printed per round and as the median over rounds; with ``null`` among --brokers
(bench/null_broker: answers every SEND at once and stores nothing) the ratio minipulsar / null is
printed too. The null broker is the client's ceiling at one topic, not at many: at 1,000 topics
its instant receipts cost the client more CPU per message (112 µs against 69 with minipulsar on
2026-11-30), so it can be slower than minipulsar. Each throughput line gives the broker's
CPU per message, its busiest threads' share of it (minipulsar's event loop is "main", its journal
and ledger storage threads "ml-journal" and "ml-storage"), and the bench process's own CPU in
cores (the official client's threads and the sender): near one core, the client's GIL-bound
Python side is what limits the rate (its send_async and its receipt callbacks take the GIL in
turn). With --paced R every topic sends R msg/s in 1 ms ticks for --seconds and only the
latency is reported. --clients N shares the topics (and the messages of a throughput run,
--window each) out among N client processes, one official client each, which start sending
together: then one client's GIL is not the limit, the brokers and the client processes share
the machine's cores, and the broker's CPU per message decides the rate.
With fewer topics than clients, the clients send to the same topics. Client CPU is then the sum
over the client processes.
"""
from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import shlex
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pulsar
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_compare import (build_null_broker, cpu_seconds, minipulsar, null_broker,  # noqa: E402  (bench/ is not a package)
                          own_cpu_seconds, pulsar_lite, stop_brokers_on_sigterm)
from process_stats import thread_cpu_between, thread_cpu_seconds  # noqa: E402
from percentile import percentile  # noqa: E402


@contextlib.contextmanager
def null_ceiling(batched: bool, args, workdir: str):
    """The null broker (built once by main): the official client's own ceiling."""
    ceiling_args = argparse.Namespace(messages=1, batched_messages=1, size=args.size, null_batch=0)
    with null_broker(batched, ceiling_args, workdir) as url:
        yield url


BROKERS = {"minipulsar": minipulsar, "pulsar-lite": pulsar_lite, "null": null_ceiling}


class Sender:
    """send_async with at most `window` messages in flight; latencies of the completed ones."""

    def __init__(self, window: int):
        self.latencies: list[float] = []
        self.failed = 0
        self._slots = threading.Semaphore(window)
        self._lock = threading.Lock()

    def send(self, producer, payload: bytes) -> None:
        self._slots.acquire()
        started = time.perf_counter()

        def done(result, _message_id):
            elapsed = time.perf_counter() - started
            with self._lock:
                if result == pulsar.Result.Ok:
                    self.latencies.append(elapsed)
                else:
                    self.failed += 1
            self._slots.release()

        producer.send_async(payload, done)

    def wait(self, count: int, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while len(self.latencies) + self.failed < count and time.monotonic() < deadline:
            time.sleep(0.01)  # polling the callbacks' count, bounded by the deadline


def producers_for(client, url, args) -> list:
    base = topic_base()
    if args.partitions:
        create_partitioned(url.web, base.rsplit("/", 1)[1], args.partitions)
        client.subscribe(base, "durable").close()  # a durable subscription on every partition
        return [client.create_producer(base, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
                                       **producer_settings(args))]
    return producers_on(client, [f"{base}-{i}" for i in range(args.current_topics)], args)


def producers_on(client, names: list[str], args, subscribe: bool = True) -> list:
    """A producer on every topic of names, and a durable subscription on each unless told not to."""
    for name in names if subscribe else ():
        client.subscribe(name, "durable").close()  # a durable subscription on every topic
    return [client.create_producer(name, **producer_settings(args)) for name in names]


def producer_settings(args) -> dict:
    return dict(batching_enabled=args.batched, batching_max_publish_delay_ms=1, block_if_queue_full=True,
                max_pending_messages=args.window)


def topic_base() -> str:
    """A fresh name the run's topics share (topics: base-0, base-1, ...)."""
    return f"persistent://public/default/many-{uuid.uuid4().hex[:8]}"


def create_partitioned(web: str | None, name: str, partitions: int) -> None:
    """PUT the partitioned topic's metadata through Pulsar's admin API."""
    if web is None:
        raise SystemExit("--partitions needs a broker with Pulsar's admin API (pulsar-lite has none): "
                         "run it with --brokers minipulsar")
    requests.put(f"{web}/admin/v2/persistent/public/default/{name}/partitions", json=partitions,
                 timeout=60).raise_for_status()


def throughput(url, args, around_send=contextlib.nullcontext) -> dict:
    """Send args.messages round-robin over the producers; around_send() is entered once every
    producer exists and left after the last receipt (bench/syncs_per_message.py counts in it)."""
    client = pulsar.Client(url, operation_timeout_seconds=60, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producers = producers_for(client, url, args)
        sender = Sender(args.window)
        payload = b"x" * args.size
        with around_send():
            threads0 = thread_cpu_seconds(url.pid)
            cpu0, own0, start = cpu_seconds(url.pid), own_cpu_seconds(), time.perf_counter()
            sender.wait(send_flat_out(sender, producers, payload, args.messages))
            elapsed, cpu = time.perf_counter() - start, cpu_seconds(url.pid) - cpu0
            client_cpu = own_cpu_seconds() - own0
            threads = thread_cpu_between(threads0, thread_cpu_seconds(url.pid))
        return figures(sender.latencies, elapsed, sender.failed, cpu, client_cpu, threads)
    finally:
        client.close()


def from_shares(url: str, args) -> dict:
    """The topics shared out among args.clients client processes (one official client each) that
    start sending together. client_share(url, names, owner, args, ready, broker_pid) runs in each
    (owner: it makes the durable subscriptions of names) and returns (latencies in s, failed sends,
    seconds sending, the broker's CPU seconds when it started and ended, its own CPU seconds)."""
    base = topic_base()
    names = [f"{base}-{i}" for i in range(args.current_topics)]
    # with fewer topics than clients, a client without topics of its own sends to one of the others'
    # (its owner made the durable subscription: two Exclusive subscribes at once would race)
    shares = [(names[i::args.clients], True) if i < len(names) else ([names[i % len(names)]], False)
              for i in range(args.clients)]
    context = multiprocessing.get_context("spawn")  # a fresh interpreter per client: no forked client threads
    with context.Manager() as manager, context.Pool(args.clients) as pool:
        ready = manager.Barrier(args.clients, timeout=600)  # a client that failed to set up breaks it, not hangs it
        parts = pool.starmap(client_share, [(str(url), names, owner, args, ready, url.pid) for names, owner in shares])
    latencies, failed, seconds, broker_start, broker_end, own, threads_start, threads_end = zip(*parts)
    # the broker's threads from the first client's start to the last one's end
    first = min(range(len(parts)), key=lambda i: broker_start[i])
    last = max(range(len(parts)), key=lambda i: broker_end[i])
    return figures([x for part in latencies for x in part], max(seconds), sum(failed),
                   broker_end[last] - broker_start[first], sum(own),
                   thread_cpu_between(threads_start[first], threads_end[last]))


def figures(latencies: list[float], elapsed: float, failed: int, broker_cpu: float, client_cpu: float,
            broker_threads: dict[str, float]) -> dict:
    """A run's line: latencies in s of the receipts, seconds from the first send to the last
    receipt, failed sends, the broker's and the clients' CPU seconds meanwhile, and the broker's
    CPU seconds by thread name (as µs a message in "threads_us", busiest first)."""
    ms = [x * 1e3 for x in latencies]
    per_message = 1e6 / max(1, len(ms))
    threads_us = {name: spent * per_message
                  for name, spent in sorted(broker_threads.items(), key=lambda item: -item[1])}
    return {"rate": len(ms) / elapsed, "p50": percentile(ms, 0.5), "p99": percentile(ms, 0.99), "failed": failed,
            "cpu_us": broker_cpu * per_message, "client_cores": client_cpu / elapsed, "threads_us": threads_us}


def client_share(url: str, names: list[str], owner: bool, args, ready, broker_pid: int) -> tuple:
    """One client process of a shared run: producers on its topics, then, once every client process
    has its producers (ready: a Barrier), its share of args.messages as fast as the window lets it
    or, with args.paced, args.paced msg/s on each topic in 1 ms ticks."""
    client = pulsar.Client(url, operation_timeout_seconds=60, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producers = producers_on(client, names, args, subscribe=owner)
        sender, payload = Sender(args.window), b"x" * args.size
        ready.wait()
        threads0 = thread_cpu_seconds(broker_pid)
        cpu0, own0, start = cpu_seconds(broker_pid), own_cpu_seconds(), time.perf_counter()
        if args.paced:
            sent = send_paced(sender, producers, payload, args.paced, args.seconds, start)
        else:
            sent = send_flat_out(sender, producers, payload, args.messages // args.clients)
        sender.wait(sent)
        elapsed = time.perf_counter() - start
        return (sender.latencies, sender.failed, elapsed, cpu0, cpu_seconds(broker_pid), own_cpu_seconds() - own0,
                threads0, thread_cpu_seconds(broker_pid))
    finally:
        client.close()


def send_flat_out(sender: Sender, producers: list, payload: bytes, count: int) -> int:
    """count messages round-robin over the producers, as fast as the window lets them go."""
    for i in range(count):
        sender.send(producers[i % len(producers)], payload)
    return count


def send_paced(sender: Sender, producers: list, payload: bytes, rate: int, seconds: float, start: float) -> int:
    """rate msg/s on each producer for seconds from start (perf_counter), in 1 ms ticks."""
    total, per_second = int(rate * len(producers) * seconds), rate * len(producers)
    per_tick = max(1, per_second // 1000)
    for sent in range(0, total, per_tick):
        due = start + sent / per_second
        while (now := time.perf_counter()) < due:
            time.sleep(min(due - now, 0.0005))  # pacing the sender, not waiting on the broker
        for k in range(sent, min(sent + per_tick, total)):
            sender.send(producers[k % len(producers)], payload)
    return total


def run(url, args) -> dict:
    """One broker's figures: from one client in this process, or shared out among client processes."""
    if args.paced or args.clients > 1:
        return from_shares(url, args)
    return throughput(url, args)


def busiest_threads(threads_us: dict[str, float], shown: int = 3) -> str:
    """The broker's busiest threads' CPU in µs a message, for a run's line ("" when it has one)."""
    if len(threads_us) < 2:
        return ""
    return "  threads " + ", ".join(f"{name} {us:.1f}" for name, us in list(threads_us.items())[:shown]) + " us/msg"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--partitions", type=int, default=0, help="one partitioned topic of N partitions instead")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--window", type=int, default=10_000, help="messages in flight at most")
    parser.add_argument("--batched", action="store_true")
    parser.add_argument("--paced", type=int, default=0, help="msg/s per topic: a latency run at that rate")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of a --paced run")
    parser.add_argument("--clients", type=int, default=1, help="client processes, the topics and messages shared out")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--brokers", nargs="+", default=["minipulsar", "pulsar-lite"], choices=list(BROKERS))
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    if (args.paced or args.clients > 1) and args.partitions:
        parser.error("--paced and --clients send to --topics, not to the partitions of one topic")
    print("$ python bench/many_topics.py " + shlex.join(sys.argv[1:]), flush=True)
    if "null" in args.brokers:
        build_null_broker()  # cargo build --release, a no-op when up to date
    counts = [args.partitions] if args.partitions else args.topics
    results: dict[tuple[str, int], list[dict]] = {}
    for count in counts:
        args.current_topics = count
        for round_ in range(args.rounds):
            for name in args.brokers:
                with tempfile.TemporaryDirectory() as workdir, BROKERS[name](args.batched, args, workdir) as url:
                    figures = run(url, args)
                results.setdefault((name, count), []).append(figures)
                print(f"{'partitions' if args.partitions else 'topics'}={count} round={round_ + 1} {name:11s} "
                      f"{figures['rate']:9.0f} msg/s  p50 {figures['p50']:7.2f} ms  p99 {figures['p99']:7.2f} ms"
                      f"  broker CPU {figures['cpu_us']:6.1f} us/msg  client CPU {figures['client_cores']:4.2f} cores"
                      f"  failed {figures['failed']}{busiest_threads(figures['threads_us'])}", flush=True)
    print("\nmedians over rounds:")
    for count in counts:
        row = {name: results[(name, count)] for name in args.brokers}
        line = [f"{count:6d}"]
        for name in args.brokers:
            line.append(f"{name} {statistics.median(r['rate'] for r in row[name]):9.0f} msg/s "
                        f"p50 {statistics.median(r['p50'] for r in row[name]):6.2f} p99 "
                        f"{statistics.median(r['p99'] for r in row[name]):6.2f}")
        for other, label in (("pulsar-lite", "ratio"), ("null", "vs null")):
            if "minipulsar" in row and other in row:
                ratios = [a["rate"] / b["rate"] for a, b in zip(row["minipulsar"], row[other])]
                line.append(f"{label} {statistics.median(ratios):.2f}")
        print("  ".join(line))


if __name__ == "__main__":
    main()
