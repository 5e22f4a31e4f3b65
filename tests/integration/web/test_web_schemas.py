"""Schemas through the admin API (/admin/v2/schemas/...), checked with the official client on the
same broker: a schema posted over REST is what producers must be compatible with, a deletion lets
an unrelated schema in, and what producers register is what GET shows. JSON and status codes are
Pulsar's (GetSchemaResponse, PostSchemaResponse, DeleteSchemaResponse, IsCompatibilityResponse)."""
from __future__ import annotations

import json

import pulsar
import pytest
from pulsar.schema import AvroSchema, StringSchema

from minipulsar.proto import PulsarApi_pb2 as api
from tests.helpers import Admin, BrokerThread, now_ms
from tests.integration.broker.test_features_schemas import _get_schema, user_v1, user_v2, user_v3, user_v4


def base(topic: str) -> str:
    """persistent://t/ns/x -> /admin/v2/schemas/t/ns/x"""
    return "/admin/v2/schemas/" + topic.split("://", 1)[1]


def definition(record) -> str:
    """The Avro definition the official client sends for AvroSchema(record)."""
    return AvroSchema(record).schema_info().schema()


def avro_payload(record, **properties) -> dict:
    return {"type": "AVRO", "schema": definition(record), "properties": properties}


def field_names(response: dict) -> list[str]:
    return [f["name"] for f in json.loads(response["data"])["fields"]]


def test_posted_schema_binds_official_producers(admin, broker, official, topic):
    missing = admin.get(base(topic) + "/schema")
    assert missing.status_code == 404 and missing.json()["reason"]
    assert admin.get(base(topic) + "/schemas").json() == {"getSchemaResponses": []}

    before = now_ms()
    posted = admin.post(base(topic) + "/schema", json=avro_payload(user_v1(), owner="ops"))
    assert posted.status_code == 200 and posted.json() == {"version": {"version": 0}}
    latest = admin.get(base(topic) + "/schema")
    assert latest.status_code == 200
    body = latest.json()
    assert body["version"] == 0 and body["type"] == "AVRO" and body["properties"] == {"owner": "ops"}
    assert body["data"] == definition(user_v1()) and before <= body["timestamp"] <= now_ms()
    # The same payload again is the same version; the binary GET_SCHEMA sees what REST posted.
    assert admin.post(base(topic) + "/schema", json=avro_payload(user_v1(), owner="ops")).json() == {
        "version": {"version": 0}}
    wire = _get_schema(broker.url, topic)
    assert wire.schema.type == api.Schema.Type.Value("Avro") and wire.schema_version == (0).to_bytes(8, "big")

    with pytest.raises(pulsar.IncompatibleSchema):  # FULL: v3 changes the type of `name`
        official.create_producer(topic, schema=AvroSchema(user_v3()))
    refused = admin.post(base(topic) + "/schema", json=avro_payload(user_v3()))
    assert refused.status_code == 409 and "Incompatible" in refused.json()["reason"]

    assert admin.post(base(topic) + "/compatibility", json=avro_payload(user_v2())).json() == {
        "isCompatibility": True, "schemaCompatibilityStrategy": "FULL"}
    check = admin.post(base(topic) + "/compatibility", json=avro_payload(user_v3()))
    assert check.status_code == 202
    assert check.json() == {"isCompatibility": False, "schemaCompatibilityStrategy": "FULL"}
    assert admin.post(base(topic) + "/compatibility", json={"type": "STRING", "schema": ""}).json()[
        "isCompatibility"] is False  # another type
    assert len(admin.get(base(topic) + "/schemas").json()["getSchemaResponses"]) == 1  # checks add nothing

    # The official producer's compatible schema becomes version 1, visible through GET.
    consumer = official.subscribe(topic, "sub", schema=AvroSchema(user_v1()))
    v2 = user_v2()
    official.create_producer(topic, schema=AvroSchema(v2)).send(v2(name="ada", age=36))
    message = consumer.receive(5000)
    assert message.value().name == "ada" and message.schema_version().encode("latin-1") == (1).to_bytes(8, "big")
    latest = admin.get(base(topic) + "/schema").json()
    assert latest["version"] == 1 and latest["type"] == "AVRO" and field_names(latest) == ["name", "age"]
    assert field_names(admin.get(base(topic) + "/schema/0").json()) == ["name"]
    assert field_names(admin.get(base(topic) + "/schema/1").json()) == ["name", "age"]
    every = admin.get(base(topic) + "/schemas").json()["getSchemaResponses"]
    assert [(v["version"], v["type"], field_names(v)) for v in every] == [
        (0, "AVRO", ["name"]), (1, "AVRO", ["name", "age"])]
    assert admin.get(base(topic) + "/schema/7").status_code == 404
    assert admin.get(base(topic) + "/schema/-1").status_code == 404
    assert admin.get(base(topic) + "/schema/latest").status_code == 400


def test_partitioned_topic_shares_one_schema(admin, official, topic):
    assert admin.put("/admin/v2/persistent/" + topic.split("://", 1)[1] + "/partitions", json=2).status_code == 204
    assert admin.post(base(topic) + "/schema", json=avro_payload(user_v1())).status_code == 200
    assert admin.get(base(topic) + "-partition-1/schema").json()["data"] == definition(user_v1())
    with pytest.raises(pulsar.IncompatibleSchema):
        official.create_producer(topic, schema=AvroSchema(user_v3()))
    official.create_producer(topic, schema=AvroSchema(user_v2())).close()
    assert admin.get(base(topic) + "-partition-0/schema").json()["version"] == 1


def test_delete_lets_an_unrelated_schema_in(admin, broker, official, topic):
    v1 = user_v1()
    producer = official.create_producer(topic, schema=AvroSchema(v1))
    producer.send(v1(name="before"))
    producer.close()
    assert admin.get(base(topic) + "/schema").json()["version"] == 0
    with pytest.raises(pulsar.IncompatibleSchema):
        official.create_producer(topic, schema=StringSchema())

    deleted = admin.delete(base(topic) + "/schema")
    assert deleted.status_code == 200 and deleted.json() == {"version": 1}  # the deletion marker's version
    assert admin.get(base(topic) + "/schema").status_code == 404
    assert admin.get(base(topic) + "/schema/0").status_code == 404  # deleted versions are gone
    assert admin.get(base(topic) + "/schemas").json() == {"getSchemaResponses": []}
    assert _get_schema(broker.url, topic).error_code == api.TopicNotFound
    assert admin.delete(base(topic) + "/schema").json() == {"version": 1}  # nothing more to delete

    strings = official.create_producer(topic, schema=StringSchema())  # another type: accepted now
    strings.send("after")
    latest = admin.get(base(topic) + "/schema").json()
    assert latest["version"] == 2 and latest["type"] == "STRING"  # numbering goes on past the marker
    assert [v["version"] for v in admin.get(base(topic) + "/schemas").json()["getSchemaResponses"]] == [2]
    with pytest.raises(pulsar.IncompatibleSchema):
        official.create_producer(topic, schema=AvroSchema(v1))
    strings.close()

    forced = admin.delete(base(topic) + "/schema", params={"force": "true"})
    assert forced.status_code == 200 and forced.json() == {"version": 2}
    assert admin.get(base(topic) + "/schemas").json() == {"getSchemaResponses": []}
    assert admin.post(base(topic) + "/schema", json=avro_payload(v1)).json() == {"version": {"version": 0}}
    assert admin.delete(base("persistent://public/default/never-had-one") + "/schema").json() == {"version": -1}


def test_namespace_strategy_applies(admin, official, topic):
    assert admin.put("/admin/v2/namespaces/public/default/schemaCompatibilityStrategy",
                     json="BACKWARD").status_code == 204
    official.create_producer(topic, schema=AvroSchema(user_v2())).close()
    assert admin.post(base(topic) + "/compatibility", json=avro_payload(user_v4())).json() == {
        "isCompatibility": True, "schemaCompatibilityStrategy": "BACKWARD"}
    assert admin.post(base(topic) + "/schema", json=avro_payload(user_v4())).json() == {"version": {"version": 1}}
    official.create_producer(topic, schema=AvroSchema(user_v4())).close()  # the posted version
    assert len(admin.get(base(topic) + "/schemas").json()["getSchemaResponses"]) == 2


def test_deletion_survives_a_restart(tmp_path, topic):
    data = tmp_path / "data"
    broker = BrokerThread(data).start()
    try:
        admin = Admin(broker.broker.web_service_url)
        assert admin.post(base(topic) + "/schema", json=avro_payload(user_v1())).status_code == 200
        assert admin.delete(base(topic) + "/schema").json() == {"version": 1}
    finally:
        broker.stop()
    broker = BrokerThread(data).start()
    try:
        admin = Admin(broker.broker.web_service_url)
        assert admin.get(base(topic) + "/schema").status_code == 404
        assert admin.post(base(topic) + "/schema", json=avro_payload(user_v3())).json() == {"version": {"version": 2}}
    finally:
        broker.stop()


@pytest.mark.parametrize("path", ["/schema", "/compatibility"])
def test_bad_payloads(admin, topic, path):
    url = base(topic) + path
    malformed = admin.post(url, data="{not json", headers={"Content-Type": "application/json"})
    assert malformed.status_code == 400 and malformed.json()["reason"]
    for body in ([], "AVRO", {"schema": "{}"}, {"type": 4, "schema": ""}, {"type": "AVRO", "schema": 3},
                 {"type": "STRING", "schema": "", "properties": {"k": 1}}, {"type": "STRING", "properties": []}):
        answer = admin.post(url, json=body)
        assert answer.status_code == 400, (body, answer.text)
        assert answer.json()["reason"]
    unknown = admin.post(url, json={"type": "XML", "schema": "<a/>"})
    assert unknown.status_code == 400 and "XML" in unknown.json()["reason"]
    assert admin.post(url, json={"type": "BYTES", "schema": ""}).status_code == 406  # as Pulsar
    invalid = admin.post(url, json={"type": "AVRO", "schema": "not an avro definition"})
    assert invalid.status_code == 422 and invalid.json()["reason"]
    assert admin.get(base(topic) + "/schemas").json() == {"getSchemaResponses": []}  # nothing was stored


def test_unknown_namespace_is_404(admin):
    for method, path in (("get", "/schema"), ("get", "/schema/0"), ("get", "/schemas"), ("delete", "/schema")):
        answer = getattr(admin, method)("/admin/v2/schemas/public/nowhere/x" + path)
        assert answer.status_code == 404 and answer.json()["reason"], (method, path)
    answer = admin.post("/admin/v2/schemas/nobody/nowhere/x/schema", json=avro_payload(user_v1()))
    assert answer.status_code == 404
