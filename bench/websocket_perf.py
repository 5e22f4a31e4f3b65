"""WebSocket API throughput beside the binary protocol, against one broker process, in one run.

    python bench/websocket_perf.py [--messages 20000] [--size 100] [--rounds 3] [--window 500]

A minipulsar broker process (minipulsar.launcher, fsync on) serves both. In each round, on fresh
topics:
- produce: the official client (send_async, batching off, at most --window in flight) against a
  WebSocket producer session (aiohttp's client; --window frames in flight, each answered by its
  ProducerAck; batching off, Pulsar's WebSocket default);
- consume: --messages preloaded messages read from the earliest position and acknowledged one by
  one, by the official client's consumer and by a WebSocket consumer session (receiverQueueSize
  1000, one ack frame per message).
For each it prints msg/s and the broker process's CPU time per message (µs, from /proc), then the
medians and the WebSocket / binary ratios. The machine's other load moves msg/s more than CPU per
message; both are printed.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

import aiohttp
import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from minipulsar.launcher import BrokerProcess  # noqa: E402
from perf_compare import cpu_seconds, stop_brokers_on_sigterm  # noqa: E402  (bench/ is not a package)


def measure(pid: int, n: int, run) -> tuple[float, float]:
    """(msg/s, broker CPU µs per message) of run(), which moves n messages."""
    cpu, started = cpu_seconds(pid), time.perf_counter()
    run()
    elapsed = time.perf_counter() - started
    return n / elapsed, (cpu_seconds(pid) - cpu) / n * 1e6


def binary_produce(client: pulsar.Client, topic: str, n: int, payload: bytes, window: int) -> None:
    producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=window,
                                      block_if_queue_full=True)
    for _ in range(n):
        producer.send_async(payload, None)
    producer.flush()
    producer.close()


def binary_consume(client: pulsar.Client, topic: str, n: int) -> None:
    consumer = client.subscribe(topic, "bench", initial_position=pulsar.InitialPosition.Earliest)
    for _ in range(n):
        consumer.acknowledge(consumer.receive(30000))
    consumer.close()


async def ws_produce(web_url: str, topic: str, n: int, payload: bytes, window: int) -> None:
    frame = json.dumps({"payload": base64.b64encode(payload).decode()})
    url = f"{web_url.replace('http', 'ws', 1)}/ws/v2/producer/{topic.replace('://', '/')}"
    async with aiohttp.ClientSession() as session, session.ws_connect(url, max_msg_size=0) as ws:
        sent = answered = 0
        while answered < n:
            while sent < n and sent - answered < window:
                await ws.send_str(frame)
                sent += 1
            answer = json.loads((await ws.receive()).data)
            if answer["result"] != "ok":
                raise RuntimeError(f"send failed: {answer}")
            answered += 1


async def ws_consume(web_url: str, topic: str, n: int) -> None:
    url = (f"{web_url.replace('http', 'ws', 1)}/ws/v2/consumer/{topic.replace('://', '/')}/bench"
           "?subscriptionInitialPosition=Earliest")
    async with aiohttp.ClientSession() as session, session.ws_connect(url, max_msg_size=0) as ws:
        for _ in range(n):
            message = json.loads((await ws.receive()).data)
            await ws.send_str(json.dumps({"messageId": message["messageId"]}))


def one_round(broker: BrokerProcess, client: pulsar.Client, args) -> dict[str, tuple[float, float]]:
    payload, n = b"x" * args.size, args.messages
    topics = {path: f"persistent://public/default/ws-bench-{path}-{uuid.uuid4().hex[:8]}"
              for path in ("binary", "websocket")}
    return {
        "binary produce": measure(broker.pid, n, lambda: binary_produce(client, topics["binary"], n, payload,
                                                                        args.window)),
        "websocket produce": measure(broker.pid, n, lambda: asyncio.run(
            ws_produce(broker.web_url, topics["websocket"], n, payload, args.window))),
        "binary consume": measure(broker.pid, n, lambda: binary_consume(client, topics["binary"], n)),
        "websocket consume": measure(broker.pid, n, lambda: asyncio.run(
            ws_consume(broker.web_url, topics["websocket"], n))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=500, help="messages in flight while producing (< 1000)")
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    results: dict[str, list[tuple[float, float]]] = {}
    with BrokerProcess(log_level="WARNING") as broker:
        client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        for number in range(args.rounds):
            for name, (rate, cpu) in one_round(broker, client, args).items():
                results.setdefault(name, []).append((rate, cpu))
                print(f"round {number}: {name:18s} {rate:9,.0f} msg/s  {cpu:6.1f} µs broker CPU/msg")
        client.close()
    print(f"\nmedians of {args.rounds} rounds, {args.messages} messages of {args.size} bytes:")
    medians = {name: (statistics.median(r for r, _ in runs), statistics.median(c for _, c in runs))
               for name, runs in results.items()}
    for name, (rate, cpu) in medians.items():
        print(f"  {name:18s} {rate:9,.0f} msg/s  {cpu:6.1f} µs broker CPU/msg")
    for what in ("produce", "consume"):
        (ws_rate, ws_cpu), (bin_rate, bin_cpu) = medians[f"websocket {what}"], medians[f"binary {what}"]
        print(f"  websocket / binary {what}: {ws_rate / bin_rate:.2f}x msg/s, {ws_cpu / bin_cpu:.2f}x broker CPU")
    print("command: python bench/websocket_perf.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
