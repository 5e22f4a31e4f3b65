"""`minipulsar admin functions ...` run as the user runs it (child processes) against an
in-process broker's function worker: pulsar-admin's verbs, flags and output, with the official
client producing and consuming; and `localrun`, a function run from the command line against the
broker's binary port."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

from tests import ROOT
from tests.helpers import wait_for
from tests.integration.cli.test_cli_admin import Cli
from tests.integration.functions.support import REVERSE_SERDE, collect, write_package

COUNTER = """
    from pulsar import Function

    class Counter(Function):
        def process(self, input, context):
            context.incr_counter("seen", 1)
            return input + context.get_user_config_value("suffix")
"""
SERDES = REVERSE_SERDE + """
    def process(input):
        return input
"""
PUBLIC = "persistent://public/default/"


def test_functions_verbs(broker, official, tmp_path):
    cli = Cli(broker.broker.web_service_url)
    package = write_package(tmp_path / "code", "counter.py", COUNTER)
    assert cli.ok("functions", "create", "--py", str(package), "--classname", "counter.Counter", "--inputs", "cli-in",
                  "--output", "cli-out", "--user-config", '{"suffix": "!"}') == "Created successfully\n"
    status = wait_for(lambda: (s := json.loads(cli.ok("functions", "status", "--name", "Counter")))["numRunning"] == 1
                      and s, "the function running (its name inferred from --classname)")
    assert status["instances"][0]["status"]["workerId"].startswith("c-standalone-fw-")
    assert cli.ok("functions", "list") == "Counter\n"
    assert json.loads(cli.ok("functions", "get", "--fqfn", "public/default/Counter"))["userConfig"] == {"suffix": "!"}
    out = official.subscribe("cli-out", "check")
    official.create_producer("cli-in").send(b"a")
    assert collect(out, 1)[0].data() == b"a!"
    assert cli.ok("functions", "trigger", "--name", "Counter", "--trigger-value", "b") == "b!\n"
    state = json.loads(cli.ok("functions", "querystate", "--name", "Counter", "-k", "seen"))
    assert (state["key"], state["numberValue"]) == ("seen", 2)
    assert cli.ok("functions", "putstate", "--name", "Counter", "-s", '{"key": "note", "stringValue": "x"}') == ""
    assert json.loads(cli.ok("functions", "querystate", "--name", "Counter", "-k", "note"))["stringValue"] == "x"
    wait_for(lambda: json.loads(cli.ok("functions", "stats", "--name", "Counter", "--instance-id", "0"))[
        "processedSuccessfullyTotal"] == 2, "the instance's stats of both messages")
    assert cli.ok("functions", "update", "--name", "Counter", "--user-config", '{"suffix": "?"}') == \
        "Updated successfully\n"
    wait_for(lambda: json.loads(cli.ok("functions", "status", "--name", "Counter"))["numRunning"] == 1)
    assert cli.ok("functions", "trigger", "--name", "Counter", "--trigger-value", "c") == "c?\n"
    assert cli.ok("functions", "stop", "--name", "Counter") == "Stopped successfully\n"
    assert cli.ok("functions", "start", "--name", "Counter", "--instance-id", "0") == "Started successfully\n"
    assert cli.ok("functions", "restart", "--name", "Counter") == "Restarted successfully\n"
    assert cli.ok("functions", "delete", "--name", "Counter") == "Deleted successfully\n"
    missing = cli.run("functions", "get", "--name", "Counter")
    assert (missing.returncode, missing.stderr.strip()) == (
        1, "minipulsar admin functions get: Function Counter doesn't exist (HTTP 404)")


def test_semantic_flags_reach_the_stored_function_config(broker, tmp_path):
    """Each flag lands in its FunctionConfig field, named as Pulsar's JSON names it; inputs,
    the pattern and the input SerDe are folded into inputSpecs (Pulsar's convertFromDetails)."""
    cli = Cli(broker.broker.web_service_url)
    package = write_package(tmp_path / "code", "serdes.py", SERDES)
    assert cli.ok("functions", "create", "--py", str(package), "--classname", "serdes", "--name", "flagged",
                  "--processing-guarantees", "ATLEAST_ONCE", "--retain-ordering", "--max-message-retries", "3",
                  "--dead-letter-topic", "flags-dlq", "--timeout-ms", "5000",
                  "--custom-serde-inputs", '{"flags-a": "serdes.Reverse"}', "--output", "flags-out",
                  "--output-serde-classname", "serde.PickleSerDe", "--topics-pattern", PUBLIC + "flags-p-.*",
                  "--secrets", '{"password": "s3cret"}', "--log-topic", "flags-log",
                  "--parallelism", "2") == "Created successfully\n"
    config = json.loads(cli.ok("functions", "get", "--name", "flagged"))
    assert (config["processingGuarantees"], config["retainOrdering"], config["retainKeyOrdering"]) == \
        ("ATLEAST_ONCE", True, False)
    assert (config["maxMessageRetries"], config["deadLetterTopic"], config["timeoutMs"]) == \
        (3, PUBLIC + "flags-dlq", 5000)
    assert (config["output"], config["outputSerdeClassName"], config["logTopic"]) == \
        (PUBLIC + "flags-out", "serde.PickleSerDe", PUBLIC + "flags-log")
    assert config["secrets"] == {"password": "s3cret"} and config["parallelism"] == 2
    specs = config["inputSpecs"]
    assert set(specs) == {PUBLIC + "flags-a", PUBLIC + "flags-p-.*"}
    assert (specs[PUBLIC + "flags-a"]["serdeClassName"], specs[PUBLIC + "flags-a"]["isRegexPattern"]) == \
        ("serdes.Reverse", False)
    assert (specs[PUBLIC + "flags-p-.*"]["serdeClassName"], specs[PUBLIC + "flags-p-.*"]["isRegexPattern"]) == \
        (None, True)
    assert config["inputs"] is None and config["topicsPattern"] is None and config["customSerdeInputs"] is None
    wait_for(lambda: json.loads(cli.ok("functions", "status", "--name", "flagged"))["numRunning"] == 2,
             "both instances running with that config")
    assert cli.ok("functions", "create", "--py", str(package), "--classname", "serdes", "--name", "atmost",
                  "--inputs", "flags-b", "--processing-guarantees", "ATMOST_ONCE") == "Created successfully\n"
    assert json.loads(cli.ok("functions", "get", "--name", "atmost"))["processingGuarantees"] == "ATMOST_ONCE"


def test_create_with_a_zip_a_config_file_and_refusals(broker, official, tmp_path):
    cli = Cli(broker.broker.web_service_url)
    archive = tmp_path / "upper.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("upper/src/upper.py", "def process(input):\n    return input.upper()\n")
    config_file = tmp_path / "function.yaml"
    config_file.write_text(f"className: upper\ninputs: [zip-cli-in]\noutput: zip-cli-out\npy: {archive}\n"
                           f"name: upper\nparallelism: 1\n")
    assert cli.ok("functions", "create", "--function-config-file", str(config_file)) == "Created successfully\n"
    wait_for(lambda: json.loads(cli.ok("functions", "status", "--name", "upper"))["numRunning"] == 1)
    out = official.subscribe("zip-cli-out", "check")
    official.create_producer("zip-cli-in").send(b"shout")
    assert collect(out, 1)[0].data() == b"SHOUT"
    no_package = cli.run("functions", "create", "--classname", "x.Y", "--inputs", "a")
    assert no_package.returncode == 2 and "Either a Java jar or a Python file" in no_package.stderr
    bad_topic = cli.run("functions", "create", "--py", str(archive), "--classname", "upper", "--name", "bad",
                        "--inputs", "persistent://only-tenant")
    assert (bad_topic.returncode, bad_topic.stderr.strip()) == (
        1, "minipulsar admin functions create: Input topic persistent://only-tenant is invalid (HTTP 400)")


def test_localrun_runs_the_function_against_the_broker(broker, official, tmp_path):
    package = write_package(tmp_path / "code", "counter.py", COUNTER)
    out = official.subscribe("local-out", "check")
    command = [sys.executable, "-m", "minipulsar", "admin", "functions", "localrun", "--py", str(package),
               "--classname", "counter.Counter", "--inputs", "local-in", "--output", "local-out",
               "--user-config", '{"suffix": "~"}', "--broker-service-url", broker.url,
               "--state-storage-service-url", (tmp_path / "state").as_uri()]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        topic = "persistent://public/default/local-in"
        wait_for(lambda: topic in broker.broker.topics and "public/default/Counter" in
                 broker.topic_stats(topic)["subscriptions"], "the local instance subscribed", timeout=60)
        official.create_producer("local-in").send(b"here")
        assert collect(out, 1)[0].data() == b"here~"
        assert (tmp_path / "state" / "public" / "default" / "Counter.db").is_file()
    finally:
        process.terminate()
        output = process.communicate(timeout=60)[0].decode(errors="replace")
    assert process.returncode == 130, output  # stopped by a signal, as every verb (minipulsar.cli.runtime)
    assert "Traceback" not in output, output
    assert broker.subscription_stats(topic, "public/default/Counter")["consumers"] == [], \
        "the local instance closed its consumer when localrun ended"
