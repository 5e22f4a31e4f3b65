"""A real minipulsar broker for your tests: `run_broker()` for any framework, and pytest fixtures.

    from minipulsar.testing import run_broker
    with run_broker() as broker:                 # a broker process on free ports, data in a temp dir
        client = pulsar.Client(broker.service_url)

With pytest the fixtures come by themselves once minipulsar is installed (a `pytest11` plugin):

    def test_orders(minipulsar_service_url):     # pulsar://127.0.0.1:<port>, one broker per session
        client = pulsar.Client(minipulsar_service_url)

`minipulsar_broker` (session scope) is the RunningBroker itself (service_url, web_service_url,
data_dir, log_path, log_tail(), process). When a test that used it fails, the tail of the broker's
log is added to the report. The broker runs as `python -m minipulsar broker` with this interpreter,
stops with SIGTERM after the session and its data dir is removed.

run_broker(settings, startup_timeout, **options) takes minipulsar.launcher.BrokerProcess's options
as well (args, env, verb, log_level, ...); a RunningBroker is a BrokerProcess, so it can also
stop(signal.SIGKILL) and restart() on the same ports and data dir. A broker that exits during
start-up or is not ready in time raises BrokerStartError (a RuntimeError) ending with its log.
"""
from __future__ import annotations

from typing import Iterator

import pytest

# The launcher (minipulsar.launcher) starts every broker process of minipulsar's tests and
# benchmarks; run_broker() is its context manager, RunningBroker what it yields.
from minipulsar.launcher import BrokerProcess, BrokerStartError, free_port, run_broker

RunningBroker = BrokerProcess  # the name this module's fixtures and run_broker() documented first

__all__ = ["BrokerProcess", "BrokerStartError", "RunningBroker", "free_port", "run_broker",
           "minipulsar_broker", "minipulsar_service_url"]


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
