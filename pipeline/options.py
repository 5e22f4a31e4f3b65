"""The options of the "pulsar" format, named as Apache Pulsar's Spark connector names them.

Source options:

| option | meaning | default |
|---|---|---|
| ``service.url`` | ``pulsar://host:port`` of the broker (required) | — |
| ``topic`` / ``topics`` | one topic / a comma-separated list (exactly one of these) | — |
| ``topicsPattern`` | a regex over the topics of one namespace, matched again at every trigger | — |
| ``startingOffsets`` | ``earliest``, ``latest`` or JSON per topic partition (pipeline.offsets) | batch ``earliest``, stream ``latest`` |
| ``endingOffsets`` | batch only: ``latest`` or JSON per topic partition | ``latest`` |
| ``startingTime`` | publish time in ms since the epoch; reading starts at the first message published at or after it (overrides ``startingOffsets``) | — |
| ``maxEntriesPerTrigger`` | streaming: at most this many entries per micro-batch, over all partitions | no limit |
| ``failOnDataLoss`` | fail when messages of a range are gone; else log a warning and go on | ``true`` |
| ``minPartitions`` | batch and stream: split ranges until at least this many Spark partitions (Kafka's name; Pulsar's connector has none) | ``1`` |
| ``admin.url`` | ``http://host:port`` of the broker's admin REST API; when given, ranges are cut into equal entry counts from each ledger's size (pipeline.planning) | — |
| ``pollTimeoutMs`` | how long a reader waits for the next message before checking whether the topic still has it | ``5000`` |
| ``operationTimeoutSeconds`` | the bundled client's operation timeout | ``30`` |

Sink options: ``service.url``, ``topic`` (overrides a ``topic`` column),
``pulsar.producer.batchingEnabled`` (``true``), ``pulsar.producer.batchingMaxPublishDelayMs``
(``10``), ``pulsar.producer.maxPendingMessages`` (``10000``).

Option names are case-insensitive (Spark lower-cases them); values are strings.
"""
from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Mapping

from minipulsar.client.topic_name import normalize

from minipulsar.pipeline.errors import PulsarOptionError
from minipulsar.pipeline.offsets import Position, parse_offsets_option


def _get(options: Mapping[str, str], name: str) -> str | None:
    lowered = {k.lower(): v for k, v in options.items()}
    value = lowered.get(name.lower())
    return None if value is None else str(value)


def _bool(name: str, value: str | None, default: bool) -> bool:
    if value is None:
        return default
    if value.strip().lower() in ("true", "1", "yes"):
        return True
    if value.strip().lower() in ("false", "0", "no"):
        return False
    raise PulsarOptionError(f"{name}: expected true or false, got {value!r}")


def _int(name: str, value: str | None, default: int | None, minimum: int = 0) -> int | None:
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError as exc:
        raise PulsarOptionError(f"{name}: expected an integer, got {value!r}") from exc
    if number < minimum:
        raise PulsarOptionError(f"{name}: must be at least {minimum}, got {number}")
    return number


def service_url(options: Mapping[str, str]) -> str:
    url = _get(options, "service.url")
    if not url:
        raise PulsarOptionError("service.url is required, e.g. pulsar://127.0.0.1:6650")
    return url


def _check_pattern(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise PulsarOptionError(f"topicsPattern: not a regular expression: {exc}") from None


@dataclass(frozen=True)
class SourceOptions:
    """Parsed source options; topics are fully qualified (not yet expanded into partitions)."""

    service_url: str
    topics: tuple[str, ...]
    topics_pattern: str | None
    starting_offsets: str | dict[str, Position | str] | None
    ending_offsets: str | dict[str, Position | str]
    starting_time: int | None
    max_entries_per_trigger: int | None
    fail_on_data_loss: bool
    min_partitions: int
    poll_timeout_ms: int
    operation_timeout_seconds: int
    admin_url: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SourceOptions":
        """Raises PulsarOptionError naming the offending option."""
        topic, topics, pattern = (_get(options, n) for n in ("topic", "topics", "topicsPattern"))
        given = [n for n, v in (("topic", topic), ("topics", topics), ("topicsPattern", pattern)) if v]
        if len(given) != 1:
            raise PulsarOptionError(f"exactly one of topic, topics, topicsPattern is required, got {given or 'none'}")
        if pattern:
            _check_pattern(pattern)
        names = [topic] if topic else [t.strip() for t in topics.split(",") if t.strip()] if topics else []
        try:
            qualified = tuple(dict.fromkeys(normalize(n) for n in names))
        except Exception as exc:  # noqa: BLE001 - InvalidTopicName
            raise PulsarOptionError(f"bad topic name: {exc}") from exc
        starting = _get(options, "startingOffsets")
        ending = _get(options, "endingOffsets")
        ending_parsed = parse_offsets_option("endingOffsets", ending) if ending else "latest"
        if ending_parsed == "earliest":
            raise PulsarOptionError("endingOffsets: 'earliest' is not allowed")
        return cls(
            service_url=service_url(options),
            topics=qualified,
            topics_pattern=pattern or None,
            starting_offsets=parse_offsets_option("startingOffsets", starting) if starting else None,
            ending_offsets=ending_parsed,
            starting_time=_int("startingTime", _get(options, "startingTime"), None),
            max_entries_per_trigger=_int("maxEntriesPerTrigger", _get(options, "maxEntriesPerTrigger"), None, 1),
            fail_on_data_loss=_bool("failOnDataLoss", _get(options, "failOnDataLoss"), True),
            min_partitions=_int("minPartitions", _get(options, "minPartitions"), 1, 1),
            poll_timeout_ms=_int("pollTimeoutMs", _get(options, "pollTimeoutMs"), 5000, 1),
            operation_timeout_seconds=_int("operationTimeoutSeconds", _get(options, "operationTimeoutSeconds"), 30, 1),
            admin_url=_admin_url(_get(options, "admin.url")),
        )


def _admin_url(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.startswith(("http://", "https://")):
        raise PulsarOptionError(f"admin.url: expected http://host:port, got {value!r}")
    return value


@dataclass(frozen=True)
class SinkOptions:
    """Parsed sink options; topic None means every row names its topic in a `topic` column."""

    service_url: str
    topic: str | None
    batching_enabled: bool
    batching_max_publish_delay_ms: int
    max_pending_messages: int
    operation_timeout_seconds: int

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SinkOptions":
        """Raises PulsarOptionError naming the offending option."""
        topic = _get(options, "topic")
        if _get(options, "topics") or _get(options, "topicsPattern"):
            raise PulsarOptionError("the sink takes `topic` (or a topic column), not topics/topicsPattern")
        return cls(
            service_url=service_url(options),
            topic=normalize(topic) if topic else None,
            batching_enabled=_bool("pulsar.producer.batchingEnabled", _get(options, "pulsar.producer.batchingEnabled"), True),
            batching_max_publish_delay_ms=_int("pulsar.producer.batchingMaxPublishDelayMs",
                                               _get(options, "pulsar.producer.batchingMaxPublishDelayMs"), 10),
            max_pending_messages=_int("pulsar.producer.maxPendingMessages",
                                      _get(options, "pulsar.producer.maxPendingMessages"), 10000, 1),
            operation_timeout_seconds=_int("operationTimeoutSeconds", _get(options, "operationTimeoutSeconds"), 30, 1),
        )
