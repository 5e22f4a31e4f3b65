"""Broker memory under overload: RSS and open descriptors of a broker process in six scenarios,
each with its own broker, and whether the broker still serves afterwards.

    python bench/overload.py all                       # every scenario, one after the other
    python bench/overload.py idle
    python bench/overload.py topics [--topics 10000 --topic-workers 8]
    python bench/overload.py stalled-consumer [--backlog-mib 1024 --message-kib 512]
    python bench/overload.py slow-disk [--disk-mbps 5 --slow-disk-mib 150 --publish-buffer-mb 32]
    python bench/overload.py idle-connections [--connections 5000]
    python bench/overload.py connect-loop [--max-per-ip 1000 --attempts 3000 --loop-seconds 60]
    (or --scenario NAME)

The broker is `python -m minipulsar broker` with fsync on and settings as MINIPULSAR_<key>
variables; it is measured from outside: VmRSS (now) and VmHWM (peak since start) from
/proc/<pid>/status, and the count of /proc/<pid>/fd. Each scenario prints the broker's exact
command, a table, and ends with a produce/consume round trip on a new topic ("still serves").

- idle: a broker that just started, then after one round trip.
- topics: --topics topics, each with one producer and one Shared consumer of the official client
  (spread over --topic-workers processes), each producer sends 3 messages, each consumer receives
  them; RSS per topic-with-clients. Then the per-namespace limits, set through the admin API,
  refuse the next topic (NotAllowedError), a second producer (ProducerBusy) and a second consumer
  (ConsumerBusy) while everything admitted keeps working.
- stalled-consumer: a raw-socket consumer subscribes, grants permits for everything and never
  reads again, while producers write --backlog-mib; the broker must keep the backlog on disk:
  peak RSS about idle + managedLedgerCacheSizeMB + connectionWriteHighWaterMarkBytes +
  dispatcherMaxReadSizeBytes (+ the publish buffer while the disk lags the producers). Then a
  consumer drains the subscription and counts the messages.
- slow-disk: the data dir on a loop-device ext4 whose writes the broker's block-I/O cgroup
  throttles to --disk-mbps (cgroup v2 io.max or v1 blkio.throttle.write_bps_device; without
  either, the real disk and a small buffer), producers on four connections far faster than that:
  the broker logs "publish buffer full", peak RSS stays near idle + maxMessagePublishBufferSizeInMB
  + the entry cache, and every acknowledged message is consumed afterwards.
- idle-connections: --connections sockets that complete CONNECT and stay silent; RSS per connection.
- connect-loop: (a) with brokerMaxConnectionsPerIp=--max-per-ip, one address (127.0.0.2) opens
  --attempts connections and closes none: admitted vs refused (ERROR NotAllowedError before
  CONNECT, then close), RSS and fds bounded, and 127.0.0.1 is still served; (b) open, CONNECT,
  close in a loop for --loop-seconds: RSS and fds sampled every 5 s, slope of RSS.
Needs root for slow-disk's loop device and cgroup; the connection scenarios raise RLIMIT_NOFILE.
"""
from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import shlex
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pulsar
import requests

from minipulsar.launcher import BrokerProcess
from perf_compare import stop_brokers_on_sigterm  # bench/ is this script's folder, first on sys.path
from minipulsar.proto import PulsarApi_pb2 as api
from process_stats import (open_fds, peak_rss_kib, raise_nofile_limit, rss_kib,  # noqa: I001  (bench/ is on sys.path)
                           slope_kib_per_minute)
from minipulsar.proto.frames import encode_command

Type = api.BaseCommand.Type
NAMESPACE = "public/default"
QUIET = logging.getLogger("overload.pulsar-client")  # the refusals are expected; the table reports them
QUIET.setLevel(logging.CRITICAL)
MIB = 1024 * 1024


# ---- reporting ---------------------------------------------------------------------------------
@dataclass
class Report:
    scenario: str
    broker_command: str = ""
    rows: list[tuple[str, str]] = field(default_factory=list)
    serves: bool | None = None

    def add(self, label: str, value: object) -> None:
        self.rows.append((label, str(value)))
        print(f"  {label:<52} {value}", flush=True)


def mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def snapshot(report: Report, label: str, broker: BrokerProcess) -> int:
    """Add RSS, peak RSS and fds of the broker under label; returns RSS in KiB."""
    rss = rss_kib(broker.pid)
    report.add(f"{label}: RSS / peak (VmHWM) / fds",
               f"{mib(rss)} / {mib(peak_rss_kib(broker.pid))} / {open_fds(broker.pid)}")
    return rss


class RssSampler:
    """Samples the broker's RSS every interval on a thread, for the peak of one phase (VmHWM is
    the peak of the process's whole life)."""

    def __init__(self, pid: int, interval: float = 0.1):
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(self.interval):
            self.samples.append((time.monotonic() - start, rss_kib(self.pid)))

    @property
    def peak(self) -> int:
        return max((rss for _, rss in self.samples), default=rss_kib(self.pid))


def wait_until(predicate, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)  # state poll


# ---- the official client -----------------------------------------------------------------------
def new_topic(prefix: str) -> str:
    return f"persistent://{NAMESPACE}/{prefix}-{uuid.uuid4().hex[:8]}"


def round_trip(url: str) -> bool:
    """Produce one message to a new topic and consume it: the broker still serves."""
    client = pulsar.Client(url, operation_timeout_seconds=30, logger=QUIET)
    try:
        topic = new_topic("round-trip")
        consumer = client.subscribe(topic, "check")
        client.create_producer(topic).send(b"still serving")
        return consumer.receive(30_000).data() == b"still serving"
    except pulsar.PulsarException as exc:
        print(f"  round trip failed: {exc!r}", flush=True)
        return False
    finally:
        client.close()


def check_serves(report: Report, broker: BrokerProcess) -> None:
    alive = broker.proc.poll() is None
    report.serves = alive and round_trip(broker.url)
    report.add("broker alive / round trip on a new topic", f"{'yes' if alive else 'NO'} / "
               f"{'ok' if report.serves else 'FAILED'}")


def subscription_stats(broker: BrokerProcess, topic: str, subscription: str) -> dict:
    short = topic.rsplit("/", 1)[1]
    stats = requests.get(f"{broker.web_url}/admin/v2/persistent/{NAMESPACE}/{short}/stats", timeout=30).json()
    return stats["subscriptions"][subscription]


class Producers:
    """count producers over clients connections (one official client object is one connection),
    sending size-byte messages until total_bytes are sent; counts acknowledgements by (producer,
    sequence) so nothing acknowledged can go missing unnoticed."""

    def __init__(self, url: str, topic: str, count: int, clients: int, max_pending: int):
        self.clients = [pulsar.Client(url, operation_timeout_seconds=60, logger=QUIET) for _ in range(clients)]
        # No send timeout: a throttled broker makes sends wait, which is the point, not a failure.
        self.producers = [self.clients[i % clients].create_producer(
            topic, batching_enabled=False, block_if_queue_full=True, max_pending_messages=max_pending,
            send_timeout_millis=0) for i in range(count)]
        self.acked: set[tuple[int, int]] = set()
        self.failed = 0
        self._lock = threading.Lock()

    def send(self, size: int, total_bytes: int) -> float:
        """Send round-robin from one thread per producer; returns the seconds to the last receipt."""
        per_producer = max(1, total_bytes // size // len(self.producers))
        started = time.monotonic()
        threads = [threading.Thread(target=self._send_all, args=(index, size, per_producer))
                   for index in range(len(self.producers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - started

    def _send_all(self, index: int, size: int, messages: int) -> None:
        producer = self.producers[index]
        filler = b"x" * (size - 16)
        for seq in range(messages):
            producer.send_async(struct.pack(">QQ", index, seq) + filler, self._receipt(index, seq))
        producer.flush()

    def _receipt(self, index: int, seq: int):
        def done(result, _message_id) -> None:
            with self._lock:
                if result == pulsar.Result.Ok:
                    self.acked.add((index, seq))
                else:
                    self.failed += 1
        return done

    def close(self) -> None:
        for client in self.clients:
            client.close()


def drain(url: str, topic: str, subscription: str, idle_timeout_ms: int = 10_000) -> tuple[set, int]:
    """Consume the subscription to its end: the (producer, sequence) pairs received and how many
    messages arrived (more than the set's size means duplicates)."""
    client = pulsar.Client(url, operation_timeout_seconds=60, logger=QUIET)
    consumer = client.subscribe(topic, subscription, receiver_queue_size=100)
    seen, received = set(), 0
    try:
        while True:
            message = consumer.receive(idle_timeout_ms)
            seen.add(struct.unpack(">QQ", message.data()[:16]))
            received += 1
            consumer.acknowledge(message)
    except pulsar.Timeout:
        pass  # nothing more within idle_timeout_ms: the end of the backlog
    finally:
        client.close()
    return seen, received


# ---- raw protocol --------------------------------------------------------------------------------
def send_command(sock: socket.socket, command: api.BaseCommand) -> None:
    sock.sendall(encode_command(command))


def recv_exact(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_command(sock: socket.socket) -> api.BaseCommand | None:
    """The next command from the broker; None at end of stream. Payloads are skipped."""
    header = recv_exact(sock, 4)
    if header is None:
        return None
    body = recv_exact(sock, struct.unpack(">I", header)[0])
    if body is None:
        return None
    command = api.BaseCommand()
    command.ParseFromString(body[4:4 + struct.unpack(">I", body[:4])[0]])
    return command


CONNECT = api.BaseCommand(type=Type.CONNECT, connect=api.CommandConnect(
    client_version="bench-overload", protocol_version=20))


def raw_connect(port: int, source: str = "127.0.0.1", rcvbuf: int = 0) -> tuple[socket.socket, api.BaseCommand | None]:
    """A socket that sent CONNECT, and the broker's first reply (CONNECTED, or ERROR when a
    connection limit refused it; None if the broker reset it first)."""
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: sets the window
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    try:
        send_command(sock, CONNECT)
        return sock, read_command(sock)
    except ConnectionResetError:
        return sock, None


# ---- scenarios -----------------------------------------------------------------------------------
def scenario_idle(args, tmp: Path, report: Report) -> None:
    broker = launch(report, tmp, {})
    try:
        snapshot(report, "idle, just started", broker)
        check_serves(report, broker)
        snapshot(report, "idle, after one round trip", broker)
    finally:
        finish(report, broker)


def topic_worker(url: str, topics: list[str], ready, release) -> None:
    """One client process: a producer and a Shared consumer per topic, 3 messages each way; holds
    them all open until release is set."""
    client = pulsar.Client(url, operation_timeout_seconds=120, logger=QUIET)
    pairs = []
    for topic in topics:
        consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
        pairs.append((client.create_producer(topic, batching_enabled=False), consumer))
    for producer, _ in pairs:
        for i in range(3):
            producer.send_async(b"m%d" % i, None)
    received = 0
    for producer, consumer in pairs:
        producer.flush()
        for _ in range(3):
            consumer.acknowledge(consumer.receive(60_000))
            received += 1
    ready.put(received)
    release.wait()
    client.close()


def scenario_topics(args, tmp: Path, report: Report) -> None:
    broker = launch(report, tmp, {})
    context = multiprocessing.get_context("spawn")  # no pulsar client state crosses a fork
    ready, release = context.Queue(), context.Event()
    topics = [f"persistent://{NAMESPACE}/overload-{i}" for i in range(args.topics)]
    workers = [context.Process(target=topic_worker, args=(broker.url, topics[w::args.topic_workers], ready, release))
               for w in range(args.topic_workers)]
    try:
        base = snapshot(report, "idle", broker)
        started = time.monotonic()
        for worker in workers:
            worker.start()
        received = sum(ready.get(timeout=1800) for _ in workers)
        report.add(f"{args.topics:,} topics set up by {args.topic_workers} client processes in",
                   f"{time.monotonic() - started:.0f} s; {received:,} messages received of {3 * args.topics:,}")
        loaded = snapshot(report, "all topics with their clients", broker)
        report.add("per topic with one producer and one consumer", f"{(loaded - base) / args.topics:.1f} KiB")
        namespace_limits(report, broker, topics[0], args.topics)
        check_serves(report, broker)
    finally:
        release.set()
        for worker in workers:
            worker.join(120)
        finish(report, broker, stop_timeout=600)  # closing 10,000 ledgers takes a while: measure it


def namespace_limits(report: Report, broker: BrokerProcess, existing_topic: str, topic_count: int) -> None:
    """Set maxTopicsPerNamespace / maxProducersPerTopic / maxConsumersPerSubscription on the
    namespace at what it holds now; one more of each is refused with Pulsar's error; then remove them."""
    policies = f"{broker.web_url}/admin/v2/namespaces/{NAMESPACE}"
    limits = {"maxTopicsPerNamespace": topic_count, "maxProducersPerTopic": 1, "maxConsumersPerSubscription": 1}
    for key, value in limits.items():
        requests.post(f"{policies}/{key}", json=value, timeout=30).raise_for_status()
    client = pulsar.Client(broker.url, operation_timeout_seconds=10, logger=QUIET)
    attempts = {
        "maxTopicsPerNamespace: one more topic": lambda: client.create_producer(new_topic("one-too-many")),
        "maxProducersPerTopic=1: a second producer": lambda: client.create_producer(existing_topic),
        "maxConsumersPerSubscription=1: a second consumer": lambda: client.subscribe(
            existing_topic, "s", consumer_type=pulsar.ConsumerType.Shared),
    }
    try:
        for label, attempt in attempts.items():
            try:
                attempt()
                report.add(label, "ADMITTED (expected a refusal)")
            except pulsar.PulsarException as exc:
                report.add(label, f"refused: {type(exc).__name__}")
    finally:
        client.close()
        for key in limits:
            requests.delete(f"{policies}/{key}", timeout=30).raise_for_status()


def scenario_stalled_consumer(args, tmp: Path, report: Report) -> None:
    broker = launch(report, tmp, {})
    topic = new_topic("stalled")
    try:
        base = snapshot(report, "idle", broker)
        stalled = StalledConsumer(broker.port, topic, "stalled")
        producers = Producers(broker.url, topic, count=4, clients=2, max_pending=16)
        with RssSampler(broker.pid) as sampler:
            seconds = producers.send(args.message_kib * 1024, args.backlog_mib * MIB)
        producers.close()
        sent = len(producers.acked)
        report.add(f"written ({args.message_kib} KiB messages, 4 producers, 2 connections)",
                   f"{sent * args.message_kib / 1024:,.0f} MiB = {sent:,} messages acknowledged, "
                   f"{producers.failed} failed, in {seconds:.0f} s")
        stats = subscription_stats(broker, topic, "stalled")
        report.add("subscription backlog / sent to the stalled consumer",
                   f"{stats['msgBacklog']:,} / {sum(c['msgOutCounter'] for c in stats['consumers']):,} messages")
        report.add("peak RSS while writing (sampled) / VmHWM", f"{mib(sampler.peak)} / {mib(peak_rss_kib(broker.pid))}")
        report.add("peak RSS above idle", mib(peak_rss_kib(broker.pid) - base))
        snapshot(report, "after writing, consumer still stalled", broker)
        stalled.close()
        with RssSampler(broker.pid) as sampler:
            seen, received = drain(broker.url, topic, "stalled")
        report.add("drained by a new consumer: distinct / received / missing", f"{len(seen):,} / {received:,} / "
                   f"{len(producers.acked - seen):,}")
        report.add("peak RSS while draining (sampled)", mib(sampler.peak))
        check_serves(report, broker)
    finally:
        finish(report, broker)


class StalledConsumer:
    """A raw-socket Exclusive consumer from the earliest position that grants permits for
    everything, then never reads its socket again (a small receive buffer, so the broker's own
    write buffer fills quickly). A thread sends a PONG every 10 s: the broker's keep-alive would
    otherwise drop the silent connection after two unanswered PINGs (60 s) and end the stall."""

    def __init__(self, port: int, topic: str, subscription: str):
        self.sock, reply = raw_connect(port, rcvbuf=64 * 1024)
        assert reply is not None and reply.type == Type.CONNECTED, reply
        send_command(self.sock, api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription=subscription, subType=api.CommandSubscribe.Exclusive, consumer_id=1,
            request_id=1, initialPosition=api.CommandSubscribe.Earliest)))
        reply = read_command(self.sock)
        assert reply is not None and reply.type == Type.SUCCESS, reply
        send_command(self.sock, api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(
            consumer_id=1, messagePermits=10_000_000)))
        self._stop = threading.Event()
        self._keeper = threading.Thread(target=self._keep_alive, daemon=True)
        self._keeper.start()

    def _keep_alive(self) -> None:
        while not self._stop.wait(10):
            send_command(self.sock, api.BaseCommand(type=Type.PONG, pong=api.CommandPong()))

    def close(self) -> None:
        self._stop.set()
        self._keeper.join()
        self.sock.close()


def scenario_slow_disk(args, tmp: Path, report: Report) -> None:
    disk = SlowDisk(tmp, args.disk_mbps)
    report.add("disk", disk.describe())
    settings = {"maxMessagePublishBufferSizeInMB": args.publish_buffer_mb}
    broker = None
    try:
        broker = launch(report, tmp, settings, data_dir=disk.data_dir(tmp), preexec_fn=disk.join_from_child)
        run_slow_disk(args, broker, report)
    finally:
        if broker is not None:
            finish(report, broker)
        disk.remove()


def run_slow_disk(args, broker: BrokerProcess, report: Report) -> None:
    topic = new_topic("slow-disk")
    base = snapshot(report, "idle", broker)
    pulsar.Client(broker.url, logger=QUIET).subscribe(topic, "all").close()  # the subscription keeps every message
    producers = Producers(broker.url, topic, count=8, clients=4, max_pending=32)
    with RssSampler(broker.pid) as sampler:
        seconds = producers.send(args.message_kib * 1024, args.slow_disk_mib * MIB)
    producers.close()
    acked = producers.acked
    report.add(f"written ({args.message_kib} KiB messages, 8 producers, 4 connections)",
               f"{len(acked) * args.message_kib / 1024:,.0f} MiB = {len(acked):,} acknowledged, "
               f"{producers.failed} failed, in {seconds:.0f} s = "
               f"{len(acked) * args.message_kib / 1024 / seconds:.1f} MiB/s")
    log = broker.log_text()
    report.add('"publish buffer full" WARNINGs in the broker log', log.count("publish buffer full"))
    report.add("peak RSS while writing (sampled) / VmHWM", f"{mib(sampler.peak)} / {mib(peak_rss_kib(broker.pid))}")
    report.add("peak RSS above idle", mib(peak_rss_kib(broker.pid) - base))
    seen, received = drain(broker.url, topic, "all")
    report.add("consumed afterwards: distinct / received / acknowledged but missing",
               f"{len(seen):,} / {received:,} / {len(acked - seen):,}")
    check_serves(report, broker)


class SlowDisk:
    """A loop-device ext4 file system for the broker's data dir, with the broker's writes to it
    throttled to mbps by a block-I/O cgroup: cgroup v2 io.max when the io controller is there,
    else v1 blkio.throttle.write_bps_device. If none of that can be set up (not root, no loop
    device), the data dir stays on the real disk and describe() says so."""

    V2_ROOT, V1_ROOT = Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/blkio")

    def __init__(self, tmp: Path, mbps: float):
        self.mbps, self.mount = mbps, tmp / "slow-disk"
        self.loop = self.cgroup = None
        self.error = ""
        try:
            self._make_filesystem(tmp)
            self._make_cgroup()
        except (OSError, subprocess.CalledProcessError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            self.remove()

    def _make_filesystem(self, tmp: Path) -> None:
        image = tmp / "slow-disk.img"
        with open(image, "wb") as f:
            f.truncate(4 << 30)  # sparse: room for the data, nothing allocated up front
        self.loop = subprocess.check_output(["losetup", "-f", "--show", str(image)], text=True).strip()
        subprocess.run(["mkfs.ext4", "-q", self.loop], check=True)
        self.mount.mkdir()
        subprocess.run(["mount", self.loop, str(self.mount)], check=True)

    def _make_cgroup(self) -> None:
        device = Path(f"/sys/block/{Path(self.loop).name}/dev").read_text().strip()
        limit = int(self.mbps * MIB)
        name = f"minipulsar-overload-{os.getpid()}"
        if self._v2_has_io():
            (self.V2_ROOT / "cgroup.subtree_control").write_text("+io")
            self.cgroup, self.kind = self.V2_ROOT / name, "cgroup v2 io.max"
            self.cgroup.mkdir()
            (self.cgroup / "io.max").write_text(f"{device} wbps={limit}")
        else:
            self.cgroup, self.kind = self.V1_ROOT / name, "cgroup v1 blkio.throttle.write_bps_device"
            self.cgroup.mkdir()
            (self.cgroup / "blkio.throttle.write_bps_device").write_text(f"{device} {limit}")

    def _v2_has_io(self) -> bool:
        controllers = self.V2_ROOT / "cgroup.controllers"
        return controllers.exists() and "io" in controllers.read_text().split()

    @property
    def throttled(self) -> bool:
        return self.cgroup is not None

    def data_dir(self, tmp: Path) -> Path:
        return self.mount / "data" if self.throttled else tmp / "data"

    def describe(self) -> str:
        if self.throttled:
            return f"{self.loop} ext4, writes throttled to {self.mbps:g} MiB/s by {self.kind}"
        return f"real disk, unthrottled (slow disk set-up failed: {self.error})"

    def join_from_child(self) -> None:
        """preexec_fn of the broker: move itself into the cgroup before exec, so every thread it
        starts (the ledgers' writer threads do the fdatasync) is throttled."""
        raise_nofile_limit()
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self) -> None:
        if self.mount.is_mount():
            subprocess.run(["umount", str(self.mount)], check=False)
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], check=False)
        if self.cgroup is not None and self.cgroup.exists():
            self.cgroup.rmdir()  # empty once the broker has exited


def scenario_idle_connections(args, tmp: Path, report: Report) -> None:
    broker = launch(report, tmp, {}, preexec_fn=raise_nofile_limit)
    sockets = []
    try:
        base, base_fds = snapshot(report, "idle", broker), open_fds(broker.pid)
        for _ in range(args.connections):
            sock, reply = raw_connect(broker.port)
            assert reply is not None and reply.type == Type.CONNECTED, reply
            sockets.append(sock)
        held = snapshot(report, f"{args.connections:,} silent connections after CONNECT", broker)
        report.add("per connection", f"{(held - base) / args.connections:.1f} KiB")
        check_serves(report, broker)
        close_all(sockets)
        settled(broker, base_fds)
        snapshot(report, "after closing them", broker)
    finally:
        close_all(sockets)
        finish(report, broker)


def settled(broker: BrokerProcess, base_fds: int) -> None:
    """Wait until the broker has closed its side of the sockets we closed (a round trip may have
    left one topic's ledger file open, hence the margin)."""
    wait_until(lambda: open_fds(broker.pid) <= base_fds + 3, "the broker to close the connections")


def close_all(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()
    sockets.clear()


def scenario_connect_loop(args, tmp: Path, report: Report) -> None:
    broker = launch(report, tmp, {"brokerMaxConnectionsPerIp": args.max_per_ip}, preexec_fn=raise_nofile_limit)
    try:
        snapshot(report, "idle", broker)
        connections_never_closed(args, broker, report)
        connect_close_loop(args, broker, report)
        check_serves(report, broker)
    finally:
        finish(report, broker)


def connections_never_closed(args, broker: BrokerProcess, report: Report) -> None:
    """(a): --attempts connections from 127.0.0.2, none closed by the client."""
    base_fds = open_fds(broker.pid)
    held, outcomes = [], {"admitted": 0, "refused with NotAllowedError": 0, "other reply": 0, "reset before a reply": 0}
    for _ in range(args.attempts):
        sock, reply = raw_connect(broker.port, source="127.0.0.2")
        if reply is not None and reply.type == Type.CONNECTED:
            outcomes["admitted"] += 1
            held.append(sock)
            continue
        if reply is None:
            outcomes["reset before a reply"] += 1
        elif reply.type == Type.ERROR and reply.error.error == api.NotAllowedError:
            outcomes["refused with NotAllowedError"] += 1
        else:
            outcomes["other reply"] += 1
        sock.close()
    report.add(f"(a) {args.attempts:,} connections from 127.0.0.2, none closed (limit {args.max_per_ip:,} per address)",
               ", ".join(f"{k} {v:,}" for k, v in outcomes.items()))
    snapshot(report, "(a) while they are held", broker)
    report.add("(a) 127.0.0.1 meanwhile: round trip", "ok" if round_trip(broker.url) else "FAILED")
    close_all(held)
    settled(broker, base_fds)
    snapshot(report, "(a) after closing them", broker)


def connect_close_loop(args, broker: BrokerProcess, report: Report) -> None:
    """(b): open, CONNECT, close, for --loop-seconds; RSS and fds every 5 s."""
    samples, fds, opened = [], [], 0
    started = next_sample = time.monotonic()
    while (now := time.monotonic()) - started < args.loop_seconds:
        if now >= next_sample:
            samples.append((now - started, rss_kib(broker.pid)))
            fds.append(open_fds(broker.pid))
            next_sample += 5
        sock, reply = raw_connect(broker.port)
        assert reply is not None and reply.type == Type.CONNECTED, reply
        sock.close()
        opened += 1
    samples.append((time.monotonic() - started, rss_kib(broker.pid)))
    fds.append(open_fds(broker.pid))
    report.add(f"(b) open-CONNECT-close loop for {args.loop_seconds:.0f} s",
               f"{opened:,} connections ({opened / args.loop_seconds:,.0f}/s)")
    report.add("(b) RSS start / end / max", " / ".join(mib(r) for r in (samples[0][1], samples[-1][1],
                                                                         max(r for _, r in samples))))
    report.add("(b) RSS slope (least squares over 5 s samples)", f"{slope_kib_per_minute(samples):+.0f} KiB/min")
    report.add("(b) broker fds start / end / max", f"{fds[0]} / {fds[-1]} / {max(fds)}")


# ---- driver --------------------------------------------------------------------------------------
def launch(report: Report, tmp: Path, settings: dict, data_dir: Path | None = None, preexec_fn=None) -> BrokerProcess:
    broker = BrokerProcess(data_dir or tmp / "data", settings, log_path=tmp / "broker.log", log_level="WARNING",
                           preexec_fn=preexec_fn, startup_timeout=60).start()
    report.broker_command = broker.command_line()
    print(f"  broker: {report.broker_command}", flush=True)
    return broker


def finish(report: Report, broker: BrokerProcess, stop_timeout: float = 30) -> None:
    """Stop the broker (SIGTERM, SIGKILL after stop_timeout); report an OOM kill or crash, how
    long the clean shutdown took, and ERROR lines of its log."""
    died = broker.proc.poll()
    started = time.monotonic()
    code = broker.stop(timeout=stop_timeout)
    took = time.monotonic() - started
    if died is not None:
        report.add("broker exit", f"DIED during the run with {died}")
    elif code == -9:
        report.add("broker exit", f"SIGTERM did not stop it within {stop_timeout:.0f} s: SIGKILLed")
    else:
        report.add("broker exit", f"stopped by SIGTERM in {took:.1f} s, exit {code}")
    errors = [line for line in broker.log_text().splitlines() if " ERROR " in line or "Traceback" in line]
    if errors:
        report.add("ERROR lines in the broker log", f"{len(errors)}; first: {errors[0][:200]}")


SCENARIOS = {
    "idle": scenario_idle,
    "topics": scenario_topics,
    "stalled-consumer": scenario_stalled_consumer,
    "slow-disk": scenario_slow_disk,
    "idle-connections": scenario_idle_connections,
    "connect-loop": scenario_connect_loop,
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", choices=[*SCENARIOS, "all"])
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--topic-workers", type=int, default=8, help="client processes for the topics scenario")
    parser.add_argument("--backlog-mib", type=int, default=1024, help="stalled-consumer: MiB written")
    parser.add_argument("--message-kib", type=int, default=512, help="message size of stalled-consumer and slow-disk")
    parser.add_argument("--disk-mbps", type=float, default=5, help="slow-disk: write bandwidth, MiB/s")
    parser.add_argument("--slow-disk-mib", type=int, default=150, help="slow-disk: MiB written")
    parser.add_argument("--publish-buffer-mb", type=int, default=32, help="slow-disk: maxMessagePublishBufferSizeInMB")
    parser.add_argument("--connections", type=int, default=5000)
    parser.add_argument("--max-per-ip", type=int, default=1000, help="connect-loop: brokerMaxConnectionsPerIp")
    parser.add_argument("--attempts", type=int, default=3000, help="connect-loop (a): connections opened")
    parser.add_argument("--loop-seconds", type=float, default=60, help="connect-loop (b): duration")
    args = parser.parse_args()
    args.scenario = args.scenario or args.name
    if not args.scenario:
        parser.error("name a scenario (or all)")
    return args


def main() -> None:
    args = parse_args()
    stop_brokers_on_sigterm()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    nofile = raise_nofile_limit()  # the connection scenarios hold thousands of sockets
    print(f"RLIMIT_NOFILE {nofile}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    reports = []
    for name in names:
        print(f"\n== {name} ==", flush=True)
        report = Report(name)
        with tempfile.TemporaryDirectory(prefix=f"overload-{name}-") as tmp:
            SCENARIOS[name](args, Path(tmp), report)
        reports.append(report)
    print("\nsummary: " + ", ".join(f"{r.scenario} {'serves' if r.serves else 'DOES NOT SERVE'}" for r in reports))
    if not all(r.serves for r in reports):
        sys.exit(1)


if __name__ == "__main__":
    main()
