"""FunctionConfig as the worker reads it: Pulsar's inferred defaults, its doCommonChecks messages,
the stored form (inputs folded into inputSpecs, every field present) and validateUpdate."""
from __future__ import annotations

import pytest

from minipulsar.functions.config import FIELDS, merge_update, normalize, parse
from minipulsar.functions.errors import InvalidFunctionError

BASE = {"className": "exclamation.Exclaim", "inputs": ["in"], "output": "out"}


def refused(config: dict) -> str:
    with pytest.raises(InvalidFunctionError) as info:
        normalize(config, "public", "default", "fn")
    return str(info.value)


def test_defaults_are_pulsars_and_every_field_is_written():
    stored = normalize(BASE, "public", "default", "fn")
    assert list(stored) == list(FIELDS)
    assert (stored["tenant"], stored["namespace"], stored["name"], stored["parallelism"], stored["runtime"]) == \
        ("public", "default", "fn", 1, "PYTHON")
    assert (stored["processingGuarantees"], stored["autoAck"], stored["retainOrdering"], stored["cleanupSubscription"],
            stored["subscriptionPosition"], stored["forwardSourceMessageProperty"]) == \
        ("ATLEAST_ONCE", True, False, True, "Latest", True)
    assert stored["resources"] == {"cpu": 1.0, "ram": 1073741824, "disk": 10737418240}
    assert stored["userConfig"] == {} and stored["inputs"] is None and stored["py"] is None
    assert stored["output"] == "persistent://public/default/out"


def test_the_paths_names_win_over_the_bodys():
    stored = normalize({**BASE, "tenant": "other", "name": "x"}, "public", "default", "fn")
    assert (stored["tenant"], stored["name"]) == ("public", "fn")


def test_inputs_of_every_form_end_in_input_specs_with_full_names():
    stored = normalize({"className": "a.B", "inputs": ["plain"], "customSerdeInputs": {"serde-in": "my.Serde"},
                        "customSchemaInputs": {"schema-in": "string"}, "topicsPattern": "persistent://public/default/p-.*",
                        "inputSpecs": {"spec-in": {"receiverQueueSize": 5, "regexPattern": False}}},
                       "public", "default", "fn")
    specs = stored["inputSpecs"]
    assert specs["persistent://public/default/plain"]["serdeClassName"] is None
    assert specs["persistent://public/default/serde-in"]["serdeClassName"] == "my.Serde"
    assert specs["persistent://public/default/schema-in"]["schemaType"] == "string"
    assert specs["persistent://public/default/p-.*"]["isRegexPattern"] is True
    assert specs["persistent://public/default/spec-in"]["receiverQueueSize"] == 5
    assert all(set(spec) >= {"schemaProperties", "consumerProperties", "poolMessages"} for spec in specs.values())


@pytest.mark.parametrize("change, message", [
    ({"inputs": []}, "No input topic(s) specified for the function"),
    ({"inputs": ["a/b"]}, "Input topic a/b is invalid"),
    ({"output": "persistent://x"}, "Output topic persistent://x is invalid"),
    ({"logTopic": "x://y/z/w"}, "LogTopic topic x://y/z/w is invalid"),
    ({"output": "persistent://public/default/in"},
     "Output topic persistent://public/default/in is also being used as an input topic (topics must be one or the other)"),
    ({"parallelism": -1}, "Function parallelism must be a positive number"),
    ({"className": None}, "Function classname cannot be null"),
    ({"timeoutMs": 0}, "Function timeout must be a positive number"),
    ({"timeoutMs": 5, "processingGuarantees": "ATMOST_ONCE"},
     "Message timeout can only be specified with processing guarantee is ATLEAST_ONCE"),
    ({"maxMessageRetries": 2, "processingGuarantees": "EFFECTIVELY_ONCE"},
     "MaxMessageRetries and Effectively once don't gel well"),
    ({"deadLetterTopic": "dlq"}, "Dead Letter Topic specified, however max retries is set to infinity"),
    ({"retainOrdering": True, "retainKeyOrdering": True}, "Only one of retain ordering or retain key ordering can be set"),
    ({"retainKeyOrdering": True, "processingGuarantees": "EFFECTIVELY_ONCE"},
     "When effectively once processing guarantee is specified, retain Key ordering cannot be set"),
    ({"autoAck": False, "processingGuarantees": "ATMOST_ONCE"}, "When Guarantees == ATMOST_ONCE, autoAck must be"),
    ({"windowConfig": {"windowLengthCount": 10}}, "There is currently no support windowing in python"),
    ({"resources": {"ram": 0}}, "The ram allocation for the function must be positive"),
    ({"outputSerdeClassName": "a.S", "outputSchemaType": "string"},
     "Only one of outputSchemaType or outputSerdeClassName should be set"),
    ({"jar": "f.jar"}, "Function runtime JAVA is not supported"),
    ({"inputSpecs": {"x": {"receiverQueueSize": -1}}}, "Receiver queue size should be >= zero"),
    ({"topicsPattern": "persistent://public/default/(unclosed"},
     "Input topic pattern persistent://public/default/(unclosed is not a valid regular expression"),
])
def test_pulsars_checks_and_messages(change, message):
    assert refused({**BASE, **change}).startswith(message)


@pytest.mark.parametrize("body, message", [
    ('[1]', "functionConfig must be a JSON object"),
    ('{"parallelism": true}', "FunctionConfig field parallelism must be an integer"),
    ('{"inputs": "a,b"}', "FunctionConfig field inputs must be a list of topic names"),
    ('{"processingGuarantees": "SOMETIMES"}', "FunctionConfig field processingGuarantees must be one of"),
    ('{"userConfig": []}', "FunctionConfig field userConfig must be a JSON object"),
    ('{"resources": {"cpu": "two"}}', "FunctionConfig field resources.cpu must be a number"),
    ('{', "functionConfig is not valid JSON"),
])
def test_parse_refuses_wrong_types_naming_the_field(body, message):
    with pytest.raises(InvalidFunctionError) as info:
        parse(body)
    assert str(info.value).startswith(message)


def test_parse_ignores_unknown_fields_and_empty_bodies():
    assert parse('{"someFutureField": 1, "parallelism": 2}')["parallelism"] == 2
    assert parse(None) == {} and parse("  ") == {}


def test_update_replaces_what_may_change_and_refuses_the_rest():
    stored = normalize(BASE, "public", "default", "fn")
    merged = merge_update(stored, {"parallelism": 3, "userConfig": {"a": 1}, "output": "out2", "className": "b.C"})
    assert (merged["parallelism"], merged["userConfig"], merged["output"], merged["className"]) == \
        (3, {"a": 1}, "persistent://public/default/out2", "b.C")
    assert merge_update(stored, {}) == stored
    for change, message in (({"inputs": ["other"]}, "Input Topics cannot be altered"),
                            ({"processingGuarantees": "ATMOST_ONCE"}, "Processing Guarantees cannot be altered"),
                            ({"retainOrdering": True}, "Retain Ordering cannot be altered"),
                            ({"tenant": "t2"}, "Tenants differ"),
                            ({"subName": "other"}, "Subscription Name cannot be altered"),
                            ({"parallelism": 0}, "Function parallelism must be a positive number")):
        with pytest.raises(InvalidFunctionError, match=message):
            merge_update(stored, change)
    respecified = merge_update(stored, {"customSerdeInputs": {"in": "my.Serde"}})
    assert respecified["inputSpecs"]["persistent://public/default/in"]["serdeClassName"] == "my.Serde"


@pytest.mark.parametrize("name", ["..", ".", "a b", "x/y", "é\n"])
def test_names_that_would_escape_the_worker_folders_are_refused(name):
    with pytest.raises(InvalidFunctionError, match="Function name .* is invalid"):
        normalize(BASE, "public", "default", name)
