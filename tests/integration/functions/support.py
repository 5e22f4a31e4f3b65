"""What the functions tests share: the admin REST calls of /admin/v3/functions over `requests`
(FunctionsAdmin), writing a function's package, waiting on a function's status, finding its
instance processes (by their working folder under a broker's data dir, read from /proc), and
collecting output messages with the official client."""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pulsar
import requests

from tests.helpers import wait_for

INSTANCE_MODULE = "minipulsar.functions.instance"


# A SerDe class for packages (indented as the package texts are, before dedent): strings reversed.
REVERSE_SERDE = """
    class Reverse:
        def serialize(self, value):
            return value[::-1].encode()

        def deserialize(self, data):
            return data.decode()[::-1]
"""


def write_package(folder: Path, name: str, code: str) -> Path:
    """folder/name holding code (dedented)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(code))
    return path


class FunctionsAdmin:
    """/admin/v3/functions/{tenant}/{namespace} of the web service at base_url."""

    def __init__(self, base_url: str, tenant: str = "public", namespace: str = "default"):
        self.base = f"{base_url}/admin/v3/functions/{tenant}/{namespace}"
        self.session = requests.Session()

    def url(self, name: str = "", suffix: str = "") -> str:
        return f"{self.base}/{name}{suffix}" if name else self.base

    def create(self, name: str, config: dict, package: Path | None = None, method: str = "POST",
               url: str | None = None) -> requests.Response:
        files = {"functionConfig": (None, json.dumps(config), "application/json")}
        if package is not None:
            files["data"] = (package.name, package.read_bytes(), "application/octet-stream")
        if url is not None:
            files["url"] = (None, url)
        return self.session.request(method, self.url(name), files=files, timeout=60)

    def update(self, name: str, config: dict, package: Path | None = None) -> requests.Response:
        return self.create(name, config, package, method="PUT")

    def get(self, name: str, suffix: str = "") -> requests.Response:
        return self.session.get(self.url(name, suffix), timeout=60)

    def post(self, name: str, suffix: str, files: dict | None = None) -> requests.Response:
        return self.session.post(self.url(name, suffix), files=files, timeout=60)

    def delete(self, name: str) -> requests.Response:
        return self.session.delete(self.url(name), timeout=60)

    def status(self, name: str) -> dict:
        answer = self.get(name, "/status")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def stats(self, name: str) -> dict:
        answer = self.get(name, "/stats")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def wait_running(self, name: str, instances: int = 1, timeout: float = 60) -> dict:
        """The status once `instances` instances report running (subscribed)."""
        return wait_for(lambda: (s := self.status(name))["numRunning"] == instances and s,
                        f"{instances} running instance(s) of {name}", timeout=timeout)

    def wait_status(self, name: str, predicate, what: str, timeout: float = 60) -> dict:
        return wait_for(lambda: (s := self.status(name)) and predicate(s) and s, what, timeout=timeout)


def create_and_wait(admin: FunctionsAdmin, name: str, config: dict, package: Path, instances: int = 1) -> dict:
    answer = admin.create(name, config, package)
    assert answer.status_code == 204, answer.text
    return admin.wait_running(name, instances)


def instance_pids(data_dir: Path) -> list[int]:
    """Processes running a function instance whose working folder is under data_dir."""
    found = []
    root = str(Path(data_dir).resolve())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if INSTANCE_MODULE.encode() in cmdline and cwd.startswith(root):
            found.append(int(entry))
    return sorted(found)


def collect(consumer, count: int, timeout: float = 60) -> list:
    """count messages from consumer (acknowledged), in arrival order; AssertionError on timeout."""
    got = []

    def more():
        try:
            message = consumer.receive(200)
        except pulsar.Timeout:
            return len(got) >= count
        consumer.acknowledge(message)
        got.append(message)
        return len(got) >= count

    wait_for(more, f"{count} messages (got {len(got)})", timeout=timeout, interval=0)
    return got
