"""ContextImpl: the `context` a function's process(input, context) receives, implementing the
official package's abstract pulsar.functions.context.Context (pulsar-client), with the meanings of
Pulsar's Python instance (contextimpl.ContextImpl):

- the current message: get_message_id, get_message_key and get_partition_key (its partition key),
  get_ordering_key, get_message_eventtime, get_message_properties,
  get_current_message_topic_name (the partition's name for a partitioned input);
- the function: get_function_tenant / namespace / name, get_function_id, get_function_version and
  get_instance_id (strings, as Pulsar's Python runtime passes them), get_input_topics,
  get_output_topic, get_output_serde_class_name, get_user_config_value / map, get_secret (the
  value in `secrets`, as Pulsar's ClearTextSecretsProvider), get_logger;
- actions: publish (a producer per topic, batched, sent asynchronously; failures count as system
  exceptions), ack(message_id, topic) (for MANUAL or autoAck=false), record_metric;
- state (minipulsar.functions.state, the function's durable table): incr_counter, get_counter
  (None for a key never incremented), del_counter, put_state (str or bytes), get_state (bytes or
  None).
"""
from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any, Callable

from minipulsar.functions.instance.loader import load_serde
from minipulsar.functions.instance.stats import InstanceStats
from minipulsar.functions.spec import InstanceSpec
from minipulsar.functions.state import StateTable, state_path
from minipulsar.proto.topic_name import partitioned_base

try:  # the official package's abstract Context, when installed (the pulsar-client package)
    from pulsar.functions.context import Context as _ContextBase
except ImportError:  # the plain-function form runs without it
    _ContextBase = object

log = logging.getLogger(__name__)


class ContextImpl(_ContextBase):
    """spec: the instance's InstanceSpec; client: its pulsar.Client; consumer_for(topic): the input
    consumer of a topic (None if it is not an input); producer_options: what publish's producers
    are created with; stats: the instance's counters; logger: get_logger()'s answer."""

    def __init__(self, spec: InstanceSpec, client: Any, consumer_for: Callable[[str], Any],
                 producer_options: dict, stats: InstanceStats, logger: logging.Logger):
        self._spec = spec
        self._config = spec.config
        self._client = client
        self._consumer_for = consumer_for
        self._producer_options = producer_options
        self._stats = stats
        self._logger = logger
        self._producers: dict[str, Any] = {}
        self._serdes: dict[str, Any] = {}
        self._table: StateTable | None = None
        self.message: Any = None

    # ---- the current message -----------------------------------------------------------
    def set_message(self, message: Any) -> None:
        self.message = message

    def get_message_id(self):
        return self.message.message_id()

    def get_message_key(self):
        return self.message.partition_key()

    def get_partition_key(self):
        return self.message.partition_key()

    def get_ordering_key(self):
        return self.message.ordering_key()

    def get_message_eventtime(self):
        return self.message.event_timestamp()

    def get_message_properties(self):
        return self.message.properties()

    def get_current_message_topic_name(self):
        return self.message.topic_name()

    # ---- the function ------------------------------------------------------------------
    def get_function_tenant(self):
        return self._config["tenant"]

    def get_function_namespace(self):
        return self._config["namespace"]

    def get_function_name(self):
        return self._config["name"]

    def get_function_id(self):
        return self._spec.function_id

    def get_function_version(self):
        return str(self._spec.function_version)

    def get_instance_id(self):
        return str(self._spec.instance_id)

    def get_logger(self):
        return self._logger

    def get_user_config_value(self, key):
        return (self._config.get("userConfig") or {}).get(key)

    def get_user_config_map(self):
        return dict(self._config.get("userConfig") or {})

    def get_secret(self, secret_name):
        return (self._config.get("secrets") or {}).get(secret_name)

    def get_input_topics(self):
        return list(self._config["inputSpecs"])

    def get_output_topic(self):
        return self._config.get("output")

    def get_output_serde_class_name(self):
        return self._config.get("outputSerdeClassName")

    def record_metric(self, metric_name, metric_value):
        self._stats.record_metric(metric_name, metric_value)

    # ---- actions -----------------------------------------------------------------------
    def publish(self, topic_name, message, serde_class_name="serde.IdentitySerDe", properties=None,
                compression_type=None, callback=None, message_conf=None):
        """Serialize message with the SerDe class and send it to topic_name asynchronously;
        callback(result, message_id) when the broker answers."""
        topic_name = str(topic_name)
        producer = self._producers.get(topic_name)
        if producer is None:
            options = dict(self._producer_options)
            if compression_type is not None:
                options["compression_type"] = compression_type
            producer = self._producers[topic_name] = self._client.create_producer(topic_name, **options)
        serde = self._serdes.get(serde_class_name)
        if serde is None:
            serde = self._serdes[serde_class_name] = load_serde(serde_class_name)
        conf = dict(message_conf or {})
        if properties:
            conf["properties"] = properties
        producer.send_async(bytes(serde.serialize(message)),
                            functools.partial(self._published, callback, topic_name), **conf)

    def _published(self, callback, topic: str, result, message_id) -> None:
        if str(result) != "Ok":
            self._stats.system_exception(f"Failed to publish to topic [{topic}] with error [{result}]")
        if callback is not None:
            callback(result, message_id)

    def ack(self, msgid, topic):
        consumer = self._consumer_for(str(topic)) or self._consumer_for(partitioned_base(str(topic)))
        if consumer is None:
            raise ValueError(f"Invalid topicname {topic}")
        consumer.acknowledge(msgid)

    def flush(self) -> None:
        """Wait for what publish sent (on shutdown)."""
        for producer in self._producers.values():
            producer.flush()

    # ---- state -------------------------------------------------------------------------
    def _state(self) -> StateTable:
        if self._table is None:
            self._table = StateTable(state_path(Path(self._spec.state_dir), self._spec.fqfn))
        return self._table

    def incr_counter(self, key, amount):
        self._state().incr(str(key), int(amount))

    def get_counter(self, key):
        entry = self._state().get(str(key))
        return entry.number if entry is not None else None

    def del_counter(self, key):
        self._state().delete(str(key))

    def put_state(self, key, value):
        self._state().put(str(key), value.encode("utf-8") if isinstance(value, str) else bytes(value))

    def get_state(self, key):
        entry = self._state().get(str(key))
        return entry.value if entry is not None else None

    def close(self) -> None:
        if self._table is not None:
            self._table.close()
