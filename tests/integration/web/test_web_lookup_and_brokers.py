"""HTTP lookup with the official client on an http:// service URL, the broker paths, errors and the
OpenAPI document."""
import pulsar
import pytest

from tests.helpers import Admin, rest_path


def test_official_client_produces_and_consumes_through_http_lookup(broker, topic):
    client = pulsar.Client(broker.broker.web_service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        for i in range(5):
            producer.send(str(i).encode())
        assert [int(consumer.receive(5000).data()) for _ in range(5)] == list(range(5))
    finally:
        client.close()


def test_http_lookup_sees_partitioned_topics(broker, admin, topic):
    assert admin.put("/admin/v2" + rest_path(topic) + "/partitions", json=3).status_code == 204
    client = pulsar.Client(broker.broker.web_service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        assert len(client.get_topic_partitions(topic)) == 3
        producer = client.create_producer(topic)
        for i in range(9):
            producer.send(str(i).encode(), partition_key=str(i))
    finally:
        client.close()
    stats = admin.get("/admin/v2" + rest_path(topic) + "/partitioned-stats").json()
    assert stats["metadata"] == {"partitions": 3}
    assert stats["numberOfEntries"] == 9 and len(stats["partitions"]) == 3


def test_lookup_answer_names_this_broker(broker, admin):
    answer = admin.get("/lookup/v2/topic/persistent/public/default/x").json()
    assert answer["brokerUrl"] == broker.url
    assert answer["brokerUrlTls"] == ""
    assert answer["httpUrl"] == broker.broker.web_service_url


def test_health_ready_and_configuration(admin):
    assert (admin.get("/admin/v2/brokers/health").status_code, admin.get("/admin/v2/brokers/health").text) == (200, "ok")
    assert admin.get("/admin/v2/brokers/ready").text == "ok"
    runtime = admin.get("/admin/v2/brokers/configuration/runtime").json()
    assert runtime["clusterName"] == "standalone" and runtime["allowAutoTopicCreation"] == "true"
    assert "dispatcherPauseOnAckStatePersistentEnabled" in admin.get("/admin/v2/brokers/configuration").json()


def test_dynamic_configuration_changes_the_running_broker(broker, admin, topic):
    answer = admin.post("/admin/v2/brokers/configuration/allowAutoTopicCreation/false")
    assert answer.status_code == 204
    assert admin.get("/admin/v2/brokers/configuration/values").json() == {"allowAutoTopicCreation": "false"}
    assert broker.broker.config.allow_auto_topic_creation is False
    client = pulsar.Client(broker.url, operation_timeout_seconds=5, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.TopicNotFound):
            client.create_producer(topic)
    finally:
        client.close()
    refused = admin.post("/admin/v2/brokers/configuration/clusterName/other")
    assert refused.status_code == 412 and "not dynamic" in refused.json()["reason"]
    bad = admin.post("/admin/v2/brokers/configuration/defaultNumPartitions/zero")
    assert bad.status_code == 412 and "defaultNumPartitions" in bad.json()["reason"]


def test_dynamic_configuration_survives_a_restart(broker_factory, tmp_path):
    first = broker_factory(data_dir=tmp_path / "d")
    assert Admin(first.broker.web_service_url).post(
        "/admin/v2/brokers/configuration/defaultNumPartitions/4").status_code == 204
    first.stop()
    second = broker_factory(data_dir=tmp_path / "d")
    assert second.broker.config.default_num_partitions == 4


def test_errors_are_json_reasons(admin):
    unknown = admin.get("/admin/v2/no/such/path/here/at/all")
    assert unknown.status_code == 404 and "reason" in unknown.json()
    bad_json = admin.put("/admin/v2/tenants/acme", data="{not json", headers={"Content-Type": "application/json"})
    assert bad_json.status_code == 400 and "JSON" in bad_json.json()["reason"]
    wrong_method = admin.session.patch(admin.base_url + "/admin/v2/tenants")
    assert wrong_method.status_code == 405 and "reason" in wrong_method.json()


def test_openapi_document_lists_every_route(admin):
    doc = admin.get("/admin/v2/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    paths = doc["paths"]
    assert "get" in paths["/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}"]
    assert {"put", "delete"} <= set(paths["/admin/v2/tenants/{tenant}"])
    assert "post" in paths["/admin/v2/{domain}/{tenant}/{namespace}/{topic}/subscription/{subscription}/resetcursor/{timestamp}"]
