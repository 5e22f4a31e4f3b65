"""Key_Shared consume rate with each consumer in its own process, against the Exclusive consume
rate of the same backlog in the same run (the broker's dispatch, not one process's GIL).

    python bench/key_shared_procs.py                      # 4 consumers, 1,000 keys, 100,000 messages
    python bench/key_shared_procs.py --consumers 8 --keys 10000 --messages 200000 --rounds 3

A minipulsar process (fsync on) gets a topic with two subscriptions, "ks" (Key_Shared) and "ex"
(Exclusive), created before --messages keyed 100-byte messages are published (key-based
batching). Then the backlog of "ex" is drained by one process and that of "ks" by --consumers
processes started together; each receives and acknowledges. Prints both rates and their ratio.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_compare import minipulsar, stop_brokers_on_sigterm  # noqa: E402  (bench/ is not a package)


def consume(url: str, topic: str, subscription: str, kind: str, start, counter, total: int) -> None:
    """Subscribe, meet the others at the start barrier, then receive and acknowledge until the
    shared counter reaches total."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer_type = pulsar.ConsumerType.KeyShared if kind == "ks" else pulsar.ConsumerType.Exclusive
    consumer = client.subscribe(topic, subscription, consumer_type=consumer_type, receiver_queue_size=1000)
    start.wait()
    while counter.value < total:
        try:
            message = consumer.receive(200)
        except pulsar.Timeout:
            continue
        consumer.acknowledge(message)
        with counter.get_lock():
            counter.value += 1
    consumer.close()
    client.close()


def drain(url: str, topic: str, subscription: str, kind: str, processes: int, total: int) -> float:
    """msg/s for `processes` consumers of one subscription to take `total` messages."""
    start, counter = mp.Barrier(processes + 1), mp.Value("q", 0)
    workers = [mp.Process(target=consume, args=(url, topic, subscription, kind, start, counter, total))
               for _ in range(processes)]
    for worker in workers:
        worker.start()
    start.wait()  # every consumer has subscribed: the clock measures dispatch, not process start-up
    began = time.perf_counter()
    for worker in workers:
        worker.join(600)
    return total / (time.perf_counter() - began)


def one_round(args) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as workdir, minipulsar(True, args, workdir) as url:
        topic = f"persistent://public/default/ks-{uuid.uuid4().hex[:8]}"
        client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        client.subscribe(topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared).close()
        client.subscribe(topic, "ex").close()
        producer = client.create_producer(topic, batching_type=pulsar.BatchingType.KeyBased,
                                          block_if_queue_full=True, batching_max_publish_delay_ms=5)
        for i in range(args.messages):
            producer.send_async(b"x" * 100, None, partition_key=f"key-{i % args.keys}")
        producer.flush()
        producer.close()
        client.close()
        exclusive = drain(url, topic, "ex", "ex", 1, args.messages)
        key_shared = drain(url, topic, "ks", "ks", args.consumers, args.messages)
    return exclusive, key_shared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    ratios = []
    for round_no in range(args.rounds):
        exclusive, key_shared = one_round(args)
        ratios.append(key_shared / exclusive)
        print(f"round {round_no + 1}: Exclusive {exclusive:,.0f} msg/s, Key_Shared x{args.consumers} "
              f"{key_shared:,.0f} msg/s, ratio {key_shared / exclusive:.2f}")
    print(f"median Key_Shared / Exclusive: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
