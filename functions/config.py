"""FunctionConfig: the JSON a function is created and updated with, checked and completed as
Pulsar's FunctionConfigUtils does it for a Python function, and the stored form GET answers.

A request body may omit any field. `normalize` fills what Pulsar infers (parallelism 1, runtime
PYTHON, ATLEAST_ONCE, autoAck, cleanupSubscription, Latest, default resources), runs Pulsar's
doCommonChecks with its messages, and folds `inputs`, `topicsPattern`, `customSerdeInputs` and
`customSchemaInputs` into `inputSpecs` (topic -> ConsumerConfig) as convertFromDetails does, so
the stored config, which GET returns with every FunctionConfig field (null where unset), is what
instances run. Topic names are stored in full (persistent://tenant/namespace/name). `merge_update`
is Pulsar's validateUpdate: what may change, what may not ("Input Topics cannot be altered", ...).

Where minipulsar differs (docs/compatibility.md): Pulsar's doPythonChecks refuses
`maxMessageRetries` for Python; here the instance sets the consumer's dead-letter policy instead.
Java and Go functions (`jar`, `go`) are refused: minipulsar runs Python only.
Every error is InvalidFunctionError (HTTP 400). Source: Pulsar FunctionConfig, ConsumerConfig,
FunctionConfigUtils.inferMissingArguments / doCommonChecks / convert / validateUpdate.
"""
from __future__ import annotations

import copy
import json
import re
from typing import Any

from minipulsar.functions.errors import InvalidFunctionError
from minipulsar.proto.topic_name import full_topic_name

PROCESSING_GUARANTEES = ("ATLEAST_ONCE", "ATMOST_ONCE", "EFFECTIVELY_ONCE", "MANUAL")
SUBSCRIPTION_POSITIONS = ("Latest", "Earliest")
RUNTIMES = ("JAVA", "PYTHON", "GO")
DEFAULT_RESOURCES = {"cpu": 1.0, "ram": 1073741824, "disk": 10737418240}  # Pulsar Resources defaults
MAX_PENDING_ASYNC_REQUESTS = 1000  # Pulsar's MAX_PENDING_ASYNC_REQUESTS_DEFAULT
ATMOST_ONCE_AUTO_ACK = ("When Guarantees == ATMOST_ONCE, autoAck must be equal to true. This is a contradictory "
                        "configuration, autoAck will be removed later. Please refer to PIP: "
                        "https://github.com/apache/pulsar/issues/15560")

_STRINGS = ("runtimeFlags", "tenant", "namespace", "name", "className", "topicsPattern", "inputTypeClassName",
            "output", "outputSchemaType", "outputTypeClassName", "outputSerdeClassName", "logTopic", "logLevel",
            "batchBuilder", "deadLetterTopic", "subName", "fqfn", "jar", "py", "go", "functionType",
            "customRuntimeOptions")
_ENUMS = {"processingGuarantees": PROCESSING_GUARANTEES, "runtime": RUNTIMES,
          "subscriptionPosition": SUBSCRIPTION_POSITIONS}
_BOOLS = ("retainOrdering", "retainKeyOrdering", "forwardSourceMessageProperty", "autoAck", "cleanupSubscription",
          "exposePulsarAdminClientEnabled", "skipToLatest")
_INTS = ("maxMessageRetries", "parallelism", "timeoutMs", "maxPendingAsyncRequests")
_STRING_MAPS = ("customSerdeInputs", "customSchemaInputs", "customSchemaOutputs")
_OBJECT_MAPS = ("userConfig", "secrets", "inputSpecs")
_OBJECTS = ("producerConfig", "resources", "windowConfig")
# Pulsar's NamedEntity rule for tenant, namespace and function names (they also name files here)
_NAME = re.compile(r"[-=:.\w]+")
# Every FunctionConfig field, in Pulsar's declaration order.
FIELDS = ("runtimeFlags", "tenant", "namespace", "name", "className", "inputs", "customSerdeInputs", "topicsPattern",
          "customSchemaInputs", "customSchemaOutputs", "inputSpecs", "inputTypeClassName", "output", "producerConfig",
          "outputSchemaType", "outputTypeClassName", "outputSerdeClassName", "logTopic", "logLevel",
          "processingGuarantees", "retainOrdering", "retainKeyOrdering", "batchBuilder",
          "forwardSourceMessageProperty", "userConfig", "secrets", "runtime", "autoAck", "maxMessageRetries",
          "deadLetterTopic", "subName", "parallelism", "resources", "fqfn", "windowConfig", "timeoutMs", "jar", "py",
          "go", "functionType", "cleanupSubscription", "customRuntimeOptions", "maxPendingAsyncRequests",
          "exposePulsarAdminClientEnabled", "skipToLatest", "subscriptionPosition")
# ConsumerConfig, as inputSpecs values (Pulsar writes the regex flag as isRegexPattern).
CONSUMER_FIELDS = ("schemaType", "serdeClassName", "isRegexPattern", "schemaProperties", "consumerProperties",
                   "receiverQueueSize", "cryptoConfig", "messagePayloadProcessorConfig", "poolMessages")


# ---- reading a request -----------------------------------------------------------------------
def parse(text: str | bytes | None) -> dict:
    """The functionConfig form field as a dict ({} when absent); InvalidFunctionError when it is not
    a JSON object or a field has the wrong type."""
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidFunctionError(f"functionConfig is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidFunctionError("functionConfig must be a JSON object (Pulsar's FunctionConfig)")
    check_types(value)
    return value


def check_types(config: dict) -> None:
    """Each known field of the right JSON type (null allowed); unknown fields are ignored, as
    Pulsar's JSON reader ignores them. Raises InvalidFunctionError naming the field."""
    for key, value in config.items():
        if value is None or key not in FIELDS:
            continue
        if key in _STRINGS or key in _ENUMS:
            _expect(key, isinstance(value, str), "a string")
            if key in _ENUMS:
                _expect(key, value in _ENUMS[key], "one of " + ", ".join(_ENUMS[key]))
        elif key in _BOOLS:
            _expect(key, isinstance(value, bool), "true or false")
        elif key in _INTS:
            _expect(key, isinstance(value, int) and not isinstance(value, bool), "an integer")
        elif key == "inputs":
            _expect(key, isinstance(value, list) and all(isinstance(t, str) for t in value), "a list of topic names")
        elif key in _STRING_MAPS:
            _expect(key, isinstance(value, dict) and all(isinstance(v, str) for v in value.values()),
                    "a JSON object of strings")
        elif key in _OBJECT_MAPS or key in _OBJECTS:
            _expect(key, isinstance(value, dict), "a JSON object")
    for topic, spec in (config.get("inputSpecs") or {}).items():
        _expect(f"inputSpecs[{topic}]", isinstance(spec, dict), "a ConsumerConfig JSON object")
    for key in ("cpu", "ram", "disk"):
        amount = (config.get("resources") or {}).get(key)
        _expect(f"resources.{key}", amount is None or (isinstance(amount, (int, float)) and not isinstance(amount, bool)),
                "a number")


def _expect(key: str, ok: bool, what: str) -> None:
    if not ok:
        raise InvalidFunctionError(f"FunctionConfig field {key} must be {what}")


# ---- create ----------------------------------------------------------------------------------
def normalize(raw: dict, tenant: str, namespace: str, name: str) -> dict:
    """The stored FunctionConfig of a create request: the path's tenant, namespace and name win over
    the body's (as Pulsar's REST layer), missing values inferred, Pulsar's checks run."""
    config = {field: copy.deepcopy(raw.get(field)) for field in FIELDS}
    config.update(tenant=tenant, namespace=namespace, name=name)
    _infer_missing(config)
    validate(config)
    return stored_form(config)


def _infer_missing(config: dict) -> None:
    if config["parallelism"] is None:
        config["parallelism"] = 1
    if config["maxPendingAsyncRequests"] is None:
        config["maxPendingAsyncRequests"] = MAX_PENDING_ASYNC_REQUESTS
    if config["forwardSourceMessageProperty"] is None:
        config["forwardSourceMessageProperty"] = True
    if config["jar"] is not None:
        config["runtime"] = "JAVA"
    elif config["go"] is not None:
        config["runtime"] = "GO"
    elif config["runtime"] is None or config["py"] is not None:
        config["runtime"] = "PYTHON"


def validate(config: dict) -> None:
    """Pulsar's doCommonChecks for a Python function, and the runtime checks of this worker."""
    if config["runtime"] != "PYTHON":
        raise InvalidFunctionError(f"Function runtime {config['runtime']} is not supported: minipulsar runs "
                                   "Python functions only (--py)")
    for key, what in (("tenant", "tenant"), ("namespace", "namespace"), ("name", "name"),
                      ("className", "classname")):
        if not config[key]:
            raise InvalidFunctionError(f"Function {what} cannot be null")
    for key in ("tenant", "namespace", "name"):
        if not _NAME.fullmatch(config[key]) or config[key] in (".", ".."):
            raise InvalidFunctionError(f"Function {key} {config[key]!r} is invalid: letters, digits and -=:._ only")
    inputs = _all_inputs(config)
    if not inputs:
        raise InvalidFunctionError("No input topic(s) specified for the function")
    for topic in inputs:
        _topic(topic, "Input topic %s is invalid")
    if config["topicsPattern"]:
        _pattern(config["topicsPattern"])
    for key, message in (("output", "Output topic %s is invalid"), ("logTopic", "LogTopic topic %s is invalid"),
                         ("deadLetterTopic", "DeadLetter topic %s is invalid")):
        if config[key]:
            _topic(config[key], message)
    if config["parallelism"] <= 0:
        raise InvalidFunctionError("Function parallelism must be a positive number")
    if config["output"] and _topic(config["output"], "%s") in {_topic(t, "%s") for t in inputs}:
        raise InvalidFunctionError(f"Output topic {config['output']} is also being used as an input topic "
                                   "(topics must be one or the other)")
    if config["windowConfig"] is not None:
        raise InvalidFunctionError("There is currently no support windowing in python")
    _check_resources(config["resources"])
    _check_delivery(config)
    for spec in (config["inputSpecs"] or {}).values():
        _check_input_spec(spec)
    if config["outputSerdeClassName"] and config["outputSchemaType"]:
        raise InvalidFunctionError("Only one of outputSchemaType or outputSerdeClassName should be set")


def _check_delivery(config: dict) -> None:
    guarantees = config["processingGuarantees"] or "ATLEAST_ONCE"
    timeout, retries = config["timeoutMs"], config["maxMessageRetries"]
    if timeout is not None and timeout <= 0:
        raise InvalidFunctionError("Function timeout must be a positive number")
    if timeout is not None and config["processingGuarantees"] not in (None, "ATLEAST_ONCE"):
        raise InvalidFunctionError("Message timeout can only be specified with processing guarantee is ATLEAST_ONCE")
    if retries is not None and retries >= 0 and guarantees == "EFFECTIVELY_ONCE":
        raise InvalidFunctionError("MaxMessageRetries and Effectively once don't gel well")
    if (retries is None or retries < 0) and config["deadLetterTopic"]:
        raise InvalidFunctionError("Dead Letter Topic specified, however max retries is set to infinity")
    if config["retainKeyOrdering"] and guarantees == "EFFECTIVELY_ONCE":
        raise InvalidFunctionError("When effectively once processing guarantee is specified, retain Key ordering "
                                   "cannot be set")
    if config["retainKeyOrdering"] and config["retainOrdering"]:
        raise InvalidFunctionError("Only one of retain ordering or retain key ordering can be set")
    if config["autoAck"] is False and guarantees == "ATMOST_ONCE":
        raise InvalidFunctionError(ATMOST_ONCE_AUTO_ACK)


def _check_resources(resources: dict | None) -> None:
    """Pulsar's ResourceConfigUtils.validate (the values are recorded; instances are not limited)."""
    for key in ("cpu", "ram", "disk"):
        amount = (resources or {}).get(key)
        if amount is not None and amount <= 0:
            raise InvalidFunctionError(f"The {key} allocation for the function must be positive")


def _check_input_spec(spec: dict) -> None:
    if spec.get("schemaType") and spec.get("serdeClassName"):
        raise InvalidFunctionError("Only one of schemaType or serdeClassName should be set in inputSpec")
    size = spec.get("receiverQueueSize")
    if size is not None and (not isinstance(size, int) or size < 0):
        raise InvalidFunctionError("Receiver queue size should be >= zero")


def _topic(name: str, message: str) -> str:
    try:
        return full_topic_name(name)
    except ValueError:
        raise InvalidFunctionError(message % name) from None


def _pattern(pattern: str) -> str:
    full = _topic(pattern, "Input topic %s is invalid")
    try:
        re.compile(full)
    except re.error as exc:
        raise InvalidFunctionError(f"Input topic pattern {pattern} is not a valid regular expression: {exc}") from None
    return full


def _all_inputs(config: dict) -> list[str]:
    """Pulsar's collectAllInputTopics: inputs, the pattern, and the keys of the input maps."""
    found = list(config["inputs"] or [])
    for key in ("customSerdeInputs", "customSchemaInputs", "inputSpecs"):
        found.extend((config[key] or {}).keys())
    if config["topicsPattern"]:
        found.append(config["topicsPattern"])
    return found


# ---- the stored form -------------------------------------------------------------------------
def consumer_config(**values: Any) -> dict:
    """A ConsumerConfig with every field (Pulsar's defaults: empty property maps, false flags)."""
    spec = {field: None for field in CONSUMER_FIELDS}
    spec.update(isRegexPattern=False, schemaProperties={}, consumerProperties={}, poolMessages=False)
    spec.update(values)
    return spec


def stored_form(config: dict) -> dict:
    """convertFromDetails: the inputs folded into inputSpecs, defaults written out, topics in full."""
    stored = {field: None for field in FIELDS}
    for field in ("tenant", "namespace", "name", "className", "parallelism", "subName", "outputSerdeClassName",
                  "outputSchemaType", "producerConfig", "secrets", "runtimeFlags", "customRuntimeOptions",
                  "maxMessageRetries", "timeoutMs", "runtime", "inputTypeClassName", "outputTypeClassName",
                  "customSchemaOutputs", "batchBuilder", "maxPendingAsyncRequests", "forwardSourceMessageProperty",
                  "logLevel"):
        stored[field] = copy.deepcopy(config[field])
    stored["inputSpecs"] = _input_specs(config)
    stored["processingGuarantees"] = config["processingGuarantees"] or "ATLEAST_ONCE"
    stored["retainOrdering"] = bool(config["retainOrdering"])
    stored["retainKeyOrdering"] = bool(config["retainKeyOrdering"])
    stored["autoAck"] = True if config["autoAck"] is None else config["autoAck"]
    stored["cleanupSubscription"] = True if config["cleanupSubscription"] is None else config["cleanupSubscription"]
    stored["subscriptionPosition"] = config["subscriptionPosition"] or "Latest"
    stored["userConfig"] = copy.deepcopy(config["userConfig"]) or {}
    stored["resources"] = {**DEFAULT_RESOURCES, **{k: v for k, v in (config["resources"] or {}).items()
                                                    if k in DEFAULT_RESOURCES and v is not None}}
    for field in ("output", "logTopic", "deadLetterTopic"):
        stored[field] = full_topic_name(config[field]) if config[field] else None
    if stored["maxMessageRetries"] is not None and stored["maxMessageRetries"] < 0:
        stored["maxMessageRetries"] = None  # negative means "no retry policy", as Pulsar converts it
    return stored


def _input_specs(config: dict) -> dict[str, dict]:
    specs: dict[str, dict] = {}
    for topic in config["inputs"] or []:
        specs[full_topic_name(topic)] = consumer_config()
    for topic, serde in (config["customSerdeInputs"] or {}).items():
        specs[full_topic_name(topic)] = consumer_config(serdeClassName=serde or None)
    for topic, schema in (config["customSchemaInputs"] or {}).items():
        specs[full_topic_name(topic)] = consumer_config(schemaType=schema or None)
    if config["topicsPattern"]:
        specs[_pattern(config["topicsPattern"])] = consumer_config(isRegexPattern=True)
    for topic, spec in (config["inputSpecs"] or {}).items():
        regex = bool(spec.get("isRegexPattern", spec.get("regexPattern", False)))
        values = {k: copy.deepcopy(v) for k, v in spec.items() if k in CONSUMER_FIELDS and v is not None}
        values["isRegexPattern"] = regex
        specs[_pattern(topic) if regex else full_topic_name(topic)] = consumer_config(**values)
    return specs


# ---- update ----------------------------------------------------------------------------------
def merge_update(existing: dict, raw: dict) -> dict:
    """Pulsar's validateUpdate over a stored config: the fields that may change are replaced when
    given, the others must stay as they are. Returns the new stored config; raises
    InvalidFunctionError ("Input Topics cannot be altered", "Processing Guarantees cannot be
    altered", ..., "Update contains no change")."""
    new = {field: copy.deepcopy(raw.get(field)) for field in FIELDS}
    for key, what in (("tenant", "Tenants"), ("namespace", "Namespaces"), ("name", "Function Names")):
        if new[key] is not None and new[key] != existing[key]:
            raise InvalidFunctionError(f"{what} differ")
    merged = copy.deepcopy(existing)
    for field in ("className", "logTopic", "output", "deadLetterTopic", "runtimeFlags", "customRuntimeOptions"):
        if new[field]:
            merged[field] = full_topic_name(new[field]) if field in ("logTopic", "output", "deadLetterTopic") \
                else new[field]
    for field in ("userConfig", "secrets", "maxMessageRetries", "parallelism", "timeoutMs", "cleanupSubscription",
                  "producerConfig"):
        if new[field] is not None:
            merged[field] = new[field]
    if new["resources"] is not None:
        merged["resources"] = {**existing["resources"],
                               **{k: v for k, v in new["resources"].items() if k in DEFAULT_RESOURCES and v is not None}}
    _check_unaltered(existing, new)
    _merge_inputs(existing, new, merged)
    revalidated = {**merged, "inputs": None, "topicsPattern": None, "customSerdeInputs": None,
                   "customSchemaInputs": None, "jar": None, "go": None, "py": None, "windowConfig": None}
    revalidated["inputSpecs"] = {topic: dict(spec) for topic, spec in merged["inputSpecs"].items()}
    validate(revalidated)
    return merged


def _check_unaltered(existing: dict, new: dict) -> None:
    for field, message in (("outputSerdeClassName", "Output Serde mismatch"),
                           ("outputSchemaType", "Output Schema mismatch"), ("subName", "Subscription Name cannot be altered")):
        if new[field] and new[field] != existing[field]:
            raise InvalidFunctionError(message)
    for field, message in (("processingGuarantees", "Processing Guarantees cannot be altered"),
                           ("retainOrdering", "Retain Ordering cannot be altered"),
                           ("retainKeyOrdering", "Retain Key Ordering cannot be altered"),
                           ("runtime", "Runtime cannot be altered"), ("autoAck", "AutoAck cannot be altered")):
        if new[field] is not None and new[field] != existing[field]:
            raise InvalidFunctionError(message)


def _merge_inputs(existing: dict, new: dict, merged: dict) -> None:
    """Inputs may be re-specified (serde, queue size) but not added, removed or made patterns."""
    given = _input_specs({**new, "inputSpecs": new["inputSpecs"]})
    for topic, spec in given.items():
        if topic not in existing["inputSpecs"]:
            raise InvalidFunctionError("Input Topics cannot be altered")
        if spec["isRegexPattern"] != existing["inputSpecs"][topic]["isRegexPattern"]:
            raise InvalidFunctionError(f"isRegexPattern for input topic {topic} cannot be altered")
        merged["inputSpecs"][topic] = spec
