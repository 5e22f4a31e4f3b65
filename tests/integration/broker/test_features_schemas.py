"""Schemas with the official client (issue 7, item 10): a per-topic registry with versions,
PRODUCER_SUCCESS.schema_version, GET_SCHEMA by version, compatibility strategies checked with
Apache Avro, IncompatibleSchema errors that leave the connection usable."""
from __future__ import annotations

import json

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, Record, String, StringSchema

from minipulsar.proto import PulsarApi_pb2 as api
from tests.helpers import BrokerThread, RawConnection

Type = api.BaseCommand.Type


def user_v1():
    class User(Record):
        name = String(required=True)
    return User


def user_v2():  # adds a nullable field with a default: FULL compatible with v1
    class User(Record):
        name = String(required=True)
        age = Integer(required_default=True)
    return User


def user_v3():  # name changes type: incompatible both ways
    class User(Record):
        name = Integer(required=True)
    return User


def user_v4():  # drops `name` (no default): v4 reads v2 data (BACKWARD), v2 cannot read v4 data
    class User(Record):
        age = Integer(required_default=True)
    return User


def _get_schema(url: str, topic: str, version: int | None = None) -> api.CommandGetSchemaResponse:
    raw = RawConnection(url)
    try:
        raw.connect()
        request = api.CommandGetSchema(request_id=1, topic=topic)
        if version is not None:
            request.schema_version = version.to_bytes(8, "big")
        raw.send(api.BaseCommand(type=Type.GET_SCHEMA, getSchema=request))
        reply = raw.receive()
        assert reply.type == Type.GET_SCHEMA_RESPONSE
        return reply.getSchemaResponse
    finally:
        raw.close()


def test_versions_compatibility_and_get_schema(broker, client, topic):
    assert _get_schema(broker.url, topic).error_code == api.TopicNotFound  # no schema yet
    v1 = user_v1()
    consumer = client.subscribe(topic, "sub", schema=AvroSchema(v1))
    producer1 = client.create_producer(topic, schema=AvroSchema(v1))
    producer1.send(v1(name="ada"))
    message = consumer.receive(5000)
    assert message.value().name == "ada"
    assert message.schema_version().encode("latin-1") == (0).to_bytes(8, "big")
    consumer.acknowledge(message)

    v2 = user_v2()
    producer2 = client.create_producer(topic, schema=AvroSchema(v2))  # compatible: version 1
    producer2.send(v2(name="bob", age=36))
    assert consumer.receive(5000).value().name == "bob"  # v2 data read by the v1 consumer

    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(user_v3()))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(user_v4()))  # FULL refuses a FORWARD break
    with pytest.raises(pulsar.IncompatibleSchema):
        client.subscribe(topic, "other", schema=AvroSchema(user_v3()))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=StringSchema())  # another schema type
    producer1.send(v1(name="still-works"))  # the connection and its producers carry on
    assert consumer.receive(5000).value().name == "still-works"
    client.create_producer(topic).send(b"bytes producers are allowed (schemaValidationEnforced=false)")

    latest = _get_schema(broker.url, topic)
    assert not latest.HasField("error_code")
    assert latest.schema_version == (1).to_bytes(8, "big") and latest.schema.type == api.Schema.Type.Value("Avro")
    assert [f["name"] for f in json.loads(latest.schema.schema_data)["fields"]] == ["name", "age"]
    first = _get_schema(broker.url, topic, version=0)
    assert [f["name"] for f in json.loads(first.schema.schema_data)["fields"]] == ["name"]
    assert _get_schema(broker.url, topic, version=7).error_code == api.TopicNotFound


def test_backward_strategy_and_restart(tmp_path, topic):
    data = tmp_path / "data"
    broker = BrokerThread(data, schemaCompatibilityStrategy="BACKWARD").start()
    try:
        client = pulsar.Client(broker.url, operation_timeout_seconds=10)
        client.create_producer(topic, schema=AvroSchema(user_v2())).close()
        client.create_producer(topic, schema=AvroSchema(user_v4())).close()  # BACKWARD allows it
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer(topic, schema=AvroSchema(user_v3()))
        client.close()
    finally:
        broker.stop()
    broker = BrokerThread(data, schemaCompatibilityStrategy="ALWAYS_INCOMPATIBLE").start()
    try:
        assert _get_schema(broker.url, topic).schema_version == (1).to_bytes(8, "big")  # kept on disk
        client = pulsar.Client(broker.url, operation_timeout_seconds=10)
        client.create_producer(topic, schema=AvroSchema(user_v2())).close()  # identical: version 0 again
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer(topic, schema=AvroSchema(user_v1()))
        client.close()
    finally:
        broker.stop()


def test_string_schema_round_trip(client, topic):
    consumer = client.subscribe(topic, "sub", schema=StringSchema())
    producer = client.create_producer(topic, schema=StringSchema())
    producer.send("héllo")
    message = consumer.receive(5000)
    assert message.value() == "héllo"
    assert message.schema_version().encode("latin-1") == (0).to_bytes(8, "big")


def customer_v2():  # user_v2's fields under another top-level record name
    class Customer(Record):
        name = String(required=True)
        age = Integer(required_default=True)
    return Customer


def customer_v3():  # user_v3's incompatible change under another record name
    class Customer(Record):
        name = Integer(required=True)
    return Customer


@pytest.mark.parametrize("strategy", ["BACKWARD", "FORWARD", "FULL", "FULL_TRANSITIVE"])
def test_top_level_record_name_is_not_compared(broker_factory, strategy):
    """Pulsar's Avro check (Java's ValidateMutualRead) resolves records by their fields, not by the
    top-level record name: a renamed record with compatible fields is accepted, an incompatible
    one is still refused."""
    broker = broker_factory(schemaCompatibilityStrategy=strategy)
    topic = f"persistent://public/default/renamed-{strategy.lower()}"
    client = pulsar.Client(broker.url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.create_producer(topic, schema=AvroSchema(user_v1())).close()
        client.create_producer(topic, schema=AvroSchema(customer_v2())).close()
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer(topic, schema=AvroSchema(customer_v3()))
    finally:
        client.close()
