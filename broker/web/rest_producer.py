"""Producing over HTTP: POST /topics/{domain}/{tenant}/{namespace}/{topic}[/partitions/{partition}].

Pulsar's REST producer (PIP-64). The body is ProducerMessages: {"schemaVersion": -1, "keySchema",
"valueSchema" (a SchemaInfo as a JSON string: {"type", "schema", "properties"}), "producerName"
("RestProducer" when absent), "messages": [{"payload", "key", "properties", "eventTime",
"sequenceId", "replicationClusters", "disableReplication", "deliverAt", "deliverAfterMs"}]}. Every
field may be left out but messages. The answer is ProducerAcks: {"messagePublishResults":
[{"messageId": "ledger:entry:partition", "errorCode": 0}], "schemaVersion"}; a message that could
not be stored has errorCode 2 and errorMsg, and the answer is still 200, as Pulsar's.

As in Pulsar: the topic must exist (404 otherwise); a partitioned topic gets its messages round
robin over its partitions, unless a partition is named; the value schema is the one at
schemaVersion, else valueSchema, else STRING (added to the topic's schemas like a producer's), and
each payload is a string encoded by it (STRING and BYTES as UTF-8, JSON as the JSON text, INT8 to
INT64, FLOAT, DOUBLE and BOOLEAN in Pulsar's binary forms). Where minipulsar differs: a payload its
schema cannot encode, a key schema (KEY_VALUE) and the other types are refused with 400 (Pulsar
stores an empty payload or fails with 500); BYTES stores no schema version (schemaVersion -1).
Source: Pulsar TopicsBase (publishMessages, buildMessage, encodeWithSchema), ProducerMessages,
ProducerAck(s).
"""
from __future__ import annotations

import json
import struct
import time

from aiohttp import web

from minipulsar.broker.errors import BrokerError
from minipulsar.broker.schema_registry import version_of
from minipulsar.broker.topic_name import TopicName
from minipulsar.broker.web.context import broker_of, json_body
from minipulsar.broker.web.errors import RestError, bad_request, not_found
from minipulsar.broker.web.routes import OBJECT, RouteTable
from minipulsar.broker.web.schemas import NAME_OF_TYPE, TYPE_OF_NAME
from minipulsar.broker.web.topic_path import TOPIC_PATH, topic_name
from minipulsar.broker.web.topics import int_param
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.entries import build_entry

BASE = "/topics" + TOPIC_PATH
DEFAULT_PRODUCER_NAME = "RestProducer"
NON_RETRIABLE = 2  # Pulsar's errorCode for a message that was not stored
MESSAGE = {"type": "object", "properties": {
    "payload": {"type": "string"}, "key": {"type": "string"},
    "properties": {"type": "object", "additionalProperties": {"type": "string"}},
    "eventTime": {"type": "string"}, "sequenceId": {"type": "integer"},
    "replicationClusters": {"type": "array", "items": {"type": "string"}},
    "disableReplication": {"type": "boolean"}, "deliverAt": {"type": "integer"},
    "deliverAfterMs": {"type": "integer"}}}
PRODUCER_MESSAGES = {"type": "object", "properties": {
    "schemaVersion": {"type": "integer"}, "keySchema": {"type": "string"}, "valueSchema": {"type": "string"},
    "producerName": {"type": "string"}, "messages": {"type": "array", "items": MESSAGE}},
    "required": ["messages"]}
_FIXED = {"INT8": ">b", "INT16": ">h", "INT32": ">i", "INT64": ">q", "FLOAT": ">f", "DOUBLE": ">d"}


def add_routes(table: RouteTable) -> None:
    table.add("POST", BASE, produce, "produce messages (round robin over a partitioned topic's partitions)",
              "topics", body=PRODUCER_MESSAGES, response=OBJECT)
    table.add("POST", BASE + "/partitions/{partition}", produce_to_partition,
              "produce messages to one partition of a partitioned topic", "topics",
              body=PRODUCER_MESSAGES, response=OBJECT)


async def produce(request: web.Request) -> web.Response:
    broker = broker_of(request)
    name = topic_name(request)
    count = broker.partition_count(name)
    if count:
        targets = [name.partition(i) for i in range(count)]
    elif broker.topic_admin.exists(name):
        targets = [name]
    else:
        raise not_found(f"Topic {name} not found")
    return await _publish(request, name, targets)


async def produce_to_partition(request: web.Request) -> web.Response:
    broker = broker_of(request)
    name = topic_name(request)
    if name.partition_index >= 0:
        raise bad_request("Topic name can't contain '-partition-' suffix.")
    partition = int_param(request.match_info["partition"], "partition", minimum=0)
    if partition >= broker.partition_count(name):
        raise not_found(f"Partition {partition} of {name} not found")
    return await _publish(request, name, [name.partition(partition)])


async def _publish(request: web.Request, name: TopicName, targets: list[TopicName]) -> web.Response:
    body = await json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise bad_request('the body must be ProducerMessages: {"messages": [{"payload": "..."}, ...]}')
    type_name, version = await _value_schema(request, name, body)
    producer_name = body.get("producerName") or DEFAULT_PRODUCER_NAME
    entries = [_entry(message, type_name, version, producer_name) for message in body["messages"]]
    broker = broker_of(request)
    results = []
    for index, data in enumerate(entries):
        target = targets[index % len(targets)]
        try:
            # a partition of an existing partitioned topic is created on first use, as for a producer
            partition = target.partition_index >= 0
            topic = await broker.get_topic(target, create=partition, explicit=partition)
            position = await topic.publish(data)
            results.append({"messageId": f"{position.ledger_id}:{position.entry_id}:{target.partition_index}",
                            "errorCode": 0})
        except BrokerError as exc:
            results.append({"messageId": f"-1:-1:{target.partition_index}", "errorCode": NON_RETRIABLE,
                            "errorMsg": str(exc)})
    return web.json_response({"messagePublishResults": results, "schemaVersion": version})


async def _value_schema(request: web.Request, name: TopicName, body: dict) -> tuple[str, int]:
    """(Pulsar SchemaType name, stored version or -1) the payloads are encoded with."""
    if body.get("keySchema"):
        raise bad_request("keySchema (KEY_VALUE messages) is not supported by this broker's REST producer")
    registry = broker_of(request).schemas
    version = body.get("schemaVersion", -1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise bad_request("schemaVersion must be an integer")
    if version >= 0:
        stored = registry.version(name, version)
        if stored is None:
            raise not_found(f"Schema version {version} of {name} not found")
        return NAME_OF_TYPE.get(stored["type"], "NONE"), version
    info = _schema_info(body.get("valueSchema"))
    type_name = info.get("type", "STRING")
    if type_name == "BYTES":
        return type_name, -1
    if type_name not in TYPE_OF_NAME:
        raise bad_request(f"unknown schema type {type_name!r}")
    schema = api.Schema(name=info.get("name") or type_name, type=TYPE_OF_NAME[type_name],
                        schema_data=str(info.get("schema") or "").encode())
    for key, value in (info.get("properties") or {}).items():
        schema.properties.add(key=str(key), value=str(value))
    return type_name, version_of(await registry.add_or_get(name, schema))  # IncompatibleSchemaError -> 409


def _schema_info(text) -> dict:
    if text is None or text == "":
        return {"type": "STRING"}
    try:
        info = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as exc:
        raise bad_request(f"valueSchema is not a SchemaInfo JSON document: {exc}") from None
    if not isinstance(info, dict):
        raise bad_request("valueSchema must be a SchemaInfo JSON object")
    return info


def _entry(message, type_name: str, version: int, producer_name: str) -> bytes:
    if not isinstance(message, dict):
        raise bad_request("each message must be a JSON object")
    metadata = api.MessageMetadata(producer_name=producer_name, publish_time=int(time.time() * 1000),
                                   sequence_id=_int(message, "sequenceId", 0))
    for key, value in (message.get("properties") or {}).items():
        metadata.properties.add(key=str(key), value=str(value))
    if message.get("key") is not None:
        metadata.partition_key = str(message["key"])
    if message.get("eventTime"):
        metadata.event_time = _int(message, "eventTime", 0)
    metadata.replicate_to.extend(message.get("replicationClusters") or [])
    if message.get("disableReplication"):
        del metadata.replicate_to[:]
        metadata.replicate_to.append("__local__")
    deliver_at, deliver_after = _int(message, "deliverAt", 0), _int(message, "deliverAfterMs", 0)
    if deliver_at and metadata.HasField("event_time"):
        metadata.deliver_at_time = deliver_at
    elif deliver_after:
        metadata.deliver_at_time = metadata.event_time + deliver_after
    if version >= 0:
        metadata.schema_version = version.to_bytes(8, "big")
    metadata.uncompressed_size = 0  # build_entry sets it to the payload's length
    return build_entry(metadata, encode(type_name, message.get("payload")))


def _int(message: dict, field: str, default: int) -> int:
    value = message.get(field, default)
    try:
        return int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        raise bad_request(f"{field} must be an integer, not {value!r}") from None


def encode(type_name: str, payload) -> bytes:
    """A REST payload (a string) as the schema type stores it; RestError 400 when it does not fit."""
    if payload is None:
        raise bad_request("a message needs a payload")
    text = payload if isinstance(payload, str) else json.dumps(payload)
    try:
        if type_name in ("STRING", "BYTES", "NONE"):
            return text.encode()
        if type_name == "JSON":
            json.loads(text)
            return text.encode()
        if type_name == "BOOLEAN":
            return b"\x01" if text.strip().lower() == "true" else b"\x00"
        if type_name in _FIXED:
            number = float(text) if type_name in ("FLOAT", "DOUBLE") else int(text)
            return struct.pack(_FIXED[type_name], number)
    except (ValueError, struct.error) as exc:
        raise RestError(400, f"payload {text[:50]!r} is not a valid {type_name} value: {exc}") from None
    raise bad_request(f"schema type {type_name} is not supported by this broker's REST producer")
