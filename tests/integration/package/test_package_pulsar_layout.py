"""The image's Pulsar layout (docker/pulsar: bin/ and conf/), run from a copy on this machine with
the checkout's minipulsar, so it is checked without a Docker engine: bin/apply-config-from-env.py's
rules, `bin/pulsar standalone` printing Pulsar's readiness lines on stdout, bin/pulsar-admin,
bin/pulsar-client and bin/pulsar tokens reading conf/client.conf, bin/pulsar-daemon start and stop.
(tests/e2e/package/test_package_image.py runs the same tools in the built image.)"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from minipulsar.launcher import free_port
from tests import ROOT, env_without_broker_config
from tests.helpers import wait_for

# Pulsar's lines that Testcontainers modules and scripts wait for
READY_LINES = ("HTTP Service started at http://", "messaging service is ready",
               "Successfully updated the policies on namespace public/default")


@pytest.fixture
def pulsar_home(tmp_path) -> Path:
    """A copy of docker/pulsar (Pulsar's /pulsar) whose tools run this checkout's minipulsar."""
    home = tmp_path / "pulsar"
    shutil.copytree(ROOT / "docker" / "pulsar", home, symlinks=True)
    return home


def tool_env(home: Path, **extra) -> dict:
    """The environment the tools run in: python3 is this interpreter's (it has minipulsar)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    return {**env_without_broker_config(), "PATH": path, "PULSAR_HOME": str(home), **extra}


def run(home: Path, *argv: str, env: dict | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, cwd=home, env=env or tool_env(home), capture_output=True, text=True, timeout=120)
    if ok:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_apply_config_from_env_follows_pulsars_rules(pulsar_home):
    conf = pulsar_home / "conf" / "standalone.conf"
    conf.write_text(conf.read_text() + "#journalMaxGroupWaitMSec=1\n")
    env = tool_env(pulsar_home, clusterName=" other ", journalMaxGroupWaitMSec="2", notAKeyOfTheFile="x",
                   PULSAR_PREFIX_allowAutoTopicCreation="false", PULSAR_PREFIX_brandNewKey="yes",
                   PULSAR_PREFIX_tokenSecretKey="data:;base64,c2VjcmV0", CLIENT_PREFIX_webServiceUrl="http://h:1/",
                   CLIENT_PREFIX_newClientKey="1")
    result = run(pulsar_home, "bin/apply-config-from-env.py", "conf/standalone.conf", env=env)
    lines = conf.read_text().splitlines()
    assert "clusterName=other" in lines and "clusterName=standalone" not in lines  # a bare key it has
    assert "journalMaxGroupWaitMSec=2" in lines  # a commented-out key counts as present
    assert not any(line.startswith("notAKeyOfTheFile") for line in lines)  # bare names only replace
    assert "allowAutoTopicCreation=false" in lines and "allowAutoTopicCreation=true" not in lines
    assert lines[-1] == "brandNewKey=yes"  # PULSAR_PREFIX_ adds a key the file does not have...
    assert "tokenSecretKey=data:;base64,c2VjcmV0" in lines[:-1]  # ...and replaces one it has, in place
    assert "c2VjcmV0" not in result.stdout and "Applying config clusterName = other" in result.stdout
    client = (pulsar_home / "conf" / "client.conf").read_text().splitlines()
    assert "webServiceUrl=http://h:1/" in client and "newClientKey=1" in client
    assert run(pulsar_home, "bin/apply-config-from-env.py", env=env, ok=False).returncode == 1  # no file: usage


def test_apply_config_from_env_with_prefix_as_the_rust_and_dotnet_modules_run_it(pulsar_home):
    """`bin/apply-config-from-env-with-prefix.py PREFIX files...`: the prefix adds or replaces any
    key; a bare name replaces a key the file has."""
    env = tool_env(pulsar_home, PULSAR_PREFIX_subscriptionPatternMaxLength="200", clusterName="other",
                   CLIENT_PREFIX_authParams="token:abc", authPlugin="org.example.Auth")
    run(pulsar_home, "bin/apply-config-from-env-with-prefix.py", "PULSAR_PREFIX_", "conf/standalone.conf", env=env)
    lines = (pulsar_home / "conf" / "standalone.conf").read_text().splitlines()
    assert "subscriptionPatternMaxLength=200" in lines and "clusterName=other" in lines
    run(pulsar_home, "bin/apply-config-from-env-with-prefix.py", "CLIENT_PREFIX_", "conf/client.conf", env=env)
    client = (pulsar_home / "conf" / "client.conf").read_text().splitlines()
    assert "authParams=token:abc" in client and "authPlugin=org.example.Auth" in client
    assert run(pulsar_home, "bin/apply-config-from-env-with-prefix.py", "PULSAR_PREFIX_", env=env,
               ok=False).returncode == 1  # no file: usage


class Standalone:
    """`bin/pulsar standalone` as a child process; its stdout lines collected as they come."""

    def __init__(self, home: Path, *args: str, env: dict):
        self.lines: list[str] = []
        self.proc = subprocess.Popen(["bin/pulsar", "standalone", *args], cwd=home, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def printed(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


def point_client_conf(home: Path, web_port: int, port: int) -> None:
    env = tool_env(home, CLIENT_PREFIX_webServiceUrl=f"http://127.0.0.1:{web_port}/",
                   CLIENT_PREFIX_brokerServiceUrl=f"pulsar://127.0.0.1:{port}/")
    run(home, "bin/apply-config-from-env.py", "conf/standalone.conf", env=env)


def test_standalone_prints_pulsars_readiness_lines_and_the_tools_use_client_conf(pulsar_home):
    port, web_port = free_port(), free_port()
    point_client_conf(pulsar_home, web_port, port)
    standalone = Standalone(pulsar_home, "-nss", "--no-functions-worker", "--bookkeeper-dir", "data/bk",
                            "--broker-service-port", str(port), "--web-service-port", str(web_port),
                            env=tool_env(pulsar_home, PULSAR_MEM="-Xms256m -Xmx256m"))
    try:
        wait_for(lambda: all(standalone.printed(line) for line in READY_LINES) or standalone.proc.poll() is not None,
                 "the readiness lines")
        assert all(standalone.printed(line) for line in READY_LINES), "".join(standalone.lines)
        assert standalone.printed("ignoring JVM options (minipulsar runs no JVM): -Xms256m -Xmx256m")
        assert standalone.printed("--no-stream-storage, --bookkeeper-dir data/bk")
        assert not standalone.printed("Function worker service started")  # -nfw: functionsWorkerEnabled=false
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/admin/v2/clusters", timeout=10) as answer:
            assert json.load(answer) == ["standalone"]
        assert (pulsar_home / "data" / "standalone" / "ledgers").is_dir()  # Pulsar's data folder
        run(pulsar_home, "bin/pulsar-admin", "tenants", "create", "acme")
        assert "acme" in run(pulsar_home, "bin/pulsar-admin", "tenants", "list").stdout.split()
        produced = run(pulsar_home, "bin/pulsar-client", "produce", "orders", "-m", "a,b", "-n", "2")
        assert "4 messages successfully produced" in produced.stdout
        stats = json.loads(run(pulsar_home, "bin/pulsar-admin", "topics", "stats", "orders").stdout)
        assert stats["msgInCounter"] == 4
        key = pulsar_home / "data" / "secret.key"
        run(pulsar_home, "bin/pulsar", "tokens", "create-secret-key", "--output", str(key))
        token = run(pulsar_home, "bin/pulsar", "tokens", "create", "--secret-key", key.as_uri(), "--subject", "x")
        assert token.stdout.count(".") == 2
        assert run(pulsar_home, "bin/pulsar", "bookie", ok=False).returncode == 2
    finally:
        assert standalone.stop() == 0, "".join(standalone.lines)


def test_pulsar_daemon_starts_and_stops_standalone(pulsar_home, tmp_path):
    port, web_port = free_port(), free_port()
    conf = pulsar_home / "conf" / "standalone.conf"
    conf.write_text(conf.read_text() + f"brokerServicePort={port}\nwebServicePort={web_port}\n")
    env = tool_env(pulsar_home, PULSAR_PID_DIR=str(tmp_path / "pids"), PULSAR_LOG_DIR=str(tmp_path / "logs"))
    started = run(pulsar_home, "bin/pulsar-daemon", "start", "standalone", "--wipe-data", env=env)
    assert "starting standalone, logging to" in started.stdout
    pid_file = tmp_path / "pids" / "pulsar-standalone.pid"
    pid = int(pid_file.read_text())

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/metrics", timeout=2):
                return True
        except OSError:
            return False

    wait_for(ready, "the daemon's broker")
    again = run(pulsar_home, "bin/pulsar-daemon", "start", "standalone", env=env, ok=False)
    assert again.returncode == 1 and f"running as process {pid}" in again.stderr
    assert "stopping standalone" in run(pulsar_home, "bin/pulsar-daemon", "stop", "standalone", env=env).stdout
    assert not pid_file.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    log = next((tmp_path / "logs").glob("pulsar-standalone-*.log")).read_text()
    assert "messaging service is ready" in log and "minipulsar broker stopped" in log
