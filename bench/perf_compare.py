"""`bench/perf.py --compare`: minipulsar against pulsar-lite and the null broker, with the official client.

Each round starts every broker in turn (the order reverses from one round to the next, so a
drift in machine load does not always favour the same broker) and, for batching off and then
on, runs in a fresh broker process:

1. subscribe (Exclusive) and close the consumer at once, which leaves a durable subscription
   that keeps the backlog while nobody receives;
2. publish the messages with send_async and wait for the last receipt (the produce figure);
3. subscribe again and receive and acknowledge the whole backlog, timed from the subscribe call
   (the consume figure).

Nobody is subscribed while the produce figure is taken, and the consume figure starts from an
empty client queue. A consumer attached during publishing would be fed (and, by a broker that
dispatches beyond the permits granted, sent nearly the whole topic) while the producer runs, which
moves the consume work out of the consume timing and into the produce timing.

Batched figures use --batched-messages (default 500,000) instead of --messages (100,000):
batching makes a message several times cheaper, and 100,000 batched messages take a fraction of a
second, too short to time on a shared machine.

- minipulsar: `python -m minipulsar broker` on a temporary data dir with journalSyncData on
  (fsync before a publish is acknowledged).
- pulsar-lite: the broker binary of the `pulsar-lite` PyPI package, on a temporary db path, with
  its own defaults.
- null: bench/null_broker (Rust, no storage), built with `cargo build --release` if needed. It
  acknowledges every SEND without storing it (reading and answering at the pace the official
  client runs fastest against: bench/null_broker/README.md) and serves every consumer a pre-built topic of the same
  message count and size from its start (entries of --null-batch messages when batching is on),
  so its figures are the client's ceiling on this machine. Where the client itself is the
  limit (produce, measured at 100-byte messages) a real broker can reach that ceiling, and its
  percentage then reads 100 give or take the noise of single runs on a busy 2-core machine,
  which can exceed 30%: more --rounds narrow it.

The table gives, per figure and broker, the median msg/s over the rounds, the median of the
per-round ratios to pulsar-lite and the median of the per-round percentages of the null broker
(a ratio taken within one round compares runs seconds apart, which is what cancels the noise of
a shared machine).
"""
from __future__ import annotations

import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pulsar

from minipulsar.launcher import BrokerProcess, free_port
from process_stats import stat_cpu

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
NULL_BROKER_DIR = BENCH / "null_broker"
NULL_BROKER_BINARY = NULL_BROKER_DIR / "target" / "release" / "null_broker"

BROKERS = ("minipulsar", "pulsar-lite", "null")
REFERENCE, CEILING = "pulsar-lite", "null"
FIGURES = ("unbatched produce", "batched produce", "unbatched consume", "batched consume")
SUBSCRIPTION = "perf"
RECEIVER_QUEUE = 1000

# (broker, figure) -> one msg/s value per round (None where that run failed)
Results = dict[tuple[str, str], list]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process pid has used so far (/proc/<pid>/stat)."""
    return stat_cpu(f"/proc/{pid}/stat")[1]


def own_cpu_seconds() -> float:
    """User + system CPU seconds of this process: the sender and the official client's threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class BrokerURL(str):
    """A broker's service URL that also carries the broker's process id (for /proc figures) and its
    web service URL (None for a broker without Pulsar's admin API)."""

    pid: int
    web: str | None

    def __new__(cls, url: str, pid: int, web: str | None = None) -> "BrokerURL":
        self = super().__new__(cls, url)
        self.pid, self.web = pid, web
        return self


def stop_brokers_on_sigterm() -> None:
    """SIGTERM (`timeout`, a CI job's cancel) exits like Ctrl-C: the `with` blocks that run the
    brokers and the client processes stop them on the way out. Python's default for SIGTERM ends
    the bench at once, and the brokers it started went on running, one of them busy, skewing
    every measurement made after."""
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


@contextmanager
def running(name: str, argv: list[str], port: int, workdir: str) -> Iterator[BrokerURL]:
    """Run another broker's process (pulsar-lite, the null broker; output to a log in `workdir`)
    until it listens on `port`; yield its URL. minipulsar comes from minipulsar.launcher."""
    log_path = Path(workdir) / f"{name}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_listening(proc, port, log_path)
            yield BrokerURL(f"pulsar://127.0.0.1:{port}", proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_listening(proc: subprocess.Popen, port: int, log_path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode} at start: {log_path.read_text()[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"not listening on port {port} after {timeout} s")


@contextmanager
def minipulsar(batching: bool, args, workdir: str, sync: bool = True) -> Iterator[BrokerURL]:
    """sync: journalSyncData. Always explicit, so a changed default cannot quietly turn the comparison
    into one without fsync; off only where a benchmark asks for it by name (minipulsar-unsynced)."""
    with BrokerProcess(Path(workdir) / "data", {"journalSyncData": str(sync).lower()},
                       log_path=Path(workdir) / "minipulsar.log", log_level="WARNING", cwd=workdir) as broker:
        yield BrokerURL(broker.service_url, broker.pid, broker.web_service_url)


@contextmanager
def pulsar_lite(batching: bool, args, workdir: str) -> Iterator[BrokerURL]:
    from pulsar_lite.binary_finder import find_pulsar_lite_binary

    port = free_port()
    argv = [find_pulsar_lite_binary(), "--addr", f"127.0.0.1:{port}", "--db-path", str(Path(workdir) / "db"),
            "--log-level", "error"]
    with running("pulsar-lite", argv, port, workdir) as url:
        yield url


@contextmanager
def null_broker(batching: bool, args, workdir: str) -> Iterator[BrokerURL]:
    port = free_port()
    argv = [str(NULL_BROKER_BINARY), "--addr", f"127.0.0.1:{port}", "--messages", str(message_count(batching, args)),
            "--size", str(args.size), "--batch-size", str(args.null_batch if batching else 0)]
    with running("null", argv, port, workdir) as url:
        yield url


LAUNCHERS = {"minipulsar": minipulsar, "pulsar-lite": pulsar_lite, "null": null_broker}


def build_null_broker() -> None:
    """`cargo build --release` (a no-op when up to date), so the figures never use a stale binary."""
    result = subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=NULL_BROKER_DIR,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"cargo build --release in {NULL_BROKER_DIR} failed:\n{result.stderr}")


def message_count(batching: bool, args) -> int:
    return args.batched_messages if batching else args.messages


def measure(url: str, batching: bool, args, run_produce: Callable) -> dict[str, float]:
    """Produce then consume one topic's worth of messages; msg/s of each, keyed by figure name."""
    client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    mode = "batched" if batching else "unbatched"
    n = message_count(batching, args)
    try:
        topic = f"persistent://public/default/compare-{uuid.uuid4().hex[:8]}"
        subscribe(client, topic).close()
        produced = run_produce(client, topic, n, args.size, batching, args.max_pending)
        consumed = consume_backlog(client, topic, n)
    finally:
        client.close()
    return {f"{mode} produce": produced["msg/s"], f"{mode} consume": consumed}


def subscribe(client: pulsar.Client, topic: str) -> pulsar.Consumer:
    return client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Exclusive,
                            receiver_queue_size=RECEIVER_QUEUE)


def consume_backlog(client: pulsar.Client, topic: str, n: int) -> float:
    """msg/s from the subscribe call to the n-th message received and acknowledged."""
    start = time.perf_counter()
    consumer = subscribe(client, topic)
    for _ in range(n):
        consumer.acknowledge(consumer.receive(30000))
    elapsed = time.perf_counter() - start
    consumer.close()
    return n / elapsed


def run_broker(broker: str, args, results: Results, run_produce: Callable) -> None:
    """Both batching modes on `broker`, each in a fresh process; a failure costs only its figures."""
    for batching in (False, True):
        mode = "batched" if batching else "unbatched"
        try:
            with tempfile.TemporaryDirectory(prefix=f"compare-{broker}-") as workdir:
                with LAUNCHERS[broker](batching, args, workdir) as url:
                    figures = measure(url, batching, args, run_produce)
        except Exception as exc:  # keep going: one broker failing must not hide the others' figures
            print(f"  {broker} {mode}: failed: {type(exc).__name__}: {exc}", flush=True)
            figures = {}
        for figure in (f"{mode} produce", f"{mode} consume"):
            results[(broker, figure)].append(figures.get(figure))
        shown = "  ".join(f"{k} {v:,.0f} msg/s" for k, v in figures.items())
        print(f"  {broker:12s} {shown}", flush=True)


def run_rounds(args, run_produce: Callable) -> Results:
    results: Results = {(b, f): [] for b in BROKERS for f in FIGURES}
    for round_no in range(args.rounds):
        order = BROKERS if round_no % 2 == 0 else tuple(reversed(BROKERS))
        print(f"round {round_no + 1}/{args.rounds}: {', '.join(order)}  (load {load()})", flush=True)
        for broker in order:
            run_broker(broker, args, results, run_produce)
    return results


def per_round_median(values: list, bases: list) -> float | None:
    """Median over rounds of values[i] / bases[i], skipping rounds where either is missing."""
    ratios = [v / b for v, b in zip(values, bases) if v and b]
    return statistics.median(ratios) if ratios else None


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{suffix}"


def print_table(results: Results) -> None:
    print()
    print(f"{'figure':19s} {'broker':12s} {'median msg/s':>13s} {'vs pulsar-lite':>15s} "
          f"{'% of null':>10s}   per round msg/s")
    for figure in FIGURES:
        reference, ceiling = results[(REFERENCE, figure)], results[(CEILING, figure)]
        for broker in BROKERS:
            values = results[(broker, figure)]
            measured = [v for v in values if v]
            median = statistics.median(measured) if measured else None
            ratio = per_round_median(values, reference)
            share = per_round_median(values, ceiling)
            rounds = " / ".join(fmt(v, ",.0f") for v in values)
            print(f"{figure:19s} {broker:12s} {fmt(median, ',.0f'):>13s} {fmt(ratio, '.2f', 'x'):>15s} "
                  f"{fmt(share and share * 100, '.1f', '%'):>10s}   {rounds}")


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def describe_checkout() -> str:
    """HEAD and how many product files differ from it: minipulsar runs from this working tree."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    changed = git("status", "--porcelain", "--", "broker", "cli", "storage", "proto", "client", "minipulsar")
    count = len(changed.splitlines())
    head = f"HEAD {git('rev-parse', '--short', 'HEAD')}"
    return f"{head} + {count} uncommitted files in the product" if count else head


def main(args, run_produce: Callable) -> None:
    """Run the comparison described in the module docstring and print its table."""
    build_null_broker()
    import pulsar_lite  # fail before the first round, not in the middle of the table

    print(f"{args.messages} unbatched / {args.batched_messages} batched messages of {args.size} B per figure, "
          f"{args.rounds} rounds, Exclusive subscription, receiver queue {RECEIVER_QUEUE}, "
          f"max pending {args.max_pending}, null broker batches of {args.null_batch}")
    print(f"minipulsar {describe_checkout()} (fsync on); pulsar-lite {getattr(pulsar_lite, '__version__', '?')}; "
          f"pulsar-client {pulsar.__version__}; {os.cpu_count()} CPUs; load before {load()}", flush=True)
    results = run_rounds(args, run_produce)
    print(f"load after {load()}")
    print_table(results)
