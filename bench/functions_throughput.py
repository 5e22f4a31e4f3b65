"""End-to-end throughput of an exclamation function (input + "!") on one broker process: the
function at parallelism 1 and 2, beside the same consume-transform-produce loop written by hand,
each loop its own process as an instance is, in the same run:

    python bench/functions_throughput.py                      # 20,000 messages of 100 bytes, 3 rounds
    python bench/functions_throughput.py --messages 50000 --rounds 1

- function p=1 / p=2: created through /admin/v3/functions (ATLEAST_ONCE: each input acknowledged
  once its output is durable), instances on the official client;
- hand loop, official: one process, the official client, receive -> decode -> + "!" -> send_async
  with the same producer settings and __pfn_* properties, acknowledging in the send callback;
- hand loop, bundled: the same loop on minipulsar's asyncio client (what an instance would be on
  the bundled client).

Each run: a batched official producer sends the messages to a fresh input topic as fast as it
can, and a consumer counts the outputs; msg/s = messages / (last output - first send). The rate
printed per configuration is the median over rounds, with its ratio to the official hand loop.
Every process shares the machine's cores (broker, instances or loop, producer and consumer).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pulsar
import requests

from minipulsar.launcher import BrokerProcess
from perf_compare import stop_brokers_on_sigterm  # bench/ is this script's folder, first on sys.path

EXCLAMATION = "def process(input):\n    return input + '!'\n"
LOGGER = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


# ---- the hand-written loops (run in a child process: --loop) -----------------------------------
def official_loop(url: str, source: str, sink: str) -> None:
    import base64
    import functools

    client = pulsar.Client(url, logger=LOGGER)
    consumer = client.subscribe(source, "hand-loop", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(sink, block_if_queue_full=True, batching_enabled=True,
                                      batching_max_publish_delay_ms=10, send_timeout_millis=0,
                                      compression_type=pulsar.CompressionType.LZ4)

    def sent(message, result, _message_id):
        if result == pulsar.Result.Ok:
            consumer.acknowledge(message)

    print("ready", flush=True)
    while True:
        message = consumer.receive()
        output = (message.data().decode() + "!").encode()
        properties = {"__pfn_input_topic__": message.topic_name(),
                      "__pfn_input_msg_id__": base64.urlsafe_b64encode(message.message_id().serialize()).decode()}
        producer.send_async(output, functools.partial(sent, message), properties=properties)


async def bundled_loop(url: str, source: str, sink: str) -> None:
    import base64

    from minipulsar import client as bundled

    async with bundled.Client(url) as client:
        consumer = await client.subscribe(source, "hand-loop", consumer_type=bundled.ConsumerType.Shared)
        producer = await client.create_producer(sink, block_if_queue_full=True, batching_enabled=True,
                                                batching_max_publish_delay_ms=10, send_timeout_millis=0,
                                                compression_type=bundled.CompressionType.LZ4)
        print("ready", flush=True)

        async def forward(message):
            message_id = message.message_id()
            properties = {"__pfn_input_topic__": message.topic_name(),
                          "__pfn_input_msg_id__": base64.urlsafe_b64encode(message_id.to_proto().SerializeToString()).decode()}
            await producer.send((message.data().decode() + "!").encode(), properties=properties)
            await consumer.acknowledge(message)

        pending: set[asyncio.Task] = set()
        async for message in consumer:
            task = asyncio.ensure_future(forward(message))
            pending.add(task)
            task.add_done_callback(pending.discard)


# ---- measuring ---------------------------------------------------------------------------------
def measure(url: str, source: str, sink: str, messages: int, size: int) -> float:
    """msg/s from the first send to the last output received."""
    client = pulsar.Client(url, logger=LOGGER)
    consumer = client.subscribe(sink, f"bench-{uuid.uuid4().hex[:6]}", receiver_queue_size=5000)
    producer = client.create_producer(source, batching_enabled=True, batching_max_publish_delay_ms=1,
                                      block_if_queue_full=True, max_pending_messages=5000)
    payload = "x" * (size - 1)
    started = time.perf_counter()
    for _ in range(messages):
        producer.send_async(payload.encode(), None)
    producer.flush()
    for _ in range(messages):
        consumer.acknowledge(consumer.receive(60_000))
    elapsed = time.perf_counter() - started
    client.close()
    return messages / elapsed


def run_function(broker: BrokerProcess, parallelism: int, messages: int, size: int) -> float:
    name = f"ex{parallelism}-{uuid.uuid4().hex[:6]}"
    source, sink = f"persistent://public/default/{name}-in", f"persistent://public/default/{name}-out"
    base = f"{broker.web_url}/admin/v3/functions/public/default/{name}"
    config = {"className": "exclamation", "inputs": [source], "output": sink, "parallelism": parallelism}
    answer = requests.post(base, files={"functionConfig": (None, json.dumps(config)),
                                        "data": ("exclamation.py", EXCLAMATION.encode())}, timeout=60)
    answer.raise_for_status()
    deadline = time.monotonic() + 60
    while requests.get(base + "/status", timeout=10).json()["numRunning"] != parallelism:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start")
        time.sleep(0.1)  # the poll interval of this bounded wait for the instances
    try:
        return measure(broker.url, source, sink, messages, size)
    finally:
        requests.delete(base, timeout=60).raise_for_status()


def run_loop(broker: BrokerProcess, kind: str, messages: int, size: int) -> float:
    name = f"loop-{kind}-{uuid.uuid4().hex[:6]}"
    source, sink = f"persistent://public/default/{name}-in", f"persistent://public/default/{name}-out"
    loop = subprocess.Popen([sys.executable, __file__, "--loop", kind, "--url", broker.url, "--source", source,
                             "--sink", sink], stdout=subprocess.PIPE, text=True)
    try:
        if loop.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the {kind} loop did not start")
        return measure(broker.url, source, sink, messages, size)
    finally:
        loop.kill()
        loop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100, help="payload bytes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--loop", choices=("official", "bundled"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--sink", help=argparse.SUPPRESS)
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    if args.loop == "official":
        return official_loop(args.url, args.source, args.sink)
    if args.loop == "bundled":
        return asyncio.run(bundled_loop(args.url, args.source, args.sink))
    print("command:", shlex.join([sys.executable, *sys.argv]))
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder, BrokerProcess(Path(folder) / "data") as broker:
        for round_number in range(args.rounds):
            for label, run in (("function p=1", lambda: run_function(broker, 1, args.messages, args.size)),
                               ("function p=2", lambda: run_function(broker, 2, args.messages, args.size)),
                               ("hand loop, official client", lambda: run_loop(broker, "official", args.messages, args.size)),
                               ("hand loop, bundled client", lambda: run_loop(broker, "bundled", args.messages, args.size))):
                rate = run()
                results.setdefault(label, []).append(rate)
                print(f"round {round_number + 1}: {label:28s} {rate:9,.0f} msg/s", flush=True)
    reference = statistics.median(results["hand loop, official client"])
    print(f"\n{args.messages:,} messages of {args.size} bytes, median of {args.rounds} round(s), one broker process:")
    for label, rates in results.items():
        median = statistics.median(rates)
        print(f"  {label:28s} {median:9,.0f} msg/s   {median / reference:5.2f}x the official hand loop")


if __name__ == "__main__":
    main()
