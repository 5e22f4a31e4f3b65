"""The image as a drop-in for apachepulsar/pulsar, run with Pulsar's own command lines: the default
command (bin/pulsar standalone) as uid 10000 on a tmpfs /pulsar/data, Pulsar's readiness lines,
GET /admin/v2/clusters, bin/pulsar-admin, bin/pulsar-client and bin/pulsar tokens through
`docker exec`, the official client through the published port; `sh -c "bin/apply-config-from-env.py
conf/standalone.conf && bin/pulsar standalone"` with PULSAR_PREFIX_ and bare settings; and
Testcontainers for Python starting it under the name apachepulsar/pulsar."""
from __future__ import annotations

import json
import os
import time
import urllib.request

import pulsar
import pytest

from tests.e2e.package.containers import docker
from tests.helpers import wait_for

READY = "messaging service is ready"
ERROR_LOGGER = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


class Container:
    """`docker run -d` of image with published ports on loopback; removed by close()."""

    def __init__(self, image: str, *command: str, env: dict | None = None, tmpfs: bool = True):
        options = ["--tmpfs", "/pulsar/data"] if tmpfs else []
        for key, value in (env or {}).items():
            options += ["-e", f"{key}={value}"]
        self.started = time.monotonic()
        self.id = docker("run", "-d", "-p", "127.0.0.1::6650", "-p", "127.0.0.1::8080", *options,
                         image, *command).stdout.strip()

    def logs(self) -> str:
        result = docker("logs", self.id, check=False)
        return result.stdout + result.stderr

    def wait_ready(self) -> float:
        """Seconds from `docker run` to the 'messaging service is ready' line."""
        wait_for(lambda: READY in self.logs() or not self.running(), "the readiness line", timeout=60)
        assert READY in self.logs(), self.logs()
        return time.monotonic() - self.started

    def running(self) -> bool:
        return docker("inspect", "-f", "{{.State.Running}}", self.id, check=False).stdout.strip() == "true"

    def port(self, port: int) -> str:
        return docker("port", self.id, f"{port}/tcp").stdout.split()[0]

    def exec(self, *argv: str) -> str:
        return docker("exec", self.id, *argv).stdout

    def rest(self, path: str):
        with urllib.request.urlopen(f"http://{self.port(8080)}/admin/v2{path}", timeout=10) as answer:
            return json.load(answer)

    def stop(self) -> int:
        """docker stop (SIGTERM); the container's exit status."""
        docker("stop", "-t", "20", self.id, timeout=60)
        return int(docker("inspect", "-f", "{{.State.ExitCode}}", self.id).stdout)

    def close(self) -> None:
        docker("rm", "-f", self.id, check=False)


def round_trip(url: str, topic: str) -> bytes:
    client = pulsar.Client(url, operation_timeout_seconds=15, logger=ERROR_LOGGER)
    try:
        consumer = client.subscribe(topic, "sub")
        client.create_producer(topic).send(b"through the published port")
        return consumer.receive(10_000).data()
    finally:
        client.close()


def test_default_command_is_pulsar_standalone_as_uid_10000(image):
    container = Container(image)
    try:
        seconds = container.wait_ready()
        logs = container.logs()
        assert "HTTP Service started at http://0.0.0.0:8080" in logs
        assert logs.index("HTTP Service started at") < logs.index(READY)
        assert "Successfully updated the policies on namespace public/default" in logs  # the Go module waits for it
        assert "Function worker service started" in logs  # Testcontainers' withFunctionsWorker() waits for it
        print(f"docker run to '{READY}': {seconds:.2f} s")
        assert container.rest("/clusters") == ["standalone"]
        assert container.exec("id", "-u").strip() == "10000" and container.exec("pwd").strip() == "/pulsar"
        container.exec("bin/pulsar-admin", "tenants", "create", "acme")
        assert "acme" in container.exec("bin/pulsar-admin", "tenants", "list").split()
        assert "1 messages successfully produced" in container.exec("bin/pulsar-client", "produce", "t", "-m", "x")
        container.exec("bin/pulsar", "tokens", "create-secret-key", "--output", "data/secret.key")
        token = container.exec("bin/pulsar", "tokens", "create", "--secret-key", "file:///pulsar/data/secret.key",
                               "--subject", "admin")
        assert token.strip().count(".") == 2
        # a plain path, as Testcontainers' .NET module passes it (Pulsar reads an existing file)
        token = container.exec("bin/pulsar", "tokens", "create", "--secret-key", "/pulsar/data/secret.key",
                               "--subject", "admin")
        assert token.strip().count(".") == 2
        # a loopback advertised address: the client stays on the published port (Pulsar's standalone)
        assert round_trip(f"pulsar://{container.port(6650)}", "persistent://public/default/outside") == \
            b"through the published port"
        assert container.stop() == 0 and "minipulsar broker stopped" in container.logs()
    finally:
        container.close()


EXCLAIM = """from pulsar import Function


class Exclaim(Function):
    def process(self, input, context):
        return input + "!"
"""


def test_a_python_function_runs_in_the_image(image):
    """bin/pulsar standalone runs the functions worker, as Pulsar's does: a Python function created
    with bin/pulsar-admin runs on the image's official client."""
    container = Container(image)
    try:
        container.wait_ready()
        docker("exec", "-i", container.id, "sh", "-c", "cat > data/exclaim.py", input=EXCLAIM)
        container.exec("bin/pulsar-admin", "functions", "create", "--py", "data/exclaim.py", "--classname",
                       "exclaim.Exclaim", "--inputs", "words", "--output", "exclaimed", "--name", "exclaim")
        wait_for(lambda: json.loads(container.exec("bin/pulsar-admin", "functions", "status", "--name",
                                                   "exclaim"))["numRunning"] == 1, "the function's instance")
        client = pulsar.Client(f"pulsar://{container.port(6650)}", operation_timeout_seconds=15, logger=ERROR_LOGGER)
        try:
            consumer = client.subscribe("exclaimed", "sub")
            client.create_producer("words").send(b"hello")
            assert consumer.receive(30_000).data() == b"hello!"
        finally:
            client.close()
    finally:
        container.close()


def test_pulsars_configuration_command_line(image):
    container = Container(image, "sh", "-c", "bin/apply-config-from-env.py conf/standalone.conf && bin/pulsar standalone",
                          env={"PULSAR_PREFIX_allowAutoTopicCreation": "false", "clusterName": "other",
                               "PULSAR_MEM": "-Xms512m -Xmx512m"})
    try:
        container.wait_ready()
        assert container.rest("/clusters") == ["other"]
        client = pulsar.Client(f"pulsar://{container.port(6650)}", operation_timeout_seconds=10, logger=ERROR_LOGGER)
        try:
            with pytest.raises(pulsar.TopicNotFound):
                client.create_producer("persistent://public/default/missing")
            container.exec("bin/pulsar-admin", "topics", "create", "persistent://public/default/made")
            client.create_producer("persistent://public/default/made").send(b"ok")
        finally:
            client.close()
        assert "Adding config allowAutoTopicCreation" not in container.logs()  # the file has the key
        assert "Updating config allowAutoTopicCreation = false" in container.logs()
    finally:
        container.close()


def test_testcontainers_runs_it_as_apachepulsar_pulsar(image):
    """apache/pulsar-client-python's tests/auto_cluster_failover_test.py starts Pulsar this way."""
    os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"  # no registry here for the reaper's image
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    testcontainers_config.ryuk_disabled = True
    docker("tag", image, "apachepulsar/pulsar:latest")
    container = (DockerContainer("apachepulsar/pulsar:latest")
                 .with_exposed_ports(6650, 8080)
                 .with_env("clusterName", "standalone")
                 .with_env("advertisedAddress", "localhost")
                 .with_env("PULSAR_MEM", "-Xms512m -Xmx512m")
                 .with_command('bash -c "bin/apply-config-from-env.py conf/standalone.conf '
                               '&& exec bin/pulsar standalone -nss -nfw"')
                 .waiting_for(LogMessageWaitStrategy(READY)))
    container.start()  # returns once the readiness line is logged
    try:
        url = f"pulsar://{container.get_container_host_ip()}:{container.get_exposed_port(6650)}"
        assert round_trip(url, "persistent://public/default/testcontainers") == b"through the published port"
    finally:
        container.stop()
