"""Shared fixtures: a real broker on a free loopback port with a temporary data dir (in-process
or as a child process, started by minipulsar.launcher), a unique topic name, and the official
client (the oracle)."""
from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path

import pulsar
import pytest

from minipulsar.broker.config import build_config
from minipulsar.broker.broker import Broker
from minipulsar.broker.topic_name import TopicName
from minipulsar.launcher import BrokerProcess

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


@pytest.fixture
def broker_process(tmp_path):
    """Start broker processes (minipulsar.launcher.BrokerProcess, ready when returned):
    broker_process(data_dir=None, **options) with options port, web_port, args, env, verb, settings;
    data_dir defaults to tmp_path/"data". stop(sig) and restart() keep ports and data dir; the
    ones still running are killed at teardown."""
    procs = []

    def start(data_dir: Path | None = None, **options) -> BrokerProcess:
        p = BrokerProcess(data_dir or tmp_path / "data", **options).start()
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.kill()
