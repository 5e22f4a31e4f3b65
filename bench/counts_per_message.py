"""What the broker's event loop does per message, counted rather than timed (run by hand): counts
that do not depend on how busy the machine is, unlike the timings of bench/many_topics.py.

    python bench/counts_per_message.py                       # bytecodes by function, 1 and 1,000 topics
    python bench/counts_per_message.py --topics 1 100 1000 --rounds 20 --top 30
    python bench/counts_per_message.py --callgrind           # instructions and cache misses (valgrind)

For each topic count T a broker (`python -m minipulsar broker`, fsync on) starts, and one official
client makes a durable subscription and an unbatched producer on each of T topics, then sends
rounds of 1,000 messages of 100 B (round-robin; each round waits for all its receipts), so at
1,000 topics every topic's share of a group holds one entry, as in bench/many_topics.py. The
rounds after the warm-up ones are counted:

- by default, bench/counts_site on the broker's PYTHONPATH traces the event loop's thread between
  two signals: bytecodes per message in all and per function, with calls per message, beside the
  first topic count's. Python bytecodes only: not the C code they call, nor memory stalls.
- with --callgrind, the broker runs under valgrind's callgrind (Debian's valgrind package), its
  instrumentation switched on only for the counted rounds: instructions, L1 data-cache misses and
  L2 misses per message of the event loop's thread and of all threads. The caches modelled are
  the processor's 32 KiB L1 and 1 MiB L2 (8-way, 64 B lines); its L3 is shared with the machine's
  neighbours, so an L2 miss is the nearest thing to a memory stall that a simulation can count.
"""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import pulsar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minipulsar.launcher import BrokerProcess  # noqa: E402
from perf_compare import stop_brokers_on_sigterm  # noqa: E402  (bench/ is this script's folder, first on sys.path)

SITE = Path(__file__).resolve().parent / "counts_site"
MESSAGES_A_ROUND = 1000
WARM_UP_ROUNDS = 5
PAYLOAD = b"x" * 100


def one_round(producers: list) -> None:
    """MESSAGES_A_ROUND messages round-robin over producers; returns once all are acknowledged."""
    done, lock = threading.Event(), threading.Lock()
    left = [MESSAGES_A_ROUND]
    failures = []

    def sent(result, _message_id) -> None:
        if result != pulsar.Result.Ok:
            failures.append(result)
        with lock:
            left[0] -= 1
            if not left[0]:
                done.set()

    for k in range(MESSAGES_A_ROUND):
        producers[k % len(producers)].send_async(PAYLOAD, sent)
    done.wait()
    if failures:
        raise RuntimeError(f"{len(failures)} sends failed: {failures[0]}")


class CallgrindBroker(BrokerProcess):
    """The broker under valgrind's callgrind, counting nothing until switched on (``switch``)."""

    def __init__(self, out: Path) -> None:
        super().__init__(log_level="WARNING", startup_timeout=600)
        self.out = out

    def command(self) -> list[str]:
        return ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--cache-sim=yes", "--instr-atstart=no",
                "--D1=32768,8,64", "--I1=32768,8,64", "--LL=1048576,8,64", f"--callgrind-out-file={self.out}",
                *super().command()]

    def switch(self, on: bool) -> None:
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(self.pid)], check=True,
                       capture_output=True)


def drive(broker: BrokerProcess, topics: int, rounds: int, count: Callable[[bool], None]) -> None:
    """The client's side (the module's docstring); count(True) before the counted rounds, count(False) after."""
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=600,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    names = [f"persistent://public/default/counts-{i}" for i in range(topics)]
    for name in names:
        client.subscribe(name, "durable").close()
    producers = [client.create_producer(name, batching_enabled=False, block_if_queue_full=True,
                                        max_pending_messages=MESSAGES_A_ROUND) for name in names]
    for _ in range(WARM_UP_ROUNDS):
        one_round(producers)
    count(True)
    for _ in range(rounds):
        one_round(producers)
    count(False)
    client.close()


def bytecodes_at(topics: int, rounds: int) -> dict[str, tuple[float, float]]:
    """function -> (bytecodes, calls) per message, traced over `rounds` rounds at `topics` topics."""
    with tempfile.TemporaryDirectory(prefix="counts-") as folder:
        out = Path(folder) / "bytecodes.txt"
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")])),
               "COUNTS_SITE_OUT": str(out)}
        broker = BrokerProcess(env=env, log_level="WARNING").start()
        try:
            drive(broker, topics, rounds, lambda on: os.kill(broker.pid, signal.SIGUSR1 if on else signal.SIGUSR2))
            while not out.exists():  # the handler runs on the broker's next bytecode
                time.sleep(0.05)
        finally:
            broker.cleanup()  # its data folder too
        lines = out.read_text().splitlines()
    messages = rounds * MESSAGES_A_ROUND
    counts = {}
    for line in lines:
        bytecodes, calls, function = line.split(" ", 2)
        counts[short(function)] = (int(bytecodes) / messages, int(calls) / messages)
    return counts


def callgrind_at(topics: int, rounds: int) -> dict[str, list[float]]:
    """{"event loop": [...], "all threads": [...]}: instructions, L1 data misses and L2 misses per
    message over `rounds` counted rounds at `topics` topics."""
    with tempfile.TemporaryDirectory(prefix="counts-") as folder:
        out = Path(folder) / "callgrind.out"
        broker = CallgrindBroker(out).start()
        try:
            drive(broker, topics, rounds, broker.switch)
        finally:
            broker.stop(timeout=300)  # callgrind writes its files on the way out
            broker.cleanup()
        threads = {path.name: callgrind_totals(path) for path in sorted(out.parent.glob(out.name + "-*"))}
    messages = rounds * MESSAGES_A_ROUND
    loop = threads[out.name + "-01"]  # part 1: the main thread, the event loop's
    every = [sum(column) for column in zip(*threads.values())]
    return {name: [value / messages for value in figures] for name, figures in
            (("event loop", loop), ("all threads", every))}


def callgrind_totals(path: Path) -> list[int]:
    """[instructions, L1 data misses, L2 misses] of one thread's callgrind file. Its events:
    Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw (callgrind leaves trailing zeros out)."""
    for line in path.read_text().splitlines():
        if line.startswith("totals:"):
            events = [int(x) for x in line.split()[1:]] + [0] * 9
            ir, _dr, _dw, _i1mr, d1mr, d1mw, ilmr, dlmr, dlmw = events[:9]
            return [ir, d1mr + d1mw, ilmr + dlmr + dlmw]
    raise RuntimeError(f"{path}: no totals line")


def short(function: str) -> str:
    """path:function with the path from the repository or the standard library's folder."""
    path, _, name = function.rpartition(":")
    for prefix in (str(ROOT) + os.sep, os.path.dirname(os.__file__) + os.sep):
        if path.startswith(prefix):
            path = path[len(prefix):]
    return f"{path}:{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[1, 1000])
    parser.add_argument("--rounds", type=int, default=10, help="counted rounds of 1,000 messages")
    parser.add_argument("--top", type=int, default=40, help="functions printed")
    parser.add_argument("--callgrind", action="store_true", help="instructions and cache misses under valgrind")
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    print("$ python bench/counts_per_message.py " + shlex.join(sys.argv[1:]), flush=True)
    if args.callgrind:
        print(f"{'topics':>6} {'thread':>12} {'instructions':>13} {'L1d misses':>11} {'L2 misses':>10}  (a message)")
        for topics in args.topics:
            for thread, (ir, l1, l2) in callgrind_at(topics, args.rounds).items():
                print(f"{topics:6d} {thread:>12} {ir:13,.0f} {l1:11.1f} {l2:10.1f}", flush=True)
        return
    print_bytecodes({topics: bytecodes_at(topics, args.rounds) for topics in args.topics}, args.top)


def print_bytecodes(results: dict[int, dict[str, tuple[float, float]]], top: int) -> None:
    first = next(iter(results))
    for topics, counts in results.items():
        total = sum(bytecodes for bytecodes, _ in counts.values())
        growth = total - sum(bytecodes for bytecodes, _ in results[first].values())
        print(f"\n{topics} topics: {total:,.0f} bytecodes a message"
              + (f" ({growth:+,.0f} against {first})" if topics != first else ""))
        print(f"{'bytecodes':>10} {'calls':>6} {'at ' + str(first):>8}  function")
        for function, (bytecodes, calls) in sorted(counts.items(), key=lambda kv: -kv[1][0])[:top]:
            base = results[first].get(function, (0.0, 0.0))[0]
            print(f"{bytecodes:10.1f} {calls:6.3f} {base:8.1f}  {function}")


if __name__ == "__main__":
    main()
