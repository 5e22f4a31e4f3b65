"""A real minipulsar broker for your tests: `run_broker()` for any framework, and pytest fixtures.

    from minipulsar.testing import run_broker
    with run_broker() as broker:                 # a broker process on free ports, data in a temp dir
        client = pulsar.Client(broker.service_url)

With pytest the fixtures come by themselves once minipulsar is installed (a `pytest11` plugin):

    def test_orders(minipulsar_service_url):     # pulsar://127.0.0.1:<port>, one broker per session
        client = pulsar.Client(minipulsar_service_url)

`minipulsar_broker` (session scope) is the RunningBroker itself (service_url, web_service_url,
data_dir, log_path). When a test that used it fails, the tail of the broker's log is added to the
report. The broker runs as `python -m minipulsar broker` with this interpreter, stops with SIGTERM
after the session and its data dir is removed.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import pytest

LOG_TAIL_LINES = 40
READY_PATH = "/admin/v2/brokers/ready"


@dataclass(frozen=True)
class RunningBroker:
    """service_url: pulsar://127.0.0.1:<port>; web_service_url: http://127.0.0.1:<port>;
    data_dir: its data folder; log_path: where its log lines go; process: the child process."""

    service_url: str
    web_service_url: str
    data_dir: Path
    log_path: Path
    process: subprocess.Popen

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last lines of the broker's log."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ready(web_service_url: str) -> bool:
    try:
        with urllib.request.urlopen(web_service_url + READY_PATH, timeout=1) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def run_broker(settings: Mapping[str, str] | None = None, startup_timeout: float = 30.0) -> Iterator[RunningBroker]:
    """A broker process on free loopback ports with a temporary data dir, ready when yielded
    (its /admin/v2/brokers/ready answers), stopped and cleaned up after.

    settings: broker.conf keys (Pulsar's names) passed as MINIPULSAR_<key> variables, e.g.
    {"brokerDeduplicationEnabled": "true"}. Raises RuntimeError, with the log tail, when the broker
    does not start within startup_timeout seconds."""
    folder = Path(tempfile.mkdtemp(prefix="minipulsar-"))
    log_path = folder / "broker.log"
    ports = _free_port(), _free_port()
    env = {**os.environ, **{f"MINIPULSAR_{k}": str(v) for k, v in (settings or {}).items()}}
    command = [sys.executable, "-m", "minipulsar", "broker", "--data-dir", str(folder / "data"),
               "--bind-address", "127.0.0.1", "--broker-service-port", str(ports[0]),
               "--web-service-port", str(ports[1])]
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    broker = RunningBroker(f"pulsar://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}", folder / "data",
                           log_path, process)
    try:
        _wait_ready(broker, startup_timeout)
        yield broker
    finally:
        _stop(process)
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(broker: RunningBroker, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not _ready(broker.web_service_url):
        if broker.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"minipulsar broker did not start (exit status {broker.process.poll()}); "
                               f"its log ends with:\n{broker.log_tail()}")
        time.sleep(0.05)  # the poll interval of this deadline-bounded wait for readiness


def _stop(process: subprocess.Popen, timeout: float = 20.0) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ---- the pytest plugin ---------------------------------------------------------------------
_BROKER_LOG_KEY = pytest.StashKey[RunningBroker]()


@pytest.fixture(scope="session")
def minipulsar_broker(request) -> Iterator[RunningBroker]:
    """One real minipulsar broker for the whole test session (see the module docstring)."""
    with run_broker() as broker:
        request.session.stash[_BROKER_LOG_KEY] = broker
        yield broker


@pytest.fixture
def minipulsar_service_url(minipulsar_broker: RunningBroker) -> str:
    """The session broker's pulsar:// service URL."""
    return minipulsar_broker.service_url


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Add the broker's log tail to the report of a failed test that used the broker."""
    outcome = yield
    report = outcome.get_result()
    broker = item.session.stash.get(_BROKER_LOG_KEY, None)
    if report.failed and broker is not None and "minipulsar_broker" in getattr(item, "fixturenames", ()):
        report.sections.append(("minipulsar broker log (last lines)", broker.log_tail()))
