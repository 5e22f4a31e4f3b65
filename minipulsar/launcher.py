"""A minipulsar broker as a child process on loopback, the way users run it: the one launcher of
minipulsar's own tests and benchmarks, and of `minipulsar.testing` (run_broker() and the pytest
fixtures).

    from minipulsar.launcher import BrokerProcess
    with BrokerProcess(settings={"brokerDeduplicationEnabled": "true"}) as broker:  # temporary data dir
        client = pulsar.Client(broker.service_url)
        broker.stop(signal.SIGKILL)      # a crash
        broker.restart()                 # the same ports, data dir, settings and log file

The broker runs as `python -m minipulsar <verb>` with this interpreter, bound to 127.0.0.1 on free
ports (free_port()). `settings` travel as MINIPULSAR_<key> environment variables (Pulsar's
broker.conf key names), so the command line stays the one a user types. start() returns once the
broker is ready: its binary port accepts, GET /admin/v2/brokers/ready answers 200 and, when it logs
at INFO, its start-up line ("minipulsar broker listening on ...", the last step of Broker.start())
is in its log; never a fixed sleep. The standard library only (no pytest): benchmarks and other
test frameworks use it as it is.
"""
from __future__ import annotations

import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

HOST = "127.0.0.1"
READY_PATH = "/admin/v2/brokers/ready"
STARTUP_LINE = "minipulsar broker listening on"  # logged (INFO) as Broker.start() ends
LOG_TAIL_LINES = 40
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0
POLL_INTERVAL_S = 0.05
VERBS = ("broker", "standalone")


def free_port(host: str = HOST, *, below_ephemeral: bool = False, rng: random.Random | None = None) -> int:
    """A TCP port nothing listens on now (it may be taken before the broker binds it).

    below_ephemeral: a port below the kernel's ephemeral range (drawn with rng), for a broker that
    will be restarted on it many times: a port the kernel hands out (bind to 0) can meanwhile become
    the source port of an outgoing connection while that broker is down, and its restart fails."""
    if not below_ephemeral:
        with socket.socket() as sock:
            sock.bind((host, 0))
            return sock.getsockname()[1]
    rng = rng or random.Random()
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
        low = int(ports.read().split()[0])
    while True:
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
                return port
            except OSError:
                continue


class BrokerStartError(RuntimeError):
    """The broker exited during start-up or was not ready in time; the message ends with its log."""


class BrokerProcess:
    """`python -m minipulsar <verb>` as a child process on HOST, started by start() (or `with`).

    data_dir: its data folder; None: a temporary folder, removed by cleanup() (and on leaving
        `with`), holding data/ and broker.log.
    settings: broker.conf keys (Pulsar's names) -> values, passed as MINIPULSAR_<key> variables.
    args: more command-line flags, after the launcher's own (--config FILE, --cluster-name a, ...).
    env: more environment variables (over this process's environment).
    verb: "broker" or "standalone".
    port, web_port: the binary and web ports; None: free ports, chosen once (a restart keeps them).
    log_path: where its stdout and stderr go (appended to across restarts); None: broker.log in the
        temporary folder, else broker-<port>.log beside data_dir.
    log_level: --log-level (DEBUG, INFO, WARNING, ERROR); None: the broker's default (INFO).
    cwd, preexec_fn: passed to subprocess.Popen (preexec_fn runs in the child before exec: raise
        limits, join a cgroup).
    startup_timeout: seconds start() waits for readiness before BrokerStartError.
    """

    def __init__(self, data_dir: Path | str | None = None, settings: Mapping[str, object] | None = None, *,
                 args: Sequence[str] = (), env: Mapping[str, str] | None = None, verb: str = "broker",
                 port: int | None = None, web_port: int | None = None, log_path: Path | str | None = None,
                 log_level: str | None = None, cwd: Path | str | None = None,
                 preexec_fn: Callable[[], None] | None = None, startup_timeout: float = STARTUP_TIMEOUT_S):
        if verb not in VERBS:
            raise ValueError(f"verb must be one of {VERBS}, not {verb!r}")
        self._temporary = Path(tempfile.mkdtemp(prefix="minipulsar-")) if data_dir is None else None
        self.data_dir = Path(data_dir) if data_dir is not None else self._temporary / "data"
        self.settings = dict(settings or {})
        self.args = tuple(args)
        self.env = dict(env or {})
        self.verb = verb
        self.port = port or free_port()
        self.web_port = web_port or free_port()
        if log_path is not None:
            self.log_path = Path(log_path)
        elif self._temporary is not None:
            self.log_path = self._temporary / "broker.log"
        else:
            self.log_path = self.data_dir.parent / f"broker-{self.port}.log"
        self.log_level = log_level
        self.cwd = cwd
        self.preexec_fn = preexec_fn
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self._log_start = 0  # where the latest start's lines begin in log_path (restarts append)

    # ---- what callers read -------------------------------------------------------------------
    @property
    def service_url(self) -> str:
        return f"pulsar://{HOST}:{self.port}"

    url = service_url

    @property
    def web_service_url(self) -> str:
        return f"http://{HOST}:{self.web_port}"

    web_url = web_service_url

    @property
    def process(self) -> subprocess.Popen | None:
        """The child process of the latest start (None before the first)."""
        return self.proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        return [sys.executable, "-m", "minipulsar", self.verb, "--data-dir", str(self.data_dir),
                "--bind-address", HOST, "--broker-service-port", str(self.port),
                "--web-service-port", str(self.web_port),
                *(("--log-level", self.log_level) if self.log_level else ()), *self.args]

    def settings_env(self) -> dict[str, str]:
        return {f"MINIPULSAR_{key}": str(value) for key, value in self.settings.items()}

    def command_line(self) -> str:
        """The command with its settings and extra environment as assignments, to print."""
        assignments = [f"{key}={value}" for key, value in {**self.env, **self.settings_env()}.items()]
        return shlex.join([*assignments, *self.command()])

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last lines of the broker's log."""
        return "\n".join(self.log_text().splitlines()[-lines:])

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float | None = None, wait: bool = True) -> "BrokerProcess":
        """Start the broker and wait until it is ready (see the module docstring); raises
        BrokerStartError, with its log tail, if it exits or is not ready within timeout seconds
        (startup_timeout by default; it is then killed). wait=False returns once the process
        runs (poll ready() yourself, e.g. to cut the power in the middle of a boot)."""
        if self.running:
            raise RuntimeError(f"the broker on port {self.port} is running already")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:  # the child keeps its own descriptor
            self._log_start = log.tell()
            self.proc = subprocess.Popen(self.command(), cwd=self.cwd, env={**os.environ, **self.env, **self.settings_env()},
                                         stdout=log, stderr=subprocess.STDOUT, preexec_fn=self.preexec_fn)
        if not wait:
            return self
        try:
            self.wait_ready(self.startup_timeout if timeout is None else timeout)
        except BaseException:
            self.stop(signal.SIGKILL)
            raise
        return self

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Poll until ready() within timeout seconds; BrokerStartError if the broker exits first or
        the time runs out."""
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.proc.poll() is not None:
                raise BrokerStartError(f"minipulsar {self.verb} exited with {self.proc.returncode} during start-up; "
                                       f"its log ({self.log_path}) ends with:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise BrokerStartError(f"minipulsar {self.verb} on port {self.port} was not ready within {timeout:.0f} s;"
                                       f" its log ({self.log_path}) ends with:\n{self.log_tail()}")
            time.sleep(POLL_INTERVAL_S)  # the poll interval of this deadline-bounded wait for readiness

    def ready(self) -> bool:
        """The binary port accepts, GET /admin/v2/brokers/ready answers 200 and, when the broker
        logs at INFO, its start-up line is in the log (Broker.start() has returned)."""
        if not self.running:
            return False
        try:
            socket.create_connection((HOST, self.port), timeout=1).close()
            with urllib.request.urlopen(self.web_service_url + READY_PATH, timeout=1) as answer:
                if answer.status != 200:
                    return False
        except (urllib.error.URLError, OSError):
            return False
        return not self._logs_startup_line() or STARTUP_LINE in self._log_since_start()

    def _log_since_start(self) -> str:
        """What the latest start wrote to the log (an earlier run's start-up line does not count)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_start)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def _logs_startup_line(self) -> bool:
        level = self.log_level
        for flag, value in zip(self.args, self.args[1:]):
            if flag == "--log-level":
                level = value  # the last one wins, as argparse reads it
        return (level or "INFO").upper() in ("DEBUG", "INFO")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """Send sig (SIGTERM: a clean shutdown; SIGKILL: a crash) and wait for the exit; SIGKILL
        if it has not exited after timeout seconds. Returns the exit status (negative: the signal
        that ended it), None if never started; a second call returns the same status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill(self) -> int | None:
        """SIGKILL: a crash (no clean shutdown)."""
        return self.stop(signal.SIGKILL)

    def restart(self, sig: int = signal.SIGTERM, timeout: float | None = None) -> "BrokerProcess":
        """Stop it with sig if it runs, then start it again on the same ports and data dir with the
        same settings, flags and log file."""
        self.stop(sig)
        return self.start(timeout)

    def cleanup(self) -> None:
        """Stop it (SIGTERM) and remove the temporary folder, if the data dir is one."""
        self.stop()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)

    def __enter__(self) -> "BrokerProcess":
        return self.start() if not self.running else self

    def __exit__(self, *exc_info) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        state = "running" if self.running else f"exit {self.proc.returncode}" if self.proc else "not started"
        return f"<BrokerProcess {self.verb} {self.service_url} {self.data_dir} ({state})>"


@contextmanager
def run_broker(settings: Mapping[str, object] | None = None, startup_timeout: float = STARTUP_TIMEOUT_S,
               **options) -> Iterator[BrokerProcess]:
    """A started BrokerProcess (settings: broker.conf keys; options: BrokerProcess's), by default
    on a temporary data dir; stopped with SIGTERM and its temporary folder removed on exit."""
    broker = BrokerProcess(settings=settings, startup_timeout=startup_timeout, **options)
    try:
        broker.start()
        yield broker
    finally:
        broker.cleanup()
