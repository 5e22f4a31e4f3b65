"""Bad user code shows in the function's status (running false, the error, numRestarts) and never
takes the broker or another function down, nor acknowledges an input it did not process
(ATLEAST_ONCE): a package that does not import, a missing class, a function that exits the process,
one that hangs past timeoutMs, one that raises on every message."""
from __future__ import annotations

from tests.helpers import wait_for
from tests.integration.functions.support import collect, create_and_wait, write_package

GOOD = """
    def process(input):
        return input + "!"
"""
BROKEN_IMPORT = """
    import no_such_module_anywhere

    def process(input):
        return input
"""
EXITS = """
    import os

    def process(input):
        os._exit(3)
"""
HANGS = """
    import time

    def process(input):
        time.sleep(3600)
"""
ALWAYS_RAISES = """
    def process(input):
        raise RuntimeError("no")
"""


def _failing(functions, name: str, needle: str) -> dict:
    """The status once the instance is down with an error containing needle, after a restart."""
    return functions.wait_status(
        name, lambda s: (st := s["instances"][0]["status"])["running"] is False and needle in st["error"]
        and st["numRestarts"] >= 1, f"{name} failing with {needle!r} and restarted")


def test_bad_code_shows_in_status_and_the_good_function_keeps_working(broker, functions, official, code):
    create_and_wait(functions, "good", {"className": "good", "inputs": ["good-in"], "output": "good-out"},
                    write_package(code / "good", "good.py", GOOD))
    cases = {
        "importer": ({"className": "broken"}, write_package(code / "i", "broken.py", BROKEN_IMPORT),
                     "No module named 'no_such_module_anywhere'"),
        "classless": ({"className": "good.Missing"}, write_package(code / "c", "good.py", GOOD),
                      "has no attribute 'Missing'"),
    }
    for name, (config, package, _) in cases.items():
        answer = functions.create(name, {**config, "inputs": [f"{name}-in"]}, package)
        assert answer.status_code == 204, answer.text
    for name, (_, _, needle) in cases.items():
        status = _failing(functions, name, needle)
        assert status["numRunning"] == 0 and "Could not import User Function Module" in \
            status["instances"][0]["status"]["error"]
    out = official.subscribe("good-out", "check")
    official.create_producer("good-in").send(b"still")
    assert collect(out, 1)[0].data() == b"still!"
    assert functions.status("good")["numRunning"] == 1


def test_an_instance_that_exits_is_restarted_and_its_input_is_not_acknowledged(broker, functions, official, code):
    create_and_wait(functions, "exits", {"className": "exits", "inputs": ["ex-in"]},
                    write_package(code, "exits.py", EXITS))
    official.create_producer("ex-in").send(b"boom")
    _failing(functions, "exits", "instance process exited with status 3")
    topic, subscription = "persistent://public/default/ex-in", "public/default/exits"
    wait_for(lambda: broker.subscription_stats(topic, subscription)["msgBacklog"] == 1)
    # it comes back, receives the same input again, and exits again: still unacknowledged
    wait_for(lambda: functions.status("exits")["instances"][0]["status"]["numRestarts"] >= 2, timeout=30)
    assert broker.subscription_stats(topic, subscription)["msgBacklog"] == 1


def test_a_hung_process_call_ends_the_instance_after_timeout_ms(broker, functions, official, code):
    create_and_wait(functions, "hangs", {"className": "hangs", "inputs": ["hang-in"], "timeoutMs": 1000},
                    write_package(code, "hangs.py", HANGS))
    official.create_producer("hang-in").send(b"zzz")
    _failing(functions, "hangs", "process() did not return within timeoutMs (1000 ms)")
    assert broker.subscription_stats("persistent://public/default/hang-in", "public/default/hangs")["msgBacklog"] == 1


def test_a_function_raising_on_every_message_keeps_running_and_counts(functions, official, code):
    create_and_wait(functions, "raises", {"className": "raises", "inputs": ["rs-in"]},
                    write_package(code, "raises.py", ALWAYS_RAISES))
    producer = official.create_producer("rs-in")
    for value in (b"a", b"b"):
        producer.send(value)
    status = functions.wait_status("raises", lambda s: s["instances"][0]["status"]["numUserExceptions"] >= 4,
                                   "retried user exceptions")
    instance = status["instances"][0]["status"]
    assert instance["running"] is True and instance["numRestarts"] == 0 and instance["numSuccessfullyProcessed"] == 0
    assert "RuntimeError: no" in instance["latestUserExceptions"][-1]["exceptionString"]
