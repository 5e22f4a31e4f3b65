"""Shared fixtures: a real broker on a free loopback port with a temporary data dir (in-process
or as a child process, started by minipulsar.launcher), a unique topic name, and the official
client (the oracle)."""
from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import jwt
import pulsar

import pytest

from minipulsar.launcher import BrokerProcess, BrokerStartError
from tests.helpers import BrokerThread
from tools.faultfs.control import FaultFS, fuse_unavailable_reason
from tests.pki import JwtKeys, Pki, make_jwt_keys, make_pki

pytest_plugins = ["pytester"]  # tests/integration/package/test_testing_plugin.py runs a project of its own


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


PORT_ATTEMPTS = 3  # broker_process: starts that lost a port free_port chose, at most


@pytest.fixture
def broker_process(tmp_path):
    """Start broker processes (minipulsar.launcher.BrokerProcess, ready when returned):
    broker_process(data_dir=None, **options) with options port, web_port, args, env, verb, settings;
    data_dir defaults to tmp_path/"data". stop(sig) and restart() keep ports and data dir; the
    ones still running are killed at teardown."""
    procs = []

    def start(data_dir: Path | None = None, **options) -> BrokerProcess:
        for attempt in range(PORT_ATTEMPTS):
            p = BrokerProcess(data_dir or tmp_path / "data", **options)
            try:
                p.start()
            except BrokerStartError as exc:
                # free_port's port may become another socket's before the broker binds it (an
                # outgoing connection of a test running beside this one): start again on new ports.
                chosen_here = "port" not in options or "web_port" not in options
                if not chosen_here or "address already in use" not in str(exc) or attempt == PORT_ATTEMPTS - 1:
                    raise
                continue
            procs.append(p)
            return p

    yield start
    for p in procs:
        p.kill()


# ---- security material: the session's certificates and JWT keys (unit and integration tests) ----
@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def jwt_keys(tmp_path_factory) -> JwtKeys:
    return make_jwt_keys(tmp_path_factory.mktemp("jwt"))


@pytest.fixture
def make_token(jwt_keys):
    """make_token(subject, expires_in=None, key="secret"|"rsa"|"ec", **claims) -> a signed JWT."""

    def make(subject: str | None, expires_in: float | None = None, key: str = "secret", **claims) -> str:
        if subject is not None:
            claims["sub"] = subject
        if expires_in is not None:
            claims["exp"] = int(time.time() + expires_in)
        signing = {"secret": (jwt_keys.secret_bytes, "HS256"), "rsa": (jwt_keys.rsa_key, "RS256"),
                   "ec": (jwt_keys.ec_key, "ES256")}[key]
        return jwt.encode(claims, signing[0], algorithm=signing[1])

    return make


# ---- faultfs (tools/faultfs): a FUSE file system that loses what was not synced ------------------
_FUSE_MISSING = fuse_unavailable_reason()


def pytest_collection_modifyitems(config, items):
    """Tests that mount a faultfs (the `ffs` fixture) are skipped, saying why, only where /dev/fuse
    or fusermount3 is missing (with CI_REQUIRE_FUSE=1, set by .ci/run, they fail instead); any
    other failure to mount fails the test."""
    if _FUSE_MISSING is None or os.environ.get("CI_REQUIRE_FUSE") == "1":
        return  # the ffs fixture fails then
    for item in items:
        if "ffs" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.skip(reason=f"faultfs needs FUSE: {_FUSE_MISSING}"))


@pytest.fixture
def ffs(request):
    """A faultfs mounted on a temp dir for one test; its log tail is printed when the test fails."""
    if _FUSE_MISSING is not None:
        pytest.fail(f"faultfs needs FUSE: {_FUSE_MISSING} (CI_REQUIRE_FUSE=1)")
    fs = FaultFS()
    fs.start()
    yield fs
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        print("--- faultfs log tail ---\n" + fs.log_tail())
    fs.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the item (rep_setup, rep_call, ...) for fixtures' teardown."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
