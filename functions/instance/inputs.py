"""The input side of an instance: its consumers on the function's subscription, and the messages
they receive, each with how to decode it (its topic's SerDe, or the consumer's schema).

The input topics without a schema share one multi-topic consumer; a topic pattern and each input
schema get a consumer of their own (a consumer has one schema). With one consumer the loop calls
its receive(); with several, each delivers through a message listener into a queue of one, so the
client's listener thread waits while the function works, as Pulsar's Python instance does.
"""
from __future__ import annotations

import queue
import re
from dataclasses import dataclass
from typing import Any

import pulsar

from minipulsar.functions.instance.loader import load_schema, load_serde
from minipulsar.functions.spec import InstanceSpec
from minipulsar.proto.topic_name import partitioned_base

ACK_TIMEOUT_MIN_MS = 10_000  # the official client refuses a shorter unacked-message timeout
CONSUMER_TYPES = {"Shared": pulsar.ConsumerType.Shared, "Failover": pulsar.ConsumerType.Failover,
                  "KeyShared": pulsar.ConsumerType.KeyShared}


def subscription_name(config: dict) -> str:
    """subName, else Pulsar's default `{tenant}/{namespace}/{name}`."""
    return (config.get("subName") or "").strip() or f"{config['tenant']}/{config['namespace']}/{config['name']}"


def subscription_type(config: dict) -> str:
    """Failover with retainOrdering or EFFECTIVELY_ONCE, KeyShared with retainKeyOrdering, else Shared."""
    if config.get("retainOrdering") or config.get("processingGuarantees") == "EFFECTIVELY_ONCE":
        return "Failover"
    return "KeyShared" if config.get("retainKeyOrdering") else "Shared"


@dataclass
class Received:
    """A message and the consumer it came from. topic: its topic (a partition's own name)."""

    consumer: Any
    message: Any
    topic: str
    serde: Any  # None: the consumer's schema decodes it

    def decode(self) -> Any:
        return self.message.value() if self.serde is None else self.serde.deserialize(self.message.data())


@dataclass
class _Group:
    """Input topics subscribed by one consumer: their specs, the schema, whether a pattern."""

    topics: list[str]
    specs: dict[str, dict]
    schema: Any
    pattern: bool = False
    consumer: Any = None


class Inputs:
    """The consumers of spec's function; subscribe() before receive()."""

    def __init__(self, spec: InstanceSpec, client: Any):
        self.spec = spec
        self.config = spec.config
        self.client = client
        self.properties = {"application": "pulsar-function", "id": spec.fqfn, "instance_id": str(spec.instance_id)}
        self.groups = self._groups()
        self._serdes = {topic: None if grp.schema is not None else load_serde(grp.specs[topic].get("serdeClassName"))
                        for grp in self.groups for topic in grp.topics}
        self._queue: queue.Queue | None = None
        self._closing = False

    def _groups(self) -> list[_Group]:
        plain: dict[str, dict] = {}
        by_schema: dict[str, dict[str, dict]] = {}
        groups = []
        for topic, spec in self.config["inputSpecs"].items():
            if spec.get("isRegexPattern"):
                groups.append(_Group([topic], {topic: spec}, self._schema(spec), pattern=True))
            elif spec.get("schemaType"):
                by_schema.setdefault(spec["schemaType"], {})[topic] = spec
            else:
                plain[topic] = spec
        if plain:
            groups.insert(0, _Group(list(plain), plain, None))
        for specs in by_schema.values():
            first = next(iter(specs.values()))
            groups.append(_Group(list(specs), specs, self._schema(first)))
        return groups

    def _schema(self, spec: dict) -> Any:
        return load_schema(spec.get("schemaType"), self.config.get("inputTypeClassName"), spec.get("schemaProperties"))

    def subscribe(self) -> None:
        """Subscribe every group (raises the client's exception when the broker refuses)."""
        if len(self.groups) > 1:
            self._queue = queue.Queue(maxsize=1)
        for group in self.groups:
            group.consumer = self.client.subscribe(
                re.compile(group.topics[0]) if group.pattern else group.topics, subscription_name(self.config),
                **self._options(group))

    def _options(self, group: _Group) -> dict:
        config = self.config
        options: dict[str, Any] = {
            "consumer_type": CONSUMER_TYPES[subscription_type(config)],
            "initial_position": (pulsar.InitialPosition.Earliest if config.get("subscriptionPosition") == "Earliest"
                                 else pulsar.InitialPosition.Latest),
            "negative_ack_redelivery_delay_ms": self.spec.negative_ack_redelivery_delay_ms,
            "properties": self.properties}
        if group.schema is not None:
            options["schema"] = group.schema
        sizes = [s["receiverQueueSize"] for s in group.specs.values() if s.get("receiverQueueSize") is not None]
        if sizes:
            options["receiver_queue_size"] = min(sizes)
        if config.get("timeoutMs"):
            options["unacked_messages_timeout_ms"] = max(config["timeoutMs"], ACK_TIMEOUT_MIN_MS)
        if config.get("maxMessageRetries") is not None:
            options["dead_letter_policy"] = pulsar.ConsumerDeadLetterPolicy(
                max_redeliver_count=config["maxMessageRetries"], dead_letter_topic=config.get("deadLetterTopic"))
        if self._queue is not None:
            options["message_listener"] = self._listen
        return options

    def _listen(self, consumer: Any, message: Any) -> None:
        """The client's listener thread: wait for the loop to take the message; once closing, drop
        it unacknowledged (the broker gives it to another consumer)."""
        while not self._closing:
            try:
                self._queue.put((consumer, message), timeout=0.1)
                return
            except queue.Full:
                continue

    def receive(self, timeout_millis: int) -> Received | None:
        """The next message, or None after timeout_millis without one."""
        if self._queue is None:
            consumer = self.groups[0].consumer
            try:
                message = consumer.receive(timeout_millis)
            except pulsar.Timeout:
                return None
        else:
            try:
                consumer, message = self._queue.get(timeout=timeout_millis / 1000)
            except queue.Empty:
                return None
        topic = message.topic_name()
        return Received(consumer, message, topic, self.serde_for(topic))

    def serde_for(self, topic: str) -> Any:
        """The SerDe of a topic's input spec (a partition's partitioned topic, a pattern's match)."""
        for name in (topic, partitioned_base(topic)):
            if name in self._serdes:
                return self._serdes[name]
        for group in self.groups:
            if group.pattern and re.fullmatch(group.topics[0], partitioned_base(topic)):
                return self._serdes[group.topics[0]]
        return load_serde(None)

    def consumer_for(self, topic: str) -> Any:
        """The consumer a topic's messages come from (Context.ack), None if it is no input."""
        for group in self.groups:
            if topic in group.topics or (group.pattern and re.fullmatch(group.topics[0], topic)):
                return group.consumer
        return None

    def close(self) -> None:
        self._closing = True
        for group in self.groups:
            if group.consumer is not None:
                try:
                    group.consumer.close()
                except Exception:  # noqa: BLE001 - the broker may be gone; the close is best effort
                    pass
