"""The instance process's contract with its worker, driven by hand (`python -m
minipulsar.functions.instance`, the spec on stdin, reports on a pipe): it reports `running` once
subscribed and stops cleanly when its stdin closes (its worker is gone); without the pulsar-client
package it reports why and exits with status 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from minipulsar.functions.config import normalize
from minipulsar.functions.instance.__main__ import NO_PULSAR
from minipulsar.functions.spec import InstanceSpec
from tests import ROOT
from tests.integration.functions.support import write_package

TIMEOUT = 60


def _spec(tmp_path: Path, url: str) -> InstanceSpec:
    package = write_package(tmp_path / "code", "echo.py", "def process(input):\n    return input\n")
    config = normalize({"className": "echo", "inputs": ["by-hand-in"]}, "public", "default", "by-hand")
    return InstanceSpec(config=config, instance_id=0, function_id="f", function_version=0, package=str(package),
                        work_dir=str(tmp_path / "work"), state_dir=str(tmp_path / "state"), service_url=url)


def _start(spec: InstanceSpec, env: dict | None = None) -> tuple[subprocess.Popen, object]:
    read_end, write_end = os.pipe()
    process = subprocess.Popen([sys.executable, "-m", "minipulsar.functions.instance", "--report-fd", str(write_end)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               pass_fds=(write_end,), cwd=ROOT, env={**os.environ, **(env or {})})
    os.close(write_end)
    process.stdin.write(spec.to_line())
    process.stdin.flush()
    return process, os.fdopen(read_end, "rb")


def _events(reports) -> list[dict]:
    return [json.loads(line) for line in reports]


def test_running_is_reported_and_a_closed_stdin_stops_the_instance(broker, tmp_path):
    process, reports = _start(_spec(tmp_path, broker.url))
    try:
        assert json.loads(reports.readline()) == {"event": "running"}
        topic = broker.topic_stats("persistent://public/default/by-hand-in")
        assert len(topic["subscriptions"]["public/default/by-hand"]["consumers"]) == 1
        process.stdin.close()  # what the worker's death looks like from the instance
        assert process.wait(TIMEOUT) == 0, process.stdout.read().decode(errors="replace")
        assert broker.topic_stats("persistent://public/default/by-hand-in")["subscriptions"][
            "public/default/by-hand"]["consumers"] == [], "its consumer closed"
    finally:
        process.kill()
        process.wait()
        reports.close()


def test_without_the_pulsar_package_the_instance_says_so(tmp_path):
    hidden = tmp_path / "no-pulsar" / "pulsar"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('pulsar-client is not installed here')\n")
    process, reports = _start(_spec(tmp_path, "pulsar://127.0.0.1:1"), {"PYTHONPATH": str(hidden.parent)})
    try:
        assert process.wait(TIMEOUT) == 2
        events = _events(reports)
        assert {"event": "error", "error": NO_PULSAR} in events
    finally:
        process.kill()
        process.wait()
        reports.close()
