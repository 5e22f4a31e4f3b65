"""Replication configured at run time through the admin API, between two brokers: a cluster
created on `a` with `b`'s broker service URL and the namespace's replication clusters start the
replicator; taking `b` out of the namespace's clusters stops it and drops its cursor."""
import pulsar

from tests.helpers import Admin, drain, wait_for

NS = "/admin/v2/namespaces/public/default"


def client(broker) -> pulsar.Client:
    return pulsar.Client(broker.url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def test_replication_clusters_added_and_removed_at_run_time(broker_factory, topic):
    a, b = broker_factory(clusterName="a"), broker_factory(clusterName="b")
    admin = Admin(a.broker.web_service_url)
    assert admin.post(NS + "/replication", json=["a", "b"]).status_code == 412  # b is unknown yet
    assert admin.put("/admin/v2/clusters/b", json={"brokerServiceUrl": b.url}).status_code == 204
    assert admin.post(NS + "/replication", json=["a", "b"]).status_code == 412  # not allowed for the tenant
    assert admin.post("/admin/v2/tenants/public", json={"allowedClusters": ["a", "b"]}).status_code == 204
    assert admin.post(NS + "/replication", json=["a", "b"]).status_code == 204
    assert admin.get(NS + "/replication").json() == ["a", "b"]

    ca, cb = client(a), client(b)
    try:
        consumer_b = cb.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = ca.create_producer(topic)
        for i in range(5):
            producer.send(str(i).encode())
        received = []
        wait_for(lambda: received.extend(int(m.data()) for m in drain(consumer_b, 200)) or len(received) >= 5,
                 "the messages to reach b")
        assert received == list(range(5))
        internal = admin.get("/admin/v2/persistent/" + topic.split("://", 1)[1] + "/internalStats").json()
        assert "pulsar.repl.b" in internal["cursors"]

        assert admin.post(NS + "/replication", json=["a"]).status_code == 204
        wait_for(lambda: "pulsar.repl.b" not in admin.get(
            "/admin/v2/persistent/" + topic.split("://", 1)[1] + "/internalStats").json()["cursors"],
            "the replicator and its cursor to go")
        producer.send(b"local only")
        assert drain(consumer_b, 1000) == []  # nothing more reaches b
    finally:
        ca.close()
        cb.close()
