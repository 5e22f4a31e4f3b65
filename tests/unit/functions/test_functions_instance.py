"""The instance's pieces without a broker: loading user code (.py, Pulsar's .zip layout, the class,
module and def forms, what fails and why), SerDes, the counters and their one-minute window, and
the FunctionStatus / FunctionStats JSON the worker builds from an instance's report."""
from __future__ import annotations

import sys
import zipfile

import pulsar
import pytest
from hypothesis import given, strategies as st
from pulsar.functions.serde import IdentitySerDe as PulsarIdentitySerDe

from minipulsar.functions.errors import UserCodeError
from minipulsar.functions.instance import loader, stats
from minipulsar.functions.instance.runner import sequence_id
from minipulsar.functions.metadata import FunctionRecord
from minipulsar.functions.status import function_stats, function_status, instance_stats


@pytest.fixture
def clean_path():
    """sys.path and the modules a test imports are put back afterwards."""
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


def test_a_py_package_and_the_three_function_forms(tmp_path, clean_path):
    (tmp_path / "pkg").mkdir()
    package = tmp_path / "pkg" / "forms_mod.py"
    package.write_text("class Upper:\n    def process(self, input, context):\n        return input.upper() + context\n"
                       "def process(input):\n    return 'module:' + input\n"
                       "def shout(input):\n    return input + '!'\n")
    assert loader.prepare(package, tmp_path / "work") == tmp_path / "pkg"
    call, uses_context = loader.load_function("forms_mod.Upper")
    assert uses_context and call("a", "+ctx") == "A+ctx"
    call, uses_context = loader.load_function("forms_mod")
    assert not uses_context and call("a", None) == "module:a"
    assert loader.load_function("forms_mod.shout")[0]("a", None) == "a!"


def test_a_zip_in_pulsars_layout_is_unpacked_in_the_work_folder(tmp_path, clean_path):
    archive = tmp_path / "zipfn.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipfn/src/zipfn_mod.py", "def process(input):\n    return input * 2\n")
    folder = loader.prepare(archive, tmp_path / "work")
    assert folder == tmp_path / "work" / "code" / "zipfn" / "src"
    assert loader.load_function("zipfn_mod")[0]("ab", None) == "abab"


@pytest.mark.parametrize("source, class_name, message", [
    ("import not_a_module_here\n", "bad_mod.X", "Could not import User Function Module bad_mod.X: "
                                                "ModuleNotFoundError: No module named 'not_a_module_here'"),
    ("x = 1\n", "bad_mod.Missing", "module 'bad_mod' has no attribute 'Missing'"),
    ("class F:\n    def __init__(self):\n        raise OSError('no')\n", "bad_mod.F", "cannot create bad_mod.F(): OSError: no"),
    ("class F:\n    pass\n", "bad_mod.F", "bad_mod.F has no process(input, context) method"),
    ("import sys\nsys.exit(3)\n", "bad_mod.F", "Could not import User Function Module bad_mod.F: SystemExit: 3"),
])
def test_user_code_failures_name_their_cause(tmp_path, clean_path, source, class_name, message):
    (tmp_path / "bad_mod.py").write_text(source)
    loader.prepare(tmp_path / "bad_mod.py", tmp_path / "work")
    with pytest.raises(UserCodeError) as info:
        loader.load_function(class_name)
    assert message in str(info.value)


def test_missing_package_and_broken_zip(tmp_path):
    with pytest.raises(UserCodeError, match="does not exist"):
        loader.prepare(tmp_path / "nope.py", tmp_path / "work")
    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    with pytest.raises(UserCodeError, match="cannot unpack broken.zip"):
        loader.prepare(tmp_path / "broken.zip", tmp_path / "work")


def test_serdes_are_pulsars():
    identity = loader.load_serde(None)
    assert [identity.deserialize(b) for b in (b"12", b"1.5", b"text", b"\xff")] == [12, 1.5, "text", b"\xff"]
    assert identity.serialize("x") == b"x" and identity.serialize(3) == b"3"
    with pytest.raises(TypeError):
        identity.serialize([1])
    pickled = loader.load_serde("serde.PickleSerDe")
    assert pickled.deserialize(pickled.serialize({"a": [1]})) == {"a": [1]}
    fallback = loader.IdentitySerDe()
    assert [fallback.deserialize(b) for b in (b"12", b"x")] == [12, "x"]


def _same(ours, theirs) -> bool:
    return type(ours) is type(theirs) and (ours == theirs or (ours != ours and theirs != theirs))  # nan


@given(st.one_of(st.binary(max_size=12), st.text(alphabet="0123456789+-._ eEjJinfatyINFATY\u0663x", max_size=12)
                 .map(lambda t: t.encode())))
def test_identity_serde_answers_what_pulsars_answers(data):
    assert _same(loader.IdentitySerDe().deserialize(data), PulsarIdentitySerDe().deserialize(data)), data


def test_counters_report_and_their_one_minute_window(monkeypatch):
    counts = stats.InstanceStats()
    counts.received()
    counts.invoked()
    counts.processed(4.0)
    counts.received()
    counts.user_exception("Traceback ... ValueError: x")
    counts.record_metric("size", 3)
    counts.record_metric("size", 5)
    snapshot = counts.snapshot()
    assert (snapshot["receivedTotal"], snapshot["processedSuccessfullyTotal"], snapshot["userExceptionsTotal"],
            snapshot["avgProcessLatency"]) == (2, 1, 1, 4.0)
    assert snapshot["userMetrics"] == {"user_metric_size_sum": 8.0, "user_metric_size_count": 2}
    assert snapshot["latestUserExceptions"][0]["exceptionString"].endswith("ValueError: x")
    assert snapshot["1min"]["receivedTotal"] == 2 and not counts.changed
    later = stats.time.monotonic() + stats.WINDOW_SECONDS + 1
    monkeypatch.setattr(stats.time, "monotonic", lambda: later)
    snapshot = counts.snapshot()
    assert snapshot["receivedTotal"] == 2 and snapshot["1min"]["receivedTotal"] == 0
    assert snapshot["latestUserExceptions"] == [], "cleared with the window, as Pulsar"


class Reported:
    """What the worker keeps of a supervised instance, for the JSON builders."""

    def __init__(self, running: bool, report: dict, error: str = "", restarts: int = 0):
        self.running, self.stats, self.error, self.restarts = running, report, error, restarts


def test_status_and_stats_json_have_pulsars_fields():
    record = FunctionRecord(config={"tenant": "t", "namespace": "n", "name": "f", "parallelism": 3}, version=0,
                            create_time=0, function_id="id", package="p")
    report = stats.InstanceStats()
    report.received()
    report.invoked()
    report.processed(2.0)
    supervisors = {0: Reported(True, report.snapshot()), 1: Reported(False, {}, "instance process exited with status 3", 2)}
    status = function_status(record, supervisors, "c-standalone-fw-h-8080")
    assert (status["numInstances"], status["numRunning"]) == (3, 1)
    first, second, third = (i["status"] for i in status["instances"])
    assert set(first) == {"running", "error", "numRestarts", "numReceived", "numSuccessfullyProcessed",
                          "numUserExceptions", "latestUserExceptions", "numSystemExceptions", "latestSystemExceptions",
                          "averageLatency", "lastInvocationTime", "workerId"}
    assert (first["numReceived"], first["averageLatency"], first["workerId"]) == (1, 2.0, "c-standalone-fw-h-8080")
    assert (second["running"], second["error"], second["numRestarts"]) == (False, "instance process exited with status 3", 2)
    assert (third["running"], third["lastInvocationTime"]) == (False, 0)
    overall = function_stats(record, supervisors)
    assert (overall["receivedTotal"], overall["avgProcessLatency"]) == (1, 2.0)
    assert overall["lastInvocation"] == first["lastInvocationTime"] and overall["1min"]["receivedTotal"] == 1
    idle = instance_stats(None)
    assert (idle["avgProcessLatency"], idle["lastInvocation"], idle["userMetrics"]) == (None, None, {})


def test_effectively_once_sequence_ids_are_never_0_and_follow_positions():
    """The official Python client takes sequence id 0 for "unset"; a topic's first entry here is
    (0, 0). Ids must also grow with the position, as the broker's deduplication compares them."""
    positions = [(0, 0), (0, 1), (0, 99), (1, 0), (1, 5), (7, 3)]
    ids = [sequence_id(pulsar.MessageId(-1, ledger, entry, -1)) for ledger, entry in positions]
    assert ids[0] == 1 and ids == sorted(ids) and len(set(ids)) == len(ids)
    assert sequence_id(pulsar.MessageId(-1, 3, 4, -1)) == ((3 << 28) | 4) + 1  # Pulsar's formula, plus one
