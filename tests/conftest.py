"""Shared fixtures: a real broker on a free loopback port with a temporary data dir (in-process
or as a child process), a unique topic name, and the official client (the oracle)."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pulsar
import pytest

from minipulsar.broker.config import build_config
from minipulsar.broker.broker import Broker
from minipulsar.broker.topic_name import TopicName

ROOT = Path(__file__).resolve().parent.parent

pytest_plugins = ["pytester"]  # tests/integration/test_testing_plugin.py runs a project of its own


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


@pytest.fixture
def broker_factory(tmp_path):
    """Start brokers with extra settings: broker_factory(maxMessageSize=...); all stop at teardown."""
    started = []

    def start(data_dir: Path | None = None, **settings) -> BrokerThread:
        b = BrokerThread(data_dir or tmp_path / f"data{len(started)}", **settings).start()
        started.append(b)
        return b

    yield start
    for b in started:
        b.stop()


@pytest.fixture
def broker(broker_factory) -> BrokerThread:
    return broker_factory()


@pytest.fixture
def topic() -> str:
    """A topic name no other test uses."""
    return f"persistent://public/default/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def official(broker):
    """The official client (pulsar-client) connected to `broker`, closed at teardown."""
    c = pulsar.Client(broker.url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield c
    c.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """`python -m minipulsar broker ...` (or another verb that runs a broker, such as `standalone`)
    as a child process, the way users run it."""

    def __init__(self, data_dir: Path, port: int | None = None, extra_args: tuple[str, ...] = (), env=None,
                 verb: str = "broker"):
        self.data_dir = data_dir
        self.verb = verb
        self.port = port or free_port()
        self.extra_args = extra_args
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / f"broker-{self.port}.log"

    @property
    def url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20) -> "BrokerProcess":
        cmd = [sys.executable, "-m", "minipulsar", self.verb, "--data-dir", str(self.data_dir),
               "--broker-service-port", str(self.port), "--web-service-port", "0", "--bind-address", "127.0.0.1",
               *self.extra_args]
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}: {self.log_path.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)  # the poll interval of this deadline-bounded wait for the port
        raise TimeoutError(f"broker did not listen on {self.port}: {self.log_path.read_text()}")

    def stop(self, sig: int = 15, timeout: float = 20) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self._log.close()
        return code


@pytest.fixture
def broker_process(tmp_path):
    procs = []

    def start(data_dir: Path | None = None, **kwargs) -> BrokerProcess:
        p = BrokerProcess(data_dir or tmp_path / "data", **kwargs).start()
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.proc and p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()
