"""GET .../subscription/{s}/position/{n} (Pulsar's peekNthMessage) and POST /topics/... (PIP-64's
REST producer), against the official client on the other side."""
from __future__ import annotations

import json

import pulsar
import requests

from tests.helpers import rest_path, wait_for
from tests.pki import token_settings


def produce_path(topic: str) -> str:
    return "/topics" + rest_path(topic)


def test_peek_counts_from_the_mark_delete_position_and_skips_what_was_acknowledged(admin, official, topic):
    consumer = official.subscribe(topic, "audit", consumer_type=pulsar.ConsumerType.Shared)
    producer = official.create_producer(topic)
    for i in range(4):
        producer.send(f"m{i}".encode(), properties={"Index": str(i)}, partition_key=f"k{i}")
    received = [consumer.receive(10000) for _ in range(4)]
    consumer.acknowledge(received[1])  # m1 is acknowledged individually: peek skips it
    path = f"/admin/v2{rest_path(topic)}/subscription/audit/position"
    wait_for(lambda: admin.get(f"{path}/2").content == b"m2", "the acknowledgement reached the broker")
    peeked = [admin.get(f"{path}/{n}") for n in (1, 2, 3)]
    assert [p.content for p in peeked] == [b"m0", b"m2", b"m3"]
    assert peeked[1].headers["X-Pulsar-partition-key"] == "k2"
    assert json.loads(peeked[1].headers["X-Pulsar-Property"]) == {"Index": "2"}  # keys keep their case
    m2 = received[2].message_id()
    assert peeked[1].headers["X-Pulsar-Message-ID"] == f"{m2.ledger_id()}:{m2.entry_id()}"
    past = admin.get(f"{path}/4")
    assert past.status_code == 404 and "fewer messages" in past.json()["reason"]
    assert admin.get(f"{path}/0").status_code == 400
    assert admin.get(f"/admin/v2{rest_path(topic)}/subscription/nobody/position/1").status_code == 404


def test_rest_producer_reaches_the_official_consumer(admin, official, topic):
    official.create_producer(topic).send(b"creates the topic")
    consumer = official.subscribe(topic, "inbox")
    body = {"producerName": "rest-test", "valueSchema": json.dumps({"type": "BYTES"}), "messages": [
        {"payload": "hello", "key": "k1", "properties": {"a": "b"}, "eventTime": "1700000000000", "sequenceId": 7},
        {"payload": "world"}]}
    answer = admin.post(produce_path(topic), json=body)
    assert answer.status_code == 200, answer.text
    acks = answer.json()
    assert acks["schemaVersion"] == -1
    assert [r["errorCode"] for r in acks["messagePublishResults"]] == [0, 0]
    assert all(r["messageId"].endswith(":-1") for r in acks["messagePublishResults"])
    first, second = consumer.receive(10000), consumer.receive(10000)
    assert (first.data(), first.partition_key(), first.properties(), first.event_timestamp()) == \
        (b"hello", "k1", {"a": "b"}, 1700000000000)
    assert second.data() == b"world"


def test_rest_producer_defaults_to_a_string_schema_and_reuses_a_version(admin, official, topic):
    admin.put(f"/admin/v2{rest_path(topic)}")
    first = admin.post(produce_path(topic), json={"messages": [{"payload": "text"}]}).json()
    assert first["schemaVersion"] == 0
    schema = admin.get(f"/admin/v2/schemas/{topic.split('://')[1]}/schema").json()
    assert schema["type"] == "STRING"
    again = admin.post(produce_path(topic), json={"schemaVersion": 0, "messages": [{"payload": "more"}]}).json()
    assert again["messagePublishResults"][0]["errorCode"] == 0
    reader = official.create_reader(topic, pulsar.MessageId.earliest, schema=pulsar.schema.StringSchema())
    assert [reader.read_next(10000).value() for _ in range(2)] == ["text", "more"]


def test_rest_producer_spreads_over_partitions_or_targets_one(admin, official, topic):
    assert admin.put(f"/admin/v2{rest_path(topic)}/partitions", json=3).status_code == 204
    bytes_schema = json.dumps({"type": "BYTES"})
    spread = admin.post(produce_path(topic), json={"valueSchema": bytes_schema,
                                                    "messages": [{"payload": str(i)} for i in range(6)]}).json()
    assert [r["errorCode"] for r in spread["messagePublishResults"]] == [0] * 6
    assert [r["messageId"].rsplit(":", 1)[1] for r in spread["messagePublishResults"]] == ["0", "1", "2"] * 2
    one = admin.post(produce_path(topic) + "/partitions/2", json={"valueSchema": bytes_schema,
                                                                  "messages": [{"payload": "p2"}]}).json()
    assert one["messagePublishResults"][0]["messageId"].endswith(":2") and one["messagePublishResults"][0]["errorCode"] == 0
    stats = admin.get(f"/admin/v2{rest_path(topic)}/partitioned-stats").json()
    assert [stats["partitions"][f"{topic}-partition-{i}"]["numberOfEntries"] for i in range(3)] == [2, 2, 3]
    assert admin.post(produce_path(topic) + "/partitions/3", json={"messages": []}).status_code == 404


def test_rest_producer_refuses_bad_requests(admin, topic):
    assert admin.post(produce_path(topic), json={"messages": [{"payload": "x"}]}).status_code == 404  # no topic
    admin.put(f"/admin/v2{rest_path(topic)}")
    for body, status in (({"messages": "x"}, 400), ("not json{", 400), ({"keySchema": "{}", "messages": []}, 400),
                         ({"valueSchema": json.dumps({"type": "INT32"}), "messages": [{"payload": "x"}]}, 400),
                         ({"schemaVersion": 5, "messages": [{"payload": "x"}]}, 404),
                         ({"valueSchema": json.dumps({"type": "BYTES"}), "messages": [{}]}, 400)):
        data = body if isinstance(body, str) else json.dumps(body)
        answer = admin.post(produce_path(topic), data=data, headers={"Content-Type": "application/json"})
        assert answer.status_code == status, (body, answer.text)
        assert answer.json()["reason"]
    assert admin.get(f"/admin/v2{rest_path(topic)}/stats").json()["numberOfEntries"] == 0  # nothing half-stored


def test_rest_producer_needs_produce_permission(broker_factory, jwt_keys, make_token, topic):
    broker = broker_factory(**token_settings(jwt_keys, authorizationEnabled="true", superUserRoles="admin"))
    base = broker.broker.web_service_url

    def call(method, path, role, **kwargs):
        return requests.request(method, base + path, headers={"Authorization": f"Bearer {make_token(role)}"},
                                timeout=10, **kwargs)

    assert call("PUT", f"/admin/v2{rest_path(topic)}", "admin").status_code == 204
    body = {"valueSchema": json.dumps({"type": "BYTES"}), "messages": [{"payload": "x"}]}
    assert call("POST", produce_path(topic), "bob", json=body).status_code == 403
    grant = call("POST", f"/admin/v2/namespaces/public/default/permissions/bob", "admin", json=["produce"])
    assert grant.status_code == 204
    assert call("POST", produce_path(topic), "bob", json=body).status_code == 200
