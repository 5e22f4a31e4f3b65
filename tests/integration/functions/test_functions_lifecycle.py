"""A function's life over /admin/v3/functions with the official client producing and consuming:
create (class and plain-function forms, a .py or a .zip, an uploaded file or a file: URL), get,
list, status, stats, update, delete, and what create refuses with Pulsar's errors."""
from __future__ import annotations

import base64
import functools
import http.server
import threading
import zipfile
from pathlib import Path

import pulsar
import requests

from minipulsar.functions.trigger import input_message_id
from tests.helpers import wait_for
from tests.integration.functions.support import (FunctionsAdmin, collect, create_and_wait, instance_pids,
                                                 write_package)

EXCLAIM = """
    from pulsar import Function

    class Exclaim(Function):
        def process(self, input, context):
            return input + "!"
"""
PLAIN = """
    def process(input):
        return "plain:" + input
"""


def test_class_form_processes_every_message_with_pulsars_output_properties(broker, functions, official, code):
    package = write_package(code, "exclamation.py", EXCLAIM)
    status = create_and_wait(functions, "exclaim", {"className": "exclamation.Exclaim", "inputs": ["fn-in"],
                                                    "output": "fn-out"}, package)
    assert status["numInstances"] == 1 and status["instances"][0]["status"]["error"] == ""
    out = official.subscribe("fn-out", "check")
    producer = official.create_producer("fn-in")
    sent = [producer.send(f"m{i}".encode()) for i in range(20)]
    got = collect(out, 20)
    assert [m.data() for m in got] == [f"m{i}!".encode() for i in range(20)]
    for message, message_id in zip(got, sent):
        properties = message.properties()
        assert properties["__pfn_input_topic__"] == "persistent://public/default/fn-in"
        assert input_message_id(properties) == (message_id.ledger_id(), message_id.entry_id())
        base64.urlsafe_b64decode(properties["__pfn_input_msg_id__"])  # URL-safe base64, as Pulsar's base64ify
    stats = wait_for(lambda: (s := functions.stats("exclaim"))["processedSuccessfullyTotal"] == 20 and s)
    assert stats["receivedTotal"] == 20 and stats["userExceptionsTotal"] == stats["systemExceptionsTotal"] == 0
    assert stats["avgProcessLatency"] is not None and stats["lastInvocation"] > 0
    assert stats["instances"][0]["metrics"]["processedSuccessfullyTotal"] == 20
    assert stats["1min"]["receivedTotal"] == 20
    subscriptions = broker.topic_stats("persistent://public/default/fn-in")["subscriptions"]
    assert subscriptions["public/default/exclaim"]["type"] == "Shared"
    wait_for(lambda: broker.subscription_stats("persistent://public/default/fn-in",
                                               "public/default/exclaim")["msgBacklog"] == 0)


def test_a_broker_with_a_relative_data_dir_runs_its_functions(broker_factory, tmp_path, monkeypatch):
    """The image runs with dataDir=data/standalone, relative to /pulsar."""
    monkeypatch.chdir(tmp_path)
    relative = broker_factory(data_dir=Path("relative-data"))
    admin = FunctionsAdmin(relative.broker.web_service_url)
    package = write_package(tmp_path / "code", "exclamation.py", EXCLAIM)
    status = create_and_wait(admin, "exclaim", {"className": "exclamation.Exclaim", "inputs": ["rel-in"],
                                                "output": "rel-out"}, package)
    assert status["instances"][0]["status"]["error"] == ""
    client = pulsar.Client(relative.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        out = client.subscribe("rel-out", "check")
        client.create_producer("rel-in").send(b"hi")
        assert collect(out, 1)[0].data() == b"hi!"
    finally:
        client.close()
        admin.session.close()


def test_plain_function_form_and_a_file_url_package(functions, official, code):
    package = write_package(code, "plain.py", PLAIN)
    answer = functions.create("plain", {"className": "plain", "inputs": ["plain-in"], "output": "plain-out"},
                              url=package.as_uri())
    assert answer.status_code == 204, answer.text
    functions.wait_running("plain")
    out = official.subscribe("plain-out", "check")
    official.create_producer("plain-in").send(b"x")
    assert collect(out, 1)[0].data() == b"plain:x"


def test_an_http_url_package(functions, official, code):
    """The package named by an http:// URL (Pulsar's functionPkgUrl), served here by a plain
    HTTP server on loopback; a URL that answers 404 is refused with Pulsar's 400."""
    package = write_package(code, "served.py", PLAIN.replace("plain:", "served:"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(code))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        missing = functions.create("unserved", {"className": "served", "inputs": ["x"]}, url=base + "missing.py")
        assert missing.status_code == 400, missing.text
        answer = functions.create("served", {"className": "served", "inputs": ["served-in"], "output": "served-out"},
                                  url=base + package.name)
        assert answer.status_code == 204, answer.text
    finally:
        server.shutdown()
    functions.wait_running("served")
    out = official.subscribe("served-out", "check")
    official.create_producer("served-in").send(b"x")
    assert collect(out, 1)[0].data() == b"served:x"


def test_zip_package_with_pulsars_layout(functions, official, code):
    archive = code / "zipped.zip"
    code.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped/src/zipped_fn.py", "def process(input):\n    return input.upper()\n")
    create_and_wait(functions, "zipped", {"className": "zipped_fn", "inputs": ["zip-in"], "output": "zip-out"}, archive)
    out = official.subscribe("zip-out", "check")
    official.create_producer("zip-in").send(b"abc")
    assert collect(out, 1)[0].data() == b"ABC"


def test_get_and_list_answer_the_stored_function_config(functions, code):
    package = write_package(code, "exclamation.py", EXCLAIM)
    create_and_wait(functions, "stored", {"className": "exclamation.Exclaim", "inputs": ["a-in", "b-in"],
                                          "output": "s-out", "userConfig": {"k": "v"}, "parallelism": 1}, package)
    config = functions.get("stored").json()
    assert set(config["inputSpecs"]) == {"persistent://public/default/a-in", "persistent://public/default/b-in"}
    assert config["inputSpecs"]["persistent://public/default/a-in"]["isRegexPattern"] is False
    assert config["output"] == "persistent://public/default/s-out"
    assert (config["processingGuarantees"], config["autoAck"], config["runtime"], config["cleanupSubscription"],
            config["subscriptionPosition"]) == ("ATLEAST_ONCE", True, "PYTHON", True, "Latest")
    assert config["userConfig"] == {"k": "v"} and config["resources"]["ram"] == 1073741824
    assert config["jar"] is None and config["windowConfig"] is None  # every field, null where unset
    assert functions.get("").json() == ["stored"]


def test_one_instances_status(functions, official, code):
    """GET .../{name}/{instance}/status: that instance's FunctionInstanceStatusData, unwrapped."""
    package = write_package(code, "exclamation.py", EXCLAIM)
    create_and_wait(functions, "each", {"className": "exclamation.Exclaim", "inputs": ["each-in"],
                                        "output": "each-out", "parallelism": 2}, package, instances=2)
    assert functions.post("each", "/1/stop").status_code == 204
    functions.wait_running("each", 1)
    out = official.subscribe("each-out", "check")
    official.create_producer("each-in").send(b"x")
    assert collect(out, 1)[0].data() == b"x!"
    first = wait_for(lambda: (s := functions.get("each", "/0/status").json())["numSuccessfullyProcessed"] == 1 and s,
                     "instance 0 processed the message")
    assert set(first) == {"running", "error", "numRestarts", "numReceived", "numSuccessfullyProcessed",
                          "numUserExceptions", "latestUserExceptions", "numSystemExceptions",
                          "latestSystemExceptions", "averageLatency", "lastInvocationTime", "workerId"}
    assert (first["running"], first["error"], first["numRestarts"], first["numReceived"]) == (True, "", 0, 1)
    assert first["lastInvocationTime"] > 0 and first["workerId"].startswith("c-standalone-fw-")
    assert first == functions.status("each")["instances"][0]["status"], "the same data as in the function's status"
    stopped = functions.get("each", "/1/status").json()
    assert (stopped["running"], stopped["numReceived"]) == (False, 0)
    invalid = functions.get("each", "/2/status")
    assert (invalid.status_code, invalid.json()["reason"]) == (400, "Invalid Instance Id")
    missing = functions.get("nobody", "/0/status")
    assert (missing.status_code, missing.json()["reason"]) == (404, "Function nobody doesn't exist")


def test_delete_stops_consumption_and_removes_the_subscription(broker, functions, official, code, tmp_path):
    package = write_package(code, "exclamation.py", EXCLAIM)
    create_and_wait(functions, "gone", {"className": "exclamation.Exclaim", "inputs": ["del-in"],
                                        "output": "del-out"}, package)
    assert len(instance_pids(tmp_path)) == 1
    out = official.subscribe("del-out", "check")
    producer = official.create_producer("del-in")
    producer.send(b"before")
    assert collect(out, 1)[0].data() == b"before!"
    assert functions.delete("gone").status_code == 204
    assert instance_pids(tmp_path) == []
    assert "public/default/gone" not in broker.topic_stats("persistent://public/default/del-in")["subscriptions"]
    producer.send(b"after")
    try:
        message = out.receive(1500)
    except pulsar.Timeout:
        message = None
    assert message is None, message.data()
    assert functions.get("gone").status_code == 404
    assert functions.get("gone").json() == {"reason": "Function gone doesn't exist"}


def test_create_refusals_carry_pulsars_status_and_reason(functions, code):
    package = write_package(code, "exclamation.py", EXCLAIM)
    base = {"className": "exclamation.Exclaim", "inputs": ["r-in"], "output": "r-out"}
    cases = [
        ({**base, "inputs": []}, package, 400, "No input topic(s) specified for the function"),
        ({**base, "inputs": ["persistent://public"]}, package, 400, "Input topic persistent://public is invalid"),
        ({**base, "output": "r-in"}, package, 400,
         "Output topic r-in is also being used as an input topic (topics must be one or the other)"),
        ({**base, "deadLetterTopic": "dlq"}, package, 400,
         "Dead Letter Topic specified, however max retries is set to infinity"),
        ({**base, "parallelism": 0}, package, 400, "Function parallelism must be a positive number"),
        ({**base, "className": ""}, package, 400, "Function classname cannot be null"),
        (base, None, 400, "Function package is not provided"),
        ({**base, "parallelism": "two"}, package, 400, "FunctionConfig field parallelism must be an integer"),
    ]
    for config, pkg, status, reason in cases:
        answer = functions.create("refused", config, pkg)
        assert (answer.status_code, answer.json()["reason"]) == (status, reason), config
    assert functions.create("ok", base, package).status_code == 204
    again = functions.create("ok", base, package)
    assert (again.status_code, again.json()["reason"]) == (400, "Function ok already exists")
    nowhere = FunctionsAdmin(functions.base.split("/admin/")[0], "public", "no-such-ns").create("x", base, package)
    assert (nowhere.status_code, nowhere.json()["reason"]) == (400, "Namespace does not exist")


def test_worker_disabled_answers_409(broker_factory):
    broker = broker_factory(functionsWorkerEnabled="false")
    answer = requests.get(broker.broker.web_service_url + "/admin/v3/functions/public/default", timeout=10)
    assert answer.status_code == 409
    assert "functionsWorkerEnabled" in answer.json()["reason"]
