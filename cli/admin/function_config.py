"""The FunctionConfig flags of `minipulsar admin functions create|update|localrun`, read as
pulsar-admin's CmdFunctions.FunctionDetailsCommand reads them: a --function-config-file (YAML or
JSON) first, then each flag over it; JSON-valued flags (--user-config, --custom-serde-inputs,
--input-specs, --secrets, --producer-config, ...) parsed as JSON; -i/--inputs split on commas.
The --fqfn / --tenant / --namespace / --name rules are Pulsar's: FQFN or the three, tenant and
namespace defaulting to public/default and the name to the last part of --classname. Deprecated
camelCase flags (--className, --functionConfigFile, ...) are accepted as pulsar-admin's are.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from urllib.parse import urlparse

from minipulsar.cli.runtime import UsageError

GUARANTEES = ("ATLEAST_ONCE", "ATMOST_ONCE", "EFFECTIVELY_ONCE", "MANUAL")
PACKAGE_URL_SCHEMES = ("http", "https", "file", "function")
# flag destination -> FunctionConfig field, for the plain string and number flags
_DIRECT = {"class_name": "className", "topics_pattern": "topicsPattern", "output": "output",
           "log_topic": "logTopic", "output_serde_classname": "outputSerdeClassName",
           "processing_guarantees": "processingGuarantees", "batch_builder": "batchBuilder",
           "subs_name": "subName", "subs_position": "subscriptionPosition", "parallelism": "parallelism",
           "timeout_ms": "timeoutMs", "max_message_retries": "maxMessageRetries",
           "custom_runtime_options": "customRuntimeOptions", "dead_letter_topic": "deadLetterTopic",
           "py": "py", "jar": "jar", "go": "go", "auto_ack": "autoAck", "retain_ordering": "retainOrdering",
           "retain_key_ordering": "retainKeyOrdering", "forward_source_message_property": "forwardSourceMessageProperty"}
# flag destination -> FunctionConfig field, for the flags that take JSON
_JSON = {"user_config": "userConfig", "custom_serde_inputs": "customSerdeInputs",
         "custom_schema_inputs": "customSchemaInputs", "custom_schema_outputs": "customSchemaOutputs",
         "input_specs": "inputSpecs", "producer_config": "producerConfig", "secrets": "secrets"}


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() == "true"


def add_identity_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fqfn", help="The Fully Qualified Function Name (FQFN) for the function")
    parser.add_argument("--tenant", help="The tenant of a Pulsar Function")
    parser.add_argument("--namespace", help="The namespace of a Pulsar Function")
    parser.add_argument("--name", help="The name of a Pulsar Function")


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """Every flag of pulsar-admin's FunctionDetailsCommand that applies to Python functions."""
    add_identity_flags(parser)
    add = parser.add_argument
    add("--classname", "--className", dest="class_name", help="The class name of a Pulsar Function")
    add("--py", help="Path to the main Python file, .zip or Python Wheel file for the function; or a "
                     "file:/http:/https: URL the worker reads")
    add("--jar", help=argparse.SUPPRESS)
    add("--go", help=argparse.SUPPRESS)
    add("-i", "--inputs", help="The input topic or topics (comma-separated) of a Pulsar Function")
    add("--topics-pattern", "--topicsPattern", dest="topics_pattern",
        help="The topic pattern to consume from (all the namespace's topics that match)")
    add("-o", "--output", help="The output topic of a Pulsar Function (none: no output is written)")
    add("--producer-config", help="The custom producer configuration (as a JSON string)")
    add("--log-topic", "--logTopic", dest="log_topic", help="The topic the function's logs are produced to")
    add("-st", "--schema-type", default="", help="The builtin schema type (string, json, avro) or custom schema "
                                                 "class name of the output")
    add("--custom-serde-inputs", "--customSerdeInputs", dest="custom_serde_inputs",
        help="The map of input topics to SerDe class names (as a JSON string)")
    add("--custom-schema-inputs", help="The map of input topics to Schema types (as a JSON string)")
    add("--custom-schema-outputs", help="The map of output topics to Schema properties (as a JSON string)")
    add("--input-specs", help="The map of inputs to their ConsumerConfig (as a JSON string)")
    add("--output-serde-classname", "--outputSerdeClassName", dest="output_serde_classname",
        help="The SerDe class of the function's output")
    add("--function-config-file", "--functionConfigFile", dest="function_config_file",
        help="The path to a YAML (or JSON) file with the FunctionConfig")
    add("--processing-guarantees", "--processingGuarantees", dest="processing_guarantees", choices=GUARANTEES,
        help="The processing guarantees (delivery semantics) applied to the function")
    add("--user-config", "--userConfig", dest="user_config", help="User-defined config key/values (JSON)")
    add("--retain-ordering", "--retainOrdering", dest="retain_ordering", action="store_const", const=True,
        help="Function consumes and processes messages in order")
    add("--retain-key-ordering", dest="retain_key_ordering", action="store_const", const=True,
        help="Function consumes and processes messages in key order")
    add("--batch-builder", help="DEFAULT or KEY_BASED")
    add("--forward-source-message-property", type=_boolean, metavar="true|false",
        help="Forward the input's properties to the output")
    add("--subs-name", help="The input consumers' subscription name")
    add("--subs-position", choices=("Latest", "Earliest"), help="Where a new subscription starts")
    add("--parallelism", type=int, help="The number of function instances to run")
    add("--cpu", type=float, help="The cpu in cores per instance (recorded)")
    add("--ram", type=int, help="The ram in bytes per instance (recorded)")
    add("--disk", type=int, help="The disk in bytes per instance (recorded)")
    for flag in ("--window-length-count", "--window-length-duration-ms", "--sliding-interval-count",
                 "--sliding-interval-duration-ms"):
        add(flag, type=int, help="Windowing (refused for Python functions, as Pulsar)")
    add("--auto-ack", "--autoAck", dest="auto_ack", type=_boolean, metavar="true|false",
        help="Whether the framework acknowledges messages automatically")
    add("--timeout-ms", "--timeoutMs", dest="timeout_ms", type=int, help="The message timeout in milliseconds")
    add("--max-message-retries", type=int, help="How many times to try to process a message before giving up")
    add("--custom-runtime-options", help="Options for the runtime (recorded)")
    add("--secrets", help="The map of secretName to its value (JSON)")
    add("--dead-letter-topic", help="The topic where messages that are not processed successfully are sent")


def function_config(args: argparse.Namespace) -> dict:
    """The FunctionConfig the flags describe; UsageError for a flag Pulsar would refuse."""
    config = _load_file(args.function_config_file) if args.function_config_file else {}
    _identity(args, config)
    if args.inputs is not None:
        config["inputs"] = [t for t in args.inputs.split(",") if t]
    for dest, key in _DIRECT.items():
        if getattr(args, dest, None) is not None:
            config[key] = getattr(args, dest)
    if args.schema_type:
        config["outputSchemaType"] = args.schema_type
    for dest, key in _JSON.items():
        if getattr(args, dest, None) is not None:
            config[key] = _json(getattr(args, dest), "--" + dest.replace("_", "-"))
    resources = dict(config.get("resources") or {})
    for key in ("cpu", "ram", "disk"):
        if getattr(args, key) is not None:
            resources[key] = getattr(args, key)
    if resources:
        config["resources"] = resources
    window = {key: getattr(args, dest) for dest, key in (
        ("window_length_count", "windowLengthCount"), ("window_length_duration_ms", "windowLengthDurationMs"),
        ("sliding_interval_count", "slidingIntervalCount"), ("sliding_interval_duration_ms", "slidingIntervalDurationMs"))
        if getattr(args, dest) is not None}
    if window:
        config["windowConfig"] = window
    return config


def _identity(args: argparse.Namespace, config: dict) -> None:
    if args.fqfn is not None:
        if any(v is not None for v in (args.tenant, args.namespace, args.name)):
            raise UsageError("You must specify either a Fully Qualified Function Name (FQFN) or tenant, namespace, "
                             "and function name")
        parts = args.fqfn.split("/")
        if len(parts) != 3:
            raise UsageError("Fully qualified function names (FQFNs) must be of the form tenant/namespace/name")
        config.update(tenant=parts[0], namespace=parts[1], name=parts[2])
        return
    for key in ("tenant", "namespace", "name"):
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)


def infer_identity(config: dict, require_class: bool) -> None:
    """Pulsar's inferMissingFunctionName / Tenant / Namespace; UsageError without a name to infer."""
    class_name = config.get("className") or ""
    if not class_name and require_class:
        raise UsageError("No Function Classname specified")
    if not config.get("name"):
        if not class_name:
            raise UsageError("Function Name not provided")
        config["name"] = class_name.split(".")[-1]
    if not config.get("tenant"):
        config["tenant"] = "public"
    if not config.get("namespace"):
        config["namespace"] = "default"


def package_source(config: dict, required: bool) -> tuple[str | None, str | None]:
    """(file to upload, URL the worker reads) of config's py; UsageError as pulsar-admin's checks."""
    if config.get("jar") or config.get("go"):
        raise UsageError("minipulsar runs Python functions only: use --py")
    py = config.get("py")
    if not py:
        if required:
            raise UsageError("Either a Java jar or a Python file or a Go executable binary needs to be specified "
                             "for the function. Please specify one.")
        return None, None
    if urlparse(py).scheme in PACKAGE_URL_SCHEMES:
        return None, py
    if not Path(py).is_file():
        raise UsageError("The specified python file does not exist")
    return py, None


def _json(text: str, flag: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{flag} is not valid JSON: {exc}") from None


def _load_file(path: str) -> dict:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        import yaml  # the `functions` extra; JSON files are read without it
    except ImportError:
        yaml = None
    if yaml is None:
        loaded = _json(text, "--function-config-file")
    else:
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(loaded, dict):
        raise UsageError(f"{path} must hold a FunctionConfig mapping")
    return loaded
