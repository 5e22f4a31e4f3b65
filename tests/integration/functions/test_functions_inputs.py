"""How a function reads and writes: a topic pattern over a namespace's topics, the user's own SerDe
classes for inputs and output (--custom-serde-inputs, --output-serde-classname), Pulsar's
PickleSerDe, and the string schema of Pulsar's Python runtime on both sides."""
from __future__ import annotations

import pickle

import pulsar

from tests.integration.functions.support import REVERSE_SERDE, collect, create_and_wait, write_package

ECHO = """
    def process(input):
        return input
"""
SERDES = """
    from pulsar import Function
""" + REVERSE_SERDE + """
    class Lengths(Function):
        def process(self, input, context):
            return {"text": input, "length": len(input)}
"""
TYPED = """
    from pulsar import Function

    class Typed(Function):
        def process(self, input, context):
            return "%s:%s" % (type(input).__name__, input)
"""


def test_a_topic_pattern_consumes_every_matching_topic(functions, official, code):
    package = write_package(code, "echo.py", ECHO)
    official.create_producer("pat-a").close()  # two topics exist before the function subscribes
    official.create_producer("pat-b").close()
    create_and_wait(functions, "pattern", {"className": "echo", "topicsPattern": "persistent://public/default/pat-.*",
                                           "output": "pattern-out", "subscriptionPosition": "Earliest"}, package)
    out = official.subscribe("pattern-out", "check")
    official.create_producer("pat-a").send(b"from a")
    official.create_producer("pat-b").send(b"from b")
    got = collect(out, 2)
    assert sorted(m.data() for m in got) == [b"from a", b"from b"]
    assert {m.properties()["__pfn_input_topic__"] for m in got} == {"persistent://public/default/pat-a",
                                                                     "persistent://public/default/pat-b"}
    config = functions.get("pattern").json()
    assert config["inputSpecs"]["persistent://public/default/pat-.*"]["isRegexPattern"] is True


def test_custom_serdes_of_the_package_and_pulsars_pickle_serde(functions, official, code):
    package = write_package(code, "serdes.py", SERDES)
    create_and_wait(functions, "serdes", {"className": "serdes.Lengths", "customSerdeInputs": {"sd-in": "serdes.Reverse"},
                                          "output": "sd-out", "outputSerdeClassName": "serde.PickleSerDe"}, package)
    out = official.subscribe("sd-out", "check")
    official.create_producer("sd-in").send(b"olleh")  # Reverse reads it as "hello"
    assert pickle.loads(collect(out, 1)[0].data()) == {"text": "hello", "length": 5}


def test_the_string_schema_on_input_and_output(functions, official, code):
    package = write_package(code, "typed.py", TYPED)
    create_and_wait(functions, "typed", {"className": "typed.Typed", "customSchemaInputs": {"sc-in": "string"},
                                         "output": "sc-out", "outputSchemaType": "string"}, package)
    out = official.subscribe("sc-out", "check", schema=pulsar.schema.StringSchema())
    official.create_producer("sc-in", schema=pulsar.schema.StringSchema()).send("42")
    message = collect(out, 1)[0]
    assert message.value() == "str:42", "the schema decodes to str (IdentitySerDe would have made it an int)"
