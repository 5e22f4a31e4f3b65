"""Every method of the Context a function receives (pulsar.functions.context.Context), with the
official client producing the inputs and reading what the function reports, its log topic and
what it published; its state through GET/POST .../state/{key}; its metrics on /metrics."""
from __future__ import annotations

import json

import requests

from tests.helpers import wait_for
from tests.integration.functions.support import collect, create_and_wait, write_package

PROBE = """
    import json
    from pulsar import Function

    class Probe(Function):
        def process(self, input, context):
            context.incr_counter("calls", 1)
            context.put_state("last", input)
            context.record_metric("size", len(input))
            context.publish(context.get_user_config_value("side"), "side:" + input, properties={"from": "probe"})
            context.get_logger().info("probe saw %s", input)
            message_id = context.get_message_id()
            report = {
                "message_id": [message_id.ledger_id(), message_id.entry_id()],
                "key": context.get_message_key(), "partition_key": context.get_partition_key(),
                "ordering_key": context.get_ordering_key(), "eventtime": context.get_message_eventtime(),
                "properties": context.get_message_properties(), "topic": context.get_current_message_topic_name(),
                "tenant": context.get_function_tenant(), "namespace": context.get_function_namespace(),
                "name": context.get_function_name(), "function_id": context.get_function_id(),
                "version": context.get_function_version(), "instance_id": context.get_instance_id(),
                "inputs": context.get_input_topics(), "output": context.get_output_topic(),
                "output_serde": context.get_output_serde_class_name(), "user_config": context.get_user_config_map(),
                "user_value": context.get_user_config_value("side"), "missing": context.get_user_config_value("no"),
                "secret": context.get_secret("password"), "no_secret": context.get_secret("nope"),
                "counter": context.get_counter("calls"), "state": context.get_state("last").decode(),
                "greeting": (context.get_state("greeting") or b"").decode(), "logger": context.get_logger().name,
            }
            if input == "forget":
                context.del_counter("calls")
                report["after_delete"] = context.get_counter("calls")
            return json.dumps(report)
"""
MANUAL_ACKER = """
    from pulsar import Function

    class Acker(Function):
        def process(self, input, context):
            if input != "keep":
                context.ack(context.get_message_id(), context.get_current_message_topic_name())
            return None
"""


def test_every_context_method(broker, functions, official, code):
    package = write_package(code, "probe.py", PROBE)
    config = {"className": "probe.Probe", "inputs": ["ctx-in"], "output": "ctx-out", "logTopic": "ctx-log",
              "userConfig": {"side": "persistent://public/default/ctx-side"}, "secrets": {"password": "s3cret"}}
    create_and_wait(functions, "probe", config, package)
    out, side, logs = (official.subscribe(t, "check") for t in ("ctx-out", "ctx-side", "ctx-log"))
    producer = official.create_producer("ctx-in")
    first = producer.send(b"one", partition_key="k1", ordering_key="o1", event_timestamp=1234,
                          properties={"p": "v"})
    producer.send(b"two")
    reports = [json.loads(m.data()) for m in collect(out, 2)]
    one, two = reports
    function_id = functions.get("probe").json()  # the config; the id is the worker's, checked for a UUID below
    assert one["message_id"] == [first.ledger_id(), first.entry_id()]
    assert (one["key"], one["partition_key"], one["ordering_key"], one["eventtime"]) == ("k1", "k1", "o1", 1234)
    assert one["properties"] == {"p": "v"} and one["topic"] == "persistent://public/default/ctx-in"
    assert (one["tenant"], one["namespace"], one["name"], one["version"], one["instance_id"]) == \
        ("public", "default", "probe", "0", "0")
    assert len(one["function_id"]) == 36 and function_id["name"] == "probe"
    assert one["inputs"] == ["persistent://public/default/ctx-in"]
    assert one["output"] == "persistent://public/default/ctx-out" and one["output_serde"] is None
    assert one["user_config"] == config["userConfig"] and one["missing"] is None
    assert (one["secret"], one["no_secret"]) == ("s3cret", None)
    assert (one["counter"], one["state"], two["counter"], two["state"]) == (1, "one", 2, "two")
    assert one["logger"] == "public/default/probe"
    published = collect(side, 2)
    assert [m.data() for m in published] == [b"side:one", b"side:two"]
    assert published[0].properties() == {"from": "probe"}
    log_lines = collect(logs, 2)
    assert b"probe saw one" in log_lines[0].data() and log_lines[0].properties()["loglevel"] == "INFO"
    assert log_lines[0].properties()["fqn"] == "public/default/probe"

    # state through REST: what the function wrote, and what REST writes the function reads
    counter = functions.get("probe", "/state/calls").json()
    assert (counter["key"], counter["numberValue"], counter["stringValue"], counter["version"]) == ("calls", 2, None, 1)
    assert functions.get("probe", "/state/last").json()["stringValue"] == "two"
    missing = functions.get("probe", "/state/nothing")
    assert (missing.status_code, missing.json()["reason"]) == (404, "key 'nothing' doesn't exist.")
    state = json.dumps({"key": "greeting", "stringValue": "hello"})
    assert functions.post("probe", "/state/greeting", files={"state": (None, state)}).status_code == 204
    producer.send(b"forget")
    three = json.loads(collect(out, 1)[0].data())
    assert three["greeting"] == "hello" and three["after_delete"] is None
    assert functions.get("probe", "/state/calls").status_code == 404

    # record_metric: userMetrics in stats, and pulsar_function_* on /metrics
    stats = wait_for(lambda: (s := functions.stats("probe"))["processedSuccessfullyTotal"] == 3 and s)
    user = stats["instances"][0]["metrics"]["userMetrics"]
    assert (user["user_metric_size_sum"], user["user_metric_size_count"]) == (3 + 3 + 6, 3)
    metrics = requests.get(broker.broker.web_service_url + "/metrics", timeout=10).text
    assert 'pulsar_function_processed_successfully_total{cluster="standalone",fqfn="public/default/probe",' \
           'instance_id="0",name="probe",namespace="public/default",tenant="public"} 3.0' in metrics
    assert 'metric="size"' in metrics and "pulsar_function_process_latency_ms_count" in metrics


def test_manual_acknowledgement_through_context_ack(broker, functions, official, code):
    package = write_package(code, "acker.py", MANUAL_ACKER)
    create_and_wait(functions, "acker", {"className": "acker.Acker", "inputs": ["man-in"],
                                         "processingGuarantees": "MANUAL"}, package)
    producer = official.create_producer("man-in")
    for value in (b"a", b"keep", b"b"):
        producer.send(value)
    topic = "persistent://public/default/man-in"
    wait_for(lambda: functions.stats("acker")["processedSuccessfullyTotal"] == 3)
    wait_for(lambda: broker.subscription_stats(topic, "public/default/acker")["msgBacklog"] == 1,
             "only the message the function did not acknowledge left")
