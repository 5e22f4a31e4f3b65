"""A minipulsar broker in its own process, for benchmarks that measure it from outside.

    from broker_process import start_broker, rss_kib
    broker = start_broker(Path(tmp) / "data", {"brokerMaxConnectionsPerIp": 1000})
    try:
        print(broker.url, rss_kib(broker.pid))
    finally:
        broker.stop()

Settings travel as MINIPULSAR_<key> environment variables (Pulsar's broker.conf key names), so
the command line stays the one a user types. /proc/<pid>/status gives VmRSS (resident now) and
VmHWM (the peak resident size since start), /proc/<pid>/fd the open descriptors.
"""
from __future__ import annotations

import os
import resource
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import requests

START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def proc_status(pid: int) -> dict[str, str]:
    """/proc/<pid>/status as a dict ('VmRSS' -> '123456 kB', ...)."""
    with open(f"/proc/{pid}/status") as status:
        return dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)


def _kib(pid: int, field: str) -> int:
    return int(proc_status(pid)[field].split()[0])


def rss_kib(pid: int) -> int:
    """Resident set size now (VmRSS), KiB."""
    return _kib(pid, "VmRSS")


def peak_rss_kib(pid: int) -> int:
    """The highest resident set size since the process started (VmHWM), KiB."""
    return _kib(pid, "VmHWM")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def raise_nofile_limit() -> int:
    """Lift this process's soft RLIMIT_NOFILE to the hard limit (connection scenarios open
    thousands of sockets); returns the new soft limit. Children started later inherit it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


@dataclass
class BrokerProcess:
    proc: subprocess.Popen
    port: int
    web_port: int
    data_dir: Path
    log_path: Path | None  # the broker's stderr (its log), when redirected
    settings: Mapping[str, object]

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def command(self) -> str:
        """The broker's command line, with its settings as environment assignments, to print."""
        env = [f"{key}={value}" for key, value in settings_env(self.settings).items()]
        return shlex.join([*env, *self.proc.args])

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM and wait (the broker closes its ledgers); SIGKILL if it hangs. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def broker_command(data_dir: Path, port: int, web_port: int) -> list[str]:
    return [sys.executable, "-m", "minipulsar", "broker", "--data-dir", str(data_dir),
            "--broker-service-port", str(port), "--web-service-port", str(web_port),
            "--bind-address", "127.0.0.1", "--log-level", "WARNING"]


def settings_env(settings: Mapping[str, object]) -> dict[str, str]:
    return {f"MINIPULSAR_{key}": str(value) for key, value in settings.items()}


def start_broker(data_dir: Path, settings: Mapping[str, object] | None = None, *,
                 log_path: Path | None = None, preexec_fn: Callable[[], None] | None = None,
                 port: int | None = None, web_port: int | None = None) -> BrokerProcess:
    """Start `python -m minipulsar broker` on free ports with settings (broker.conf keys) and wait
    until it serves. log_path: where its stderr goes (None: this process's stderr). preexec_fn runs
    in the child before exec (raise limits, join a cgroup)."""
    port, web_port = port or free_port(), web_port or free_port()
    log_file = open(log_path, "wb") if log_path else None
    try:
        proc = subprocess.Popen(broker_command(data_dir, port, web_port),
                                env={**os.environ, **settings_env(settings or {})},
                                stderr=log_file, preexec_fn=preexec_fn)
    finally:
        if log_file:
            log_file.close()  # the child holds its own copy
    broker = BrokerProcess(proc, port, web_port, data_dir, log_path, dict(settings or {}))
    try:
        wait_until_serving(broker)
    except BaseException:
        broker.stop()
        raise
    return broker


def wait_until_serving(broker: BrokerProcess, timeout: float = START_TIMEOUT_S) -> None:
    """Poll the web service and the binary port until both answer; fail fast if the broker exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if broker.proc.poll() is not None:
            raise SystemExit(f"the broker exited with {broker.proc.returncode} during start-up\n"
                             + broker.log_text()[-2000:])
        try:
            requests.get(broker.web_url + "/metrics", timeout=1)
            socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
            return
        except (requests.ConnectionError, OSError):
            time.sleep(0.1)  # start-up poll
    raise SystemExit("the broker did not start within %.0f s" % timeout)


def slope_kib_per_minute(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, KiB) samples, in KiB per minute: growth as one number."""
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_r = sum(r for _, r in samples) / n
    cov = sum((t - mean_t) * (r - mean_r) for t, r in samples)
    var = sum((t - mean_t) ** 2 for t, _ in samples) or 1.0
    return cov / var * 60
