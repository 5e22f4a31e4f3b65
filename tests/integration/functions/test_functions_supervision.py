"""What the worker's supervisor does around an instance process (functions/supervisor.py): its
stdout, stderr and the function's logger land in the instance's log file, which rotates past its
limit; a process that keeps crashing is restarted after a back-off that doubles (1 s, 2 s, 4 s),
back to the minimum after a healthy run."""
from __future__ import annotations

import logging
import time
from pathlib import Path

from minipulsar.functions import supervisor
from tests.helpers import wait_for
from tests.integration.functions.support import collect, create_and_wait, write_package

TALKER = """
    import sys
    from pulsar import Function

    class Talker(Function):
        def process(self, input, context):
            print("stdout says " + input)
            sys.stderr.write("stderr says " + input + "\\n")
            context.get_logger().warning("logger says %s", input)
            return input
"""
# Stamps the monotonic clock (system-wide on Linux) each time a process imports it, then dies.
CRASHER = """
    import os
    import time

    with open({stamps!r}, "a") as stamps:
        stamps.write("%f\\n" % time.monotonic())
    os._exit(3)
"""


def log_file(broker, name: str, instance: int = 0) -> Path:
    """Where the worker writes an instance's output: logs/<tenant>/<namespace>/<name>/<name>-<i>.log."""
    root = Path(broker.settings["dataDir"]).resolve() / "functions" / "logs" / "public" / "default"
    return root / name / f"{name}-{instance}.log"


def test_stdout_stderr_and_the_logger_reach_the_instance_log_file(broker, functions, official, code):
    create_and_wait(functions, "talker", {"className": "talker.Talker", "inputs": ["talk-in"], "output": "talk-out"},
                    write_package(code, "talker.py", TALKER))
    out = official.subscribe("talk-out", "check")
    official.create_producer("talk-in").send(b"hello")
    collect(out, 1)
    path = log_file(broker, "talker")
    expected = ("stdout says hello", "stderr says hello", "WARNING public/default/talker - logger says hello")
    wait_for(lambda: path.is_file() and all(line in path.read_text() for line in expected),
             f"the three lines in {path}")


def test_the_log_file_rotates_past_its_limit(broker, functions, official, code, monkeypatch):
    """LOG_ROTATE_BYTES (64 MiB) shrunk to a few KiB: the supervisor reads it at each chunk."""
    limit = 4096
    monkeypatch.setattr(supervisor, "LOG_ROTATE_BYTES", limit)
    create_and_wait(functions, "rotor", {"className": "talker.Talker", "inputs": ["rot-in"], "output": "rot-out"},
                    write_package(code, "talker.py", TALKER))
    out = official.subscribe("rot-out", "check")
    producer = official.create_producer("rot-in")
    path = log_file(broker, "rotor")
    rotated = path.with_name(path.name + ".1")
    for i in range(60):  # ~150 bytes of log per message: 9 KiB, past the limit twice
        producer.send(f"message-{i:03d}-{'x' * 40}".encode())
    collect(out, 60)
    wait_for(lambda: path.is_file() and "logger says message-059" in path.read_text(), "the last message logged")
    assert rotated.is_file() and "message-" in rotated.read_text(), "the older output moved to .1"
    assert "message-000" not in path.read_text(), "the current file began after the first messages"
    # a file is checked before each chunk is written: it ends at most one chunk past the limit
    assert max(path.stat().st_size, rotated.stat().st_size) <= limit + supervisor.READ_CHUNK


def start_crasher(functions, code, stamps: Path) -> list[float]:
    """Create a function whose instance dies at import; the monotonic times of its first 4 starts."""
    package = write_package(code, "crasher.py", CRASHER.format(stamps=str(stamps)))
    answer = functions.create("crasher", {"className": "crasher", "inputs": ["crash-in"]}, package)
    assert answer.status_code == 204, answer.text

    def starts() -> list[float]:
        return [float(line) for line in stamps.read_text().split()] if stamps.is_file() else []

    return wait_for(lambda: len(s := starts()) >= 4 and s, "four starts of the instance", timeout=40)


def test_a_crashing_instance_is_restarted_after_a_doubling_back_off(functions, code, tmp_path):
    times = start_crasher(functions, code, tmp_path / "stamps")
    gaps = [b - a for a, b in zip(times, times[1:4])]
    # each gap is the back-off plus the process's start and exit, so never less than the back-off
    assert all(gap >= backoff for gap, backoff in zip(gaps, (1.0, 2.0, 4.0))), gaps
    # and the start-up costs roughly cancel between gaps: a constant back-off would not grow them
    assert gaps[1] - gaps[0] > 0.5 and gaps[2] - gaps[1] > 1.0, gaps
    status = functions.status("crasher")["instances"][0]["status"]
    assert time.monotonic() - times[3] < 8, "status read within the fourth back-off (8 s): no fourth restart yet"
    assert (status["running"], status["numRestarts"]) == (False, 3)
    assert status["error"] == "instance process exited with status 3"


def test_a_run_past_the_healthy_time_resets_the_back_off(functions, code, tmp_path, monkeypatch, caplog):
    """RESTART_HEALTHY_SECONDS (60 s) shrunk to 0: every run counts as healthy, so every restart
    waits the minimum, and the worker's log says so."""
    monkeypatch.setattr(supervisor, "RESTART_HEALTHY_SECONDS", 0.0)
    caplog.set_level(logging.WARNING, logger=supervisor.__name__)
    times = start_crasher(functions, code, tmp_path / "stamps")
    gaps = [b - a for a, b in zip(times, times[1:4])]
    assert all(1.0 <= gap < 3.0 for gap in gaps), f"a doubling back-off would wait 2 s then 4 s: {gaps}"
    said = [r.getMessage() for r in caplog.records if "restarting in" in r.getMessage()][:3]
    assert len(said) == 3 and all(m.endswith("restarting in 1 s") for m in said), said
