"""Helpers every kind of test shares (import them as ``tests.helpers``): an in-process broker on its
own thread (BrokerThread, the `broker` fixtures' broker), draining a consumer, waiting for a
condition, a wall-clock cut between two publishes, a bare socket that speaks frames (to send what
no real client would), a probe of a subscription's backlog in a broker that runs as a process,
and REST calls on a broker's web service (Admin, rest_path). Broker processes come from
minipulsar.launcher."""
from __future__ import annotations

import asyncio
import collections
import inspect
import socket
import threading
import time
from pathlib import Path

import pulsar
import requests

from minipulsar.broker.broker import Broker
from minipulsar.broker.config import build_config
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import FrameDecoder, encode_command, encode_payload_command


class BrokerThread:
    """An in-process Broker running on its own event loop in a background thread, so blocking
    clients (the official pulsar package) can talk to it from the test thread."""

    def __init__(self, data_dir: Path, **settings):
        self.settings = {"dataDir": str(data_dir), "brokerServicePort": 0, "webServicePort": 0,
                         "bindAddress": "127.0.0.1", **settings}
        self.loop = asyncio.new_event_loop()
        self.broker: Broker | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> "BrokerThread":
        self._thread.start()
        self.broker = Broker(build_config(self.settings))
        self.call(self.broker.start())
        return self

    def call(self, coro, timeout: float = 30):
        """Run coro on the broker's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def run(self, fn, timeout: float = 30):
        """Run a plain function on the broker's loop (to read broker state safely)."""
        async def wrapper():
            return fn()
        return self.call(wrapper(), timeout)

    @property
    def url(self) -> str:
        return self.broker.service_url

    def topic_stats(self, topic: str) -> dict:
        """The topic's stats (Pulsar's TopicStats field names), read on the broker's loop."""
        return self.run(lambda: self.broker.topics[str(TopicName.parse(topic))].stats())

    def subscription_stats(self, topic: str, subscription: str) -> dict:
        """The subscription's stats (Pulsar's SubscriptionStats field names: msgBacklog,
        markDeletePosition, consumers, ...), read on the broker's loop."""
        return self.topic_stats(topic)["subscriptions"][subscription]

    def stop(self) -> None:
        """Stop the broker and its loop; a second call does nothing."""
        if self.loop.is_closed():
            return
        if self.broker is not None:
            self.call(self.broker.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


def drain(consumer, timeout_ms: int = 300, ack: bool = False) -> list:
    """Every message that arrives until the consumer stays quiet for timeout_ms (acknowledged
    on the way when ack)."""
    got = []
    while True:
        try:
            message = consumer.receive(timeout_ms)
        except pulsar.Timeout:
            return got
        got.append(message)
        if ack:
            consumer.acknowledge(message)


def _describe(predicate) -> str:
    try:
        return inspect.getsource(predicate).strip()
    except (OSError, TypeError):
        return repr(predicate)


def _check(predicate, what: str | None, timeout: float, deadline: float):
    """predicate()'s value; past the deadline a falsy value raises AssertionError naming what was
    awaited (what, else the predicate's source) and the last value seen."""
    value = predicate()
    if not value and time.monotonic() >= deadline:
        raise AssertionError(f"timed out after {timeout} s waiting for {what or _describe(predicate)}"
                             f" (last value: {value!r})")
    return value


def wait_for(predicate, what: str | None = None, timeout: float = 20.0, interval: float = 0.05):
    """Poll predicate() until it returns something truthy, and return that value; AssertionError
    after timeout seconds. Exceptions from predicate propagate: a broken probe is not a wait."""
    deadline = time.monotonic() + timeout
    while not (value := _check(predicate, what, timeout, deadline)):
        time.sleep(interval)  # the poll interval of this deadline-bounded wait
    return value


async def wait_for_async(predicate, what: str | None = None, timeout: float = 20.0, interval: float = 0.05):
    """wait_for for tests on an event loop: polls without blocking the loop (the bundled client
    runs on it), same semantics."""
    deadline = time.monotonic() + timeout
    while not (value := _check(predicate, what, timeout, deadline)):
        await asyncio.sleep(interval)  # the poll interval of this deadline-bounded wait
    return value


def storage_checkpoints(web_url: str) -> float:
    """minipulsar_storage_checkpoints_total from the broker's /metrics: checkpoints its ledger
    storage recorded (segments synced behind the journal, journal files before them dropped)."""
    metrics = requests.get(web_url + "/metrics", timeout=10).text
    line = next(line for line in metrics.splitlines() if line.startswith("minipulsar_storage_checkpoints_total"))
    return float(line.rsplit(" ", 1)[1])


def now_ms() -> int:
    """The wall clock in milliseconds since the epoch, the unit of Pulsar's publish_time."""
    return time.time_ns() // 1_000_000


def publish_time_cut() -> int:
    """A millisecond strictly after every publish made before the call and strictly before every
    publish made after it returns, for seeks by publish time (Pulsar's resetCursor(timestamp)):
    waits for the wall clock to tick past now, takes that millisecond, waits for it to pass."""
    before = now_ms()
    cut = wait_for(lambda: (t := now_ms()) > before and t, f"the wall clock to pass {before} ms", interval=0.001)
    wait_for(lambda: now_ms() > cut, f"the wall clock to pass {cut} ms", interval=0.001)
    return cut


class RawConnection:
    """A bare socket speaking frames, to send what no real client would."""

    def __init__(self, url: str):
        host, port = url.removeprefix("pulsar://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=2)
        self.decoder = FrameDecoder()
        self.pending: collections.deque = collections.deque()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, command: api.BaseCommand, payload: bytes | None = None) -> None:
        self.send_raw(encode_command(command) if payload is None else encode_payload_command(command, payload))

    def receive(self) -> api.BaseCommand:
        while not self.pending:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by broker")
            self.pending.extend(frame.command for frame in self.decoder.feed(chunk))
        return self.pending.popleft()

    def is_closed_by_peer(self) -> bool:
        """True when the broker closed the socket (reads EOF) within the socket timeout."""
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def connect(self) -> api.BaseCommand:
        self.send(api.BaseCommand(type=api.BaseCommand.CONNECT, connect=api.CommandConnect(client_version="raw", protocol_version=20)))
        return self.receive()

    def close(self) -> None:
        self.sock.close()


def subscription_backlog(url: str, topic: str, subscription: str,
                         sub_type: int = api.CommandSubscribe.Shared) -> int:
    """msgBacklog of an existing subscription in a broker that runs as a process (whose stats the
    test cannot read in-process), from CONSUMER_STATS_RESPONSE: a probe consumer joins with no
    permits (no FLOW, so it is sent nothing and acknowledges nothing), asks, and leaves."""
    probe = RawConnection(url)
    try:
        probe.sock.settimeout(10)
        assert probe.connect().type == api.BaseCommand.CONNECTED
        probe.send(api.BaseCommand(type=api.BaseCommand.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription=subscription, subType=sub_type, consumer_id=1, request_id=1,
            consumer_name="backlog-probe")))
        reply = probe.receive()
        assert reply.type == api.BaseCommand.SUCCESS, reply
        probe.send(api.BaseCommand(type=api.BaseCommand.CONSUMER_STATS, consumerStats=api.CommandConsumerStats(
            request_id=2, consumer_id=1)))
        reply = probe.receive()
        assert reply.type == api.BaseCommand.CONSUMER_STATS_RESPONSE and not reply.consumerStatsResponse.HasField(
            "error_code"), reply
        backlog = reply.consumerStatsResponse.msgBacklog
        probe.send(api.BaseCommand(type=api.BaseCommand.CLOSE_CONSUMER, close_consumer=api.CommandCloseConsumer(
            consumer_id=1, request_id=3)))
        assert probe.receive().type == api.BaseCommand.SUCCESS
        return backlog
    finally:
        probe.close()


class Admin:
    """requests against base_url; every call returns the requests.Response."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.session = requests.Session()

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.session.get(self.base_url + path, timeout=30, **kwargs)

    def put(self, path: str, **kwargs) -> requests.Response:
        return self.session.put(self.base_url + path, timeout=30, **kwargs)

    def post(self, path: str, **kwargs) -> requests.Response:
        return self.session.post(self.base_url + path, timeout=30, **kwargs)

    def delete(self, path: str, **kwargs) -> requests.Response:
        return self.session.delete(self.base_url + path, timeout=30, **kwargs)


def rest_path(topic: str) -> str:
    """persistent://t/ns/x -> /persistent/t/ns/x, as the v2 REST paths spell a topic."""
    domain, rest = topic.split("://", 1)
    return f"/{domain}/{rest}"
