"""Schemas: /admin/v2/schemas/{tenant}/{namespace}/{topic}/...

GET .../schema (the latest version), GET .../schema/{version}, GET .../schemas (every version
after the last deletion), POST .../schema (add a version, after the compatibility check: 409 when
incompatible), DELETE .../schema (every version; ?force=true removes them outright) and POST
.../compatibility (check without adding). The topic is the persistent topic of the path; a
partition shares its partitioned topic's schema. JSON shapes and status codes are Pulsar's
(GetSchemaResponse, GetAllVersionsSchemaResponse, PostSchemaPayload, PostSchemaResponse whose
version is a LongSchemaVersion, DeleteSchemaResponse, IsCompatibilityResponse); type names are
Pulsar's SchemaType names (AVRO, JSON, ...), mapped to and from PulsarApi's Schema.Type (Avro,
Json, ...). Errors answer {"reason": ...}: 400 for a malformed payload or an unknown type (Pulsar
fails those with 400 or 500), 406 for a BYTES schema, 422 for a definition that does not parse.
Source: Pulsar SchemasResource (v2), SchemasResourceBase, SchemasImpl (pulsar-client-admin).
"""
from __future__ import annotations

from aiohttp import web

from minipulsar.broker.errors import BrokerError
from minipulsar.broker.schema_registry import definition_error
from minipulsar.broker.topic_name import TopicName
from minipulsar.broker.web.context import broker_of, json_body, query_bool
from minipulsar.broker.web.errors import RestError, bad_request, not_found
from minipulsar.broker.web.routes import Query, RouteTable
from minipulsar.proto import PulsarApi_pb2 as api

BASE = "/admin/v2/schemas/{tenant}/{namespace}/{topic}"

# Pulsar's SchemaType names -> PulsarApi Schema.Type names (the types a schema can be stored as).
_PROTOCOL_NAME = {
    "STRING": "String", "JSON": "Json", "PROTOBUF": "Protobuf", "AVRO": "Avro", "BOOLEAN": "Bool",
    "INT8": "Int8", "INT16": "Int16", "INT32": "Int32", "INT64": "Int64", "FLOAT": "Float",
    "DOUBLE": "Double", "DATE": "Date", "TIME": "Time", "TIMESTAMP": "Timestamp", "KEY_VALUE": "KeyValue",
    "INSTANT": "Instant", "LOCAL_DATE": "LocalDate", "LOCAL_TIME": "LocalTime",
    "LOCAL_DATE_TIME": "LocalDateTime", "PROTOBUF_NATIVE": "ProtobufNative",
}
TYPE_OF_NAME = {name: api.Schema.Type.Value(proto) for name, proto in _PROTOCOL_NAME.items()}
NAME_OF_TYPE = {number: name for name, number in TYPE_OF_NAME.items()} | {api.Schema.Type.Value("None"): "NONE"}

_INTEGER = {"type": "integer"}
_PROPERTIES = {"type": "object", "additionalProperties": {"type": "string"}}
POST_SCHEMA_PAYLOAD = {"type": "object", "properties": {
    "type": {"type": "string", "enum": list(TYPE_OF_NAME)},
    "schema": {"type": "string"},
    "properties": {**_PROPERTIES, "nullable": True}}, "required": ["type"]}
GET_SCHEMA_RESPONSE = {"type": "object", "properties": {
    "version": _INTEGER, "type": {"type": "string", "enum": sorted(set(NAME_OF_TYPE.values()))},
    "timestamp": _INTEGER, "data": {"type": "string"}, "properties": _PROPERTIES},
    "required": ["version", "type", "timestamp", "data", "properties"]}
ALL_VERSIONS_RESPONSE = {"type": "object", "properties": {
    "getSchemaResponses": {"type": "array", "items": GET_SCHEMA_RESPONSE}}, "required": ["getSchemaResponses"]}
POST_SCHEMA_RESPONSE = {"type": "object", "properties": {
    "version": {"type": "object", "properties": {"version": _INTEGER}, "required": ["version"]}},
    "required": ["version"]}
DELETE_SCHEMA_RESPONSE = {"type": "object", "properties": {"version": _INTEGER}, "required": ["version"]}
IS_COMPATIBILITY_RESPONSE = {"type": "object", "properties": {
    "isCompatibility": {"type": "boolean"}, "schemaCompatibilityStrategy": {"type": "string"}},
    "required": ["isCompatibility", "schemaCompatibilityStrategy"]}
AUTHORITATIVE = Query("authoritative", "boolean", "accepted and ignored (a single broker owns every topic)")
FORCE = Query("force", "boolean", "remove the versions outright instead of appending a deletion marker")


def add_routes(table: RouteTable) -> None:
    table.add("GET", BASE + "/schema", get_latest, "the latest schema of a topic (GetSchemaResponse)", "schemas",
              query=(AUTHORITATIVE,), response=GET_SCHEMA_RESPONSE)
    table.add("GET", BASE + "/schema/{version}", get_version, "the schema of a topic at a version", "schemas",
              query=(AUTHORITATIVE,), response=GET_SCHEMA_RESPONSE)
    table.add("GET", BASE + "/schemas", get_all, "every schema version of a topic (GetAllVersionsSchemaResponse)",
              "schemas", query=(AUTHORITATIVE,), response=ALL_VERSIONS_RESPONSE)
    table.add("POST", BASE + "/schema", post_schema, "add a schema version (409 when incompatible)", "schemas",
              query=(AUTHORITATIVE,), body=POST_SCHEMA_PAYLOAD, response=POST_SCHEMA_RESPONSE)
    table.add("DELETE", BASE + "/schema", delete_schema, "delete every schema version of a topic", "schemas",
              query=(AUTHORITATIVE, FORCE), response=DELETE_SCHEMA_RESPONSE)
    table.add("POST", BASE + "/compatibility", test_compatibility,
              "whether a schema would be accepted (IsCompatibilityResponse)", "schemas",
              query=(AUTHORITATIVE,), body=POST_SCHEMA_PAYLOAD, response=IS_COMPATIBILITY_RESPONSE, status=202)


def _topic(request: web.Request) -> TopicName:
    """The persistent topic of the path; 412 for a name Pulsar refuses, 404 for an unknown namespace."""
    info = request.match_info
    try:
        name = TopicName.parse(f"persistent://{info['tenant']}/{info['namespace']}/{info['topic']}")
    except (BrokerError, ValueError) as exc:
        raise RestError(412, f"Invalid topic name: {exc}") from exc
    broker_of(request).namespaces.check_namespace(name.namespace_name)  # TopicNotFoundError: 404
    return name


def _response(version: dict) -> dict:
    """GetSchemaResponse of a registry version ({"version", "type", "data", "properties", "timestamp"})."""
    return {"version": version["version"], "type": NAME_OF_TYPE.get(version["type"], "NONE"),
            "timestamp": version["timestamp"], "data": version["data"].decode("utf-8", errors="replace"),
            "properties": version["properties"]}


async def _payload(request: web.Request) -> api.Schema:
    """The PostSchemaPayload of the body as a PulsarApi Schema; 400 when malformed or of an unknown
    type, 406 for BYTES (Pulsar: the default schema, never uploaded), 422 when the definition does
    not parse for its type."""
    payload = await json_body(request)
    if not isinstance(payload, dict):
        raise bad_request('the body must be a PostSchemaPayload: {"type": ..., "schema": ..., "properties": {...}}')
    kind, definition, properties = payload.get("type"), payload.get("schema", ""), payload.get("properties")
    if not isinstance(kind, str):
        raise bad_request("PostSchemaPayload.type must be a schema type name such as AVRO, JSON or STRING")
    if kind == "BYTES":
        raise RestError(406, "Do not upload a BYTES schema, because it's the default schema type")
    if kind not in TYPE_OF_NAME:
        raise bad_request(f"unknown schema type {kind!r}; known: {', '.join(TYPE_OF_NAME)}")
    if not isinstance(definition, str):
        raise bad_request("PostSchemaPayload.schema must be a string (the schema definition)")
    properties = {} if properties is None else properties
    if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
        raise bad_request("PostSchemaPayload.properties must be an object of strings")
    schema = api.Schema(name=request.match_info["topic"], type=TYPE_OF_NAME[kind],
                        schema_data=definition.encode("utf-8"))
    for key, value in properties.items():
        schema.properties.add(key=key, value=value)
    reason = definition_error(schema)
    if reason is not None:
        raise RestError(422, reason)
    return schema


def _version_param(request: web.Request) -> int:
    text = request.match_info["version"]
    try:
        return int(text)
    except ValueError:
        raise bad_request(f"the schema version must be an integer, not {text!r}") from None


async def get_latest(request: web.Request) -> web.Response:
    name = _topic(request)
    version = broker_of(request).schemas.version(name)
    if version is None:
        raise not_found(f"Schema not found for {name}")
    return web.json_response(_response(version))


async def get_version(request: web.Request) -> web.Response:
    number = _version_param(request)
    name = _topic(request)
    version = broker_of(request).schemas.version(name, number)
    if version is None:
        raise not_found(f"Schema version {number} not found for {name}")
    return web.json_response(_response(version))


async def get_all(request: web.Request) -> web.Response:
    name = _topic(request)
    versions = broker_of(request).schemas.versions(name)
    return web.json_response({"getSchemaResponses": [_response(v) for v in versions]})


async def post_schema(request: web.Request) -> web.Response:
    name = _topic(request)
    schema = await _payload(request)
    number = await broker_of(request).schemas.add(name, schema)  # IncompatibleSchemaError: 409
    return web.json_response({"version": {"version": number}})


async def delete_schema(request: web.Request) -> web.Response:
    name = _topic(request)
    number = await broker_of(request).schemas.delete(name, force=query_bool(request, "force"))
    return web.json_response({"version": number})


async def test_compatibility(request: web.Request) -> web.Response:
    name = _topic(request)
    schema = await _payload(request)
    registry = broker_of(request).schemas
    reason = registry.compatibility(name, schema)
    return web.json_response({"isCompatibility": reason is None,
                              "schemaCompatibilityStrategy": registry.strategy_of(name)}, status=202)

