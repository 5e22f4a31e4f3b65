"""Bytecodes the broker's event loop runs per message, function by function (run by hand): a
count that does not depend on how busy the machine is, unlike the timings of bench/many_topics.py.

    python bench/bytecodes_per_message.py                      # 1 and 1,000 topics
    python bench/bytecodes_per_message.py --topics 1 100 1000 --rounds 20 --top 30

For each topic count T, a broker (`python -m minipulsar broker`, fsync on) starts with
bench/bytecode_site on PYTHONPATH, whose sitecustomize traces the event loop's thread between two
signals. One official client makes a durable subscription and an unbatched producer on each of T
topics, then sends rounds of 1,000 messages of 100 B (round-robin; each round waits for all its
receipts), so at 1,000 topics every topic's share of a group holds one entry, as in
bench/many_topics.py. The rounds after the warm-up ones are traced. Printed: bytecodes per
message in all, and per function with its calls per message, beside the first topic count's.
The trace counts Python bytecodes only: not the C code they call, nor memory stalls (a share's
objects fall out of the processor's caches with many topics), so it shows what code runs per
message, not all of what it costs. The journal and ledger storage threads are not traced.
"""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pulsar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minipulsar.launcher import BrokerProcess  # noqa: E402

SITE = Path(__file__).resolve().parent / "bytecode_site"
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


def counts_at(topics: int, rounds: int) -> dict[str, tuple[float, float]]:
    """function -> (bytecodes, calls) per message, traced over `rounds` rounds at `topics` topics."""
    out = Path(tempfile.mkdtemp(prefix="bytecodes-")) / "counts.txt"
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")])),
           "BYTECODE_COUNTS_OUT": str(out)}
    broker = BrokerProcess(env=env, log_level="WARNING").start()
    try:
        client = pulsar.Client(broker.service_url, operation_timeout_seconds=120,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        names = [f"persistent://public/default/bytecodes-{i}" for i in range(topics)]
        for name in names:
            client.subscribe(name, "durable").close()
        producers = [client.create_producer(name, batching_enabled=False, block_if_queue_full=True,
                                            max_pending_messages=MESSAGES_A_ROUND) for name in names]
        for _ in range(WARM_UP_ROUNDS):
            one_round(producers)
        os.kill(broker.pid, signal.SIGUSR1)
        for _ in range(rounds):
            one_round(producers)
        os.kill(broker.pid, signal.SIGUSR2)
        while not out.exists():  # the handler runs on the broker's next bytecode
            time.sleep(0.05)
        client.close()
    finally:
        broker.stop()
    messages = rounds * MESSAGES_A_ROUND
    counts = {}
    for line in out.read_text().splitlines():
        bytecodes, calls, function = line.split(" ", 2)
        counts[short(function)] = (int(bytecodes) / messages, int(calls) / messages)
    return counts


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
    parser.add_argument("--rounds", type=int, default=10, help="traced rounds of 1,000 messages")
    parser.add_argument("--top", type=int, default=40, help="functions printed")
    args = parser.parse_args()
    print("$ python bench/bytecodes_per_message.py " + shlex.join(sys.argv[1:]), flush=True)
    results = {topics: counts_at(topics, args.rounds) for topics in args.topics}
    first = args.topics[0]
    for topics, counts in results.items():
        total = sum(bytecodes for bytecodes, _ in counts.values())
        print(f"\n{topics} topics: {total:,.0f} bytecodes a message"
              + (f" ({total - sum(b for b, _ in results[first].values()):+,.0f} against {first})" if topics != first else ""))
        print(f"{'bytecodes':>10} {'calls':>6} {'at ' + str(first):>8}  function")
        for function, (bytecodes, calls) in sorted(counts.items(), key=lambda kv: -kv[1][0])[:args.top]:
            base = results[first].get(function, (0.0, 0.0))[0]
            print(f"{bytecodes:10.1f} {calls:6.3f} {base:8.1f}  {function}")


if __name__ == "__main__":
    main()
