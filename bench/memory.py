"""Broker memory: RSS per idle topic and per idle connection, and RSS over a steady workload.

    python bench/memory.py                                   # 2,000 topics, 2,000 connections, 10 min
    python bench/memory.py --topics 10000 --connections 5000 --minutes 2

A minipulsar process (fsync on) is measured from outside (/proc/<pid>/status VmRSS):
1. idle topics: --topics topics created through the admin API (each loaded, with its managed
   ledger open and no client), RSS before and after, per topic;
2. idle connections: --connections sockets that completed CONNECT and then stay silent;
3. a steady workload for --minutes: one producer (unbatched, 1,000 msg/s) and one consumer on a
   new topic each 10 s, the old ones closed, RSS sampled every 10 s; prints the samples and the
   slope of a least-squares line through them (KiB per minute) so growth shows as a number.
"""
from __future__ import annotations

import argparse
import shlex
import socket
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pulsar
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from minipulsar.launcher import BrokerProcess  # noqa: E402
from perf_compare import stop_brokers_on_sigterm  # noqa: E402  (bench/ is this script's folder, first on sys.path)
from minipulsar.proto import PulsarApi_pb2 as api  # noqa: E402
from minipulsar.proto.frames import encode_command  # noqa: E402

from process_stats import rss_kib, slope_kib_per_minute  # noqa: E402  (the script's folder is on sys.path)


def idle_topics(web: str, count: int) -> None:
    session = requests.Session()
    for i in range(count):
        session.put(f"{web}/admin/v2/persistent/public/default/idle-{i}", timeout=30).raise_for_status()


def idle_connections(port: int, count: int) -> list[socket.socket]:
    connect = encode_command(api.BaseCommand(type=api.BaseCommand.CONNECT, connect=api.CommandConnect(
        client_version="bench-memory", protocol_version=20)))
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(connect)
        size = struct.unpack(">I", sock.recv(4))[0]
        sock.recv(size)  # CONNECTED
        sockets.append(sock)
    return sockets


def steady_workload(url: str, pid: int, minutes: float) -> list[tuple[float, int]]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    samples, start = [], time.monotonic()
    while time.monotonic() - start < minutes * 60:
        topic = f"persistent://public/default/steady-{uuid.uuid4().hex[:8]}"
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic, batching_enabled=False)
        window_end = time.monotonic() + 10
        sent = 0
        while time.monotonic() < window_end:
            producer.send_async(b"x" * 100, None)
            sent += 1
            time.sleep(0.001)  # pacing at ~1,000 msg/s
        producer.flush()
        for _ in range(sent):
            consumer.acknowledge(consumer.receive(10000))
        producer.close()
        consumer.unsubscribe()
        samples.append((time.monotonic() - start, rss_kib(pid)))
    client.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--minutes", type=float, default=10)
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", log_level="WARNING", startup_timeout=60).start()
        port, web_port = broker.port, broker.web_port
        try:
            base = rss_kib(broker.pid)
            print(f"idle broker: {base / 1024:.1f} MiB")
            before = rss_kib(broker.pid)
            idle_topics(f"http://127.0.0.1:{web_port}", args.topics)
            after = rss_kib(broker.pid)
            print(f"{args.topics:,} idle topics: +{(after - before) / 1024:.1f} MiB = "
                  f"{(after - before) / args.topics:.1f} KiB per topic")
            before = after
            sockets = idle_connections(port, args.connections)
            after = rss_kib(broker.pid)
            print(f"{args.connections:,} idle connections: +{(after - before) / 1024:.1f} MiB = "
                  f"{(after - before) / args.connections:.1f} KiB per connection")
            for sock in sockets:
                sock.close()
            if args.minutes > 0:
                samples = steady_workload(f"pulsar://127.0.0.1:{port}", broker.pid, args.minutes)
                print("steady workload RSS (s, MiB): " + ", ".join(f"{t:.0f}:{r / 1024:.1f}" for t, r in samples))
                print(f"slope {slope_kib_per_minute(samples):+.0f} KiB/min over {args.minutes} min")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
