"""Clusters, tenants and namespaces through the admin API, persisted across a restart, with
Pulsar's status codes; a namespace created here takes topics from the official client."""
import pulsar
import pytest

from tests.helpers import Admin


def test_standalone_defaults(admin, broker):
    assert admin.get("/admin/v2/clusters").json() == ["standalone"]
    assert admin.get("/admin/v2/clusters/standalone").json() == {
        "serviceUrl": broker.broker.web_service_url, "brokerServiceUrl": broker.url}
    assert admin.get("/admin/v2/tenants").json() == ["public", "pulsar"]
    assert admin.get("/admin/v2/tenants/public").json() == {"adminRoles": [], "allowedClusters": ["standalone"]}
    assert admin.get("/admin/v2/namespaces/public").json() == ["public/default"]
    assert admin.get("/admin/v2/namespaces/pulsar").json() == ["pulsar/system"]


def test_tenant_and_namespace_lifecycle(admin, official):
    assert admin.put("/admin/v2/tenants/acme", json={"adminRoles": ["ops"], "allowedClusters": ["standalone"]}).status_code == 204
    assert admin.put("/admin/v2/tenants/acme", json={}).status_code == 409
    assert admin.get("/admin/v2/tenants/acme").json() == {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    assert admin.post("/admin/v2/tenants/acme", json={"adminRoles": ["dev"]}).status_code == 204
    assert admin.get("/admin/v2/tenants/acme").json()["adminRoles"] == ["dev"]
    assert admin.put("/admin/v2/tenants/bad", json={"allowedClusters": ["nowhere"]}).status_code == 412

    with pytest.raises(pulsar.TopicNotFound):
        official.create_producer("persistent://acme/orders/t")
    assert admin.put("/admin/v2/namespaces/acme/orders").status_code == 204
    assert admin.put("/admin/v2/namespaces/acme/orders").status_code == 409
    assert admin.put("/admin/v2/namespaces/nobody/orders").status_code == 404
    assert admin.get("/admin/v2/namespaces/acme").json() == ["acme/orders"]
    assert admin.get("/admin/v2/namespaces/acme/orders").json() == {}
    official.create_producer("persistent://acme/orders/t").send(b"x")

    assert admin.delete("/admin/v2/tenants/acme").status_code == 409
    assert admin.delete("/admin/v2/namespaces/acme/orders").status_code == 409  # it holds a topic
    assert admin.delete("/admin/v2/persistent/acme/orders/t", params={"force": "true"}).status_code == 204
    assert admin.delete("/admin/v2/namespaces/acme/orders").status_code == 204
    assert admin.get("/admin/v2/namespaces/acme/orders").status_code == 404
    assert admin.delete("/admin/v2/tenants/acme").status_code == 204
    assert admin.get("/admin/v2/tenants/acme").status_code == 404


def test_tenants_namespaces_and_clusters_survive_a_restart(broker_factory, tmp_path):
    first = broker_factory(data_dir=tmp_path / "d")
    admin = Admin(first.broker.web_service_url)
    assert admin.put("/admin/v2/clusters/east", json={"brokerServiceUrl": "pulsar://east:6650"}).status_code == 204
    assert admin.put("/admin/v2/tenants/acme", json={"allowedClusters": ["standalone", "east"]}).status_code == 204
    assert admin.put("/admin/v2/namespaces/acme/orders").status_code == 204
    first.stop()
    admin = Admin(broker_factory(data_dir=tmp_path / "d").broker.web_service_url)
    assert admin.get("/admin/v2/clusters").json() == ["east", "standalone"]
    assert admin.get("/admin/v2/clusters/east").json() == {"brokerServiceUrl": "pulsar://east:6650"}
    assert admin.get("/admin/v2/tenants/acme").json()["allowedClusters"] == ["standalone", "east"]
    assert admin.get("/admin/v2/namespaces/acme").json() == ["acme/orders"]


def test_cluster_rules(admin):
    assert admin.get("/admin/v2/clusters/nowhere").status_code == 404
    assert admin.put("/admin/v2/clusters/standalone", json={}).status_code == 409
    assert admin.post("/admin/v2/clusters/standalone", json={}).status_code == 412
    assert admin.put("/admin/v2/clusters/west", json={"bogus": "x"}).status_code == 400
    assert admin.put("/admin/v2/clusters/west", json={"brokerServiceUrl": "pulsar://w:6650"}).status_code == 204
    assert admin.post("/admin/v2/clusters/west", json={"brokerServiceUrl": "pulsar://w2:6650"}).status_code == 204
    assert admin.put("/admin/v2/tenants/t1", json={"allowedClusters": ["west"]}).status_code == 204
    assert admin.delete("/admin/v2/clusters/west").status_code == 412  # a tenant still allows it
    assert admin.delete("/admin/v2/tenants/t1").status_code == 204
    assert admin.delete("/admin/v2/clusters/west").status_code == 204
    assert admin.delete("/admin/v2/clusters/standalone").status_code == 412
