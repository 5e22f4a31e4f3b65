"""The schema registry: per topic, a list of schema versions, with Pulsar's compatibility strategies.

A schema is identified as Pulsar does by the topic's schema name: "tenant/namespace/local-name"
of the partitioned topic (all partitions share one schema). Versions are numbered 0, 1, 2, ...;
on the wire a version is 8 bytes big-endian (PRODUCER_SUCCESS.schema_version, GET_SCHEMA).

* PRODUCER with a schema: a schema identical (type, data, properties) to an existing version gets
  that version; otherwise it must be compatible with the existing versions under
  `schemaCompatibilityStrategy` (default FULL) and becomes the next version; else the producer
  gets ERROR IncompatibleSchema. A producer without a schema (the Python default, bytes) is
  accepted and gets no schema version (Pulsar's schemaValidationEnforced=false).
* SUBSCRIBE with a schema: checked for compatibility; stored only when the topic has no schema
  and is idle (no producers, no entries), as Pulsar's addSchemaIfIdleOrCheckCompatible.
* GET_SCHEMA: the latest version or the one asked for; none: TopicNotFound "Topic not found or
  no-schema", as Pulsar answers.
* Deletion (the admin API) appends a tombstone version, as Pulsar's deleteSchema: the versions up
  to it are gone for every purpose (lookups, identity, compatibility; Pulsar's
  trimDeletedSchemaAndGetList), while numbering goes on after it, so a version number never
  names two schemas. A forced deletion removes the topic's entries outright.

Strategies (Pulsar SchemaCompatibilityStrategy): ALWAYS_COMPATIBLE, ALWAYS_INCOMPATIBLE, BACKWARD
(the new schema reads data written with the latest), FORWARD (the latest reads data written with
the new one), FULL (both), and *_TRANSITIVE (against every version, not only the latest). A change
of schema type is incompatible except under ALWAYS_COMPATIBLE. AVRO, JSON and PROTOBUF schemas are
Avro definitions (the clients send Avro JSON for all three) and are checked with Apache Avro's
ReaderWriterCompatibilityChecker; other types (STRING, KEY_VALUE, PROTOBUF_NATIVE, primitives)
are compatible with the same type.
Persisted in <dataDir>/metadata/schemas.json (written atomically, like the partitioned-topic file).
Source: Pulsar SchemaRegistryServiceImpl, AvroSchemaBasedCompatibilityCheck, ServerCnx.
"""
from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from pathlib import Path
from typing import Callable

import avro.errors
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from minipulsar.broker.errors import IncompatibleSchemaError
from minipulsar.broker.metadata_store import MetadataStore
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api

log = logging.getLogger(__name__)

_AVRO_BASED = frozenset(api.Schema.Type.Value(n) for n in ("Avro", "Json", "Protobuf"))


def schema_name(topic: TopicName) -> str:
    """Pulsar's TopicName.getSchemaName: tenant/namespace/local name of the partitioned topic."""
    parent = topic.partitioned_topic_name
    return f"{parent.tenant}/{parent.namespace}/{parent.local_name}"


def version_bytes(version: int) -> bytes:
    return version.to_bytes(8, "big", signed=True)


def version_of(data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True) if data else -1


def _stored(schema: api.Schema) -> dict:
    return {
        "type": int(schema.type),
        "data": base64.b64encode(schema.schema_data).decode("ascii"),
        "properties": {kv.key: kv.value for kv in schema.properties},
        "timestamp": int(time.time() * 1000),
    }


def _same(stored: dict, schema: api.Schema) -> bool:
    candidate = _stored(schema)
    return all(stored[k] == candidate[k] for k in ("type", "data", "properties"))


def _definition(stored: dict) -> str:
    return base64.b64decode(stored["data"]).decode("utf-8")


def _with_top_level_name_of(reader_text: str, writer_text: str) -> str:
    """The reader's definition with the writer's top-level record name and namespace: Pulsar's check
    (Java Avro's ValidateMutualRead, resolving records by their fields) does not compare the
    top-level names, which Python avro's checker would."""
    reader, writer = json.loads(reader_text), json.loads(writer_text)
    if not (isinstance(reader, dict) and isinstance(writer, dict) and reader.get("type") == writer.get("type") == "record"):
        return reader_text
    for key in ("name", "namespace"):
        reader.pop(key, None)
        if key in writer:
            reader[key] = writer[key]
    return json.dumps(reader)


def _can_read(reader: dict, writer: dict) -> str | None:
    """None when data written with `writer` can be read with `reader`, else the reason."""
    try:
        writer_text = _definition(writer)
        reader_schema = avro.schema.parse(_with_top_level_name_of(_definition(reader), writer_text))
        result = ReaderWriterCompatibilityChecker().get_compatibility(reader_schema, avro.schema.parse(writer_text))
    except (avro.errors.AvroException, ValueError, json.JSONDecodeError) as exc:
        return f"schema definition does not parse as Avro: {exc}"
    if result.compatibility is SchemaCompatibilityType.compatible:
        return None
    problems = ", ".join(i.value for i in result.incompatibilities) or "incompatible"
    return f"{problems} at {', '.join(sorted(result.locations))}: {', '.join(sorted(map(str, result.messages)))}"


def check_compatible(existing: list[dict], new: dict, strategy: str) -> str | None:
    """None when `new` may be added after `existing` (oldest first) under strategy, else why not."""
    if not existing or strategy == "ALWAYS_COMPATIBLE":
        return None
    if strategy == "ALWAYS_INCOMPATIBLE":
        return "the compatibility strategy is ALWAYS_INCOMPATIBLE"
    against = existing if strategy.endswith("_TRANSITIVE") else existing[-1:]
    base = strategy.removesuffix("_TRANSITIVE")
    for old in against:
        if old["type"] != new["type"]:
            return (f"schema type {api.Schema.Type.Name(new['type'])} differs from the existing type "
                    f"{api.Schema.Type.Name(old['type'])}")
        if new["type"] not in _AVRO_BASED:
            continue
        checks = []
        if base in ("BACKWARD", "FULL"):
            checks.append(("new schema cannot read data written with the existing one", new, old))
        if base in ("FORWARD", "FULL"):
            checks.append(("existing schema cannot read data written with the new one", old, new))
        for what, reader, writer in checks:
            reason = _can_read(reader, writer)
            if reason is not None:
                return f"{what} ({strategy}): {reason}"
    return None


class SchemaRegistry:
    """data_dir: the broker's data dir; strategy_of(topic): the schemaCompatibilityStrategy in force
    for a topic (its namespace's policy, else the broker's setting); auto_update_of(topic): whether
    producers may add versions to a topic that has a schema (isAllowAutoUpdateSchema)."""

    def __init__(self, data_dir: str | Path, strategy_of: Callable[[TopicName], str],
                 auto_update_of: Callable[[TopicName], bool] = lambda topic: True):
        self.store = MetadataStore(Path(data_dir) / "metadata" / "schemas.json")
        self.strategy_of = strategy_of
        self.auto_update_of = auto_update_of
        self._locks: dict[str, asyncio.Lock] = {}

    def load(self) -> None:
        """Read the stored schemas; raises ValueError naming the file when it is corrupt."""
        self.store.load()

    def _versions(self, name: str) -> list[dict]:
        return self.store.data.setdefault("schemas", {}).get(name, [])

    def _live(self, name: str) -> list[tuple[int, dict]]:
        """(number, stored) of the versions after the last deletion, oldest first."""
        numbered = list(enumerate(self._versions(name)))
        deleted = [number for number, stored in numbered if stored.get("deleted")]
        return numbered[deleted[-1] + 1:] if deleted else numbered

    async def add_or_get(self, topic: TopicName, schema: api.Schema) -> bytes:
        """The version for a producer's schema, adding it when new and compatible; raises
        IncompatibleSchemaError."""
        return version_bytes(await self._add(topic, schema, producer=True))

    async def add(self, topic: TopicName, schema: api.Schema) -> int:
        """The admin API's POST: the number of the live version identical to `schema`, else of the
        version it is added as, after the compatibility check under the topic's strategy (not
        subject to isAllowAutoUpdateSchema, which binds producers only, as in Pulsar); raises
        IncompatibleSchemaError with the reason."""
        return await self._add(topic, schema, producer=False)

    async def _add(self, topic: TopicName, schema: api.Schema, producer: bool) -> int:
        name = schema_name(topic)
        async with self._locks.setdefault(name, asyncio.Lock()):
            live = self._live(name)
            for number, stored in live:
                if _same(stored, schema):
                    return number
            if producer and live and not self.auto_update_of(topic):
                raise IncompatibleSchemaError(f"Schema not found and schema auto updating is disabled ({name})")
            new = _stored(schema)
            reason = check_compatible([stored for _, stored in live], new, self.strategy_of(topic))
            if reason is not None:
                raise IncompatibleSchemaError(f"Incompatible schema for {name}: {reason}")
            versions = self.store.data["schemas"].setdefault(name, [])
            versions.append(new)
            await self.store.save()
            log.info("schema %s: version %d (%s)", name, len(versions) - 1, api.Schema.Type.Name(schema.type))
            return len(versions) - 1

    async def check_for_consumer(self, topic: TopicName, schema: api.Schema, idle: bool) -> None:
        """SUBSCRIBE with a schema: store it when the topic has none and is idle, else check it is
        compatible with what is stored (an identical version is fine); raises IncompatibleSchemaError."""
        name = schema_name(topic)
        versions = [stored for _, stored in self._live(name)]
        if not versions:
            if idle:
                await self.add_or_get(topic, schema)
            return
        if any(_same(stored, schema) for stored in versions):
            return
        reason = check_compatible(versions, _stored(schema), self.strategy_of(topic))
        if reason is not None:
            raise IncompatibleSchemaError(f"Incompatible schema for {name}: {reason}")

    def get(self, topic: TopicName, version: bytes | None) -> tuple[api.Schema, bytes] | None:
        """(Schema, version bytes) of the version asked for (None or empty: the latest), or None
        (no such version, or one deleted)."""
        name = schema_name(topic)
        live = dict(self._live(name))
        if not live:
            return None
        number = version_of(version) if version else max(live)
        stored = live.get(number)
        if stored is None:
            return None
        schema = api.Schema(name=topic.partitioned_topic_name.local_name, type=stored["type"],
                            schema_data=base64.b64decode(stored["data"]))
        for key, value in stored["properties"].items():
            schema.properties.add(key=key, value=value)
        return schema, version_bytes(number)

    # ---- the admin API (broker/web/schemas.py) ---------------------------------------------
    def versions(self, topic: TopicName) -> list[dict]:
        """Every version after the last deletion, oldest first, each {"version": int, "type": int
        (PulsarApi Schema.Type), "data": bytes, "properties": {str: str}, "timestamp": ms}; [] when
        the topic has none."""
        return [_described(number, stored) for number, stored in self._live(schema_name(topic))]

    def version(self, topic: TopicName, number: int | None = None) -> dict | None:
        """One version as `versions` describes it: the latest (number None) or that number; None when
        the topic has no schema, the number does not exist, or it was deleted."""
        live = dict(self._live(schema_name(topic)))
        if not live:
            return None
        number = max(live) if number is None else number
        return _described(number, live[number]) if number in live else None

    def compatibility(self, topic: TopicName, schema: api.Schema) -> str | None:
        """Without adding anything: None when `schema` would be accepted (identical to a live version,
        or compatible with them under the topic's strategy), else the reason it would be refused."""
        live = [stored for _, stored in self._live(schema_name(topic))]
        if any(_same(stored, schema) for stored in live):
            return None
        return check_compatible(live, _stored(schema), self.strategy_of(topic))

    async def delete(self, topic: TopicName, force: bool = False) -> int:
        """Delete every version. Default: append a tombstone (Pulsar's deleteSchema) and answer its
        number; when the latest is already a tombstone, answer that one's number; -1 when the topic
        never had a schema. force: remove the topic's entries outright (numbering restarts at 0) and
        answer the number of the latest entry removed, -1 when there was none."""
        name = schema_name(topic)
        async with self._locks.setdefault(name, asyncio.Lock()):
            versions = self._versions(name)
            if not versions:
                return -1
            if force:
                del self.store.data["schemas"][name]
            elif versions[-1].get("deleted"):
                return len(versions) - 1
            else:
                versions.append({"type": int(api.Schema.Type.Value("None")), "data": "", "properties": {},
                                 "timestamp": int(time.time() * 1000), "deleted": True})
            await self.store.save()
            log.info("schema %s: deleted%s", name, " (forced)" if force else "")
            return len(versions) - 1


def _described(number: int, stored: dict) -> dict:
    return {"version": number, "type": stored["type"], "data": base64.b64decode(stored["data"]),
            "properties": dict(stored["properties"]), "timestamp": stored["timestamp"]}


def definition_error(schema: api.Schema) -> str | None:
    """None when the schema's definition is usable for its type, else why not: AVRO, JSON and
    PROTOBUF definitions must parse as Avro (Pulsar's StructSchemaDataValidator)."""
    if schema.type not in _AVRO_BASED:
        return None
    try:
        avro.schema.parse(schema.schema_data.decode("utf-8"))
    except Exception as exc:  # avro raises more than its own errors for arbitrary text
        return f"Invalid schema definition data for {api.Schema.Type.Name(schema.type)} schema: {exc}"
    return None
