"""Clusters, tenants and namespaces: /admin/v2/clusters, /admin/v2/tenants, /admin/v2/namespaces.

JSON shapes are Pulsar's: ClusterData {"serviceUrl", "brokerServiceUrl", ...}, TenantInfo
{"adminRoles", "allowedClusters"}, namespace Policies. A tenant with namespaces, or a namespace
with topics, is not deleted (409), as in Pulsar. Source: Pulsar ClustersBase, TenantsBase,
NamespacesBase.
"""
from __future__ import annotations

from aiohttp import web

from minipulsar.broker.namespaces import new_tenant_info
from minipulsar.broker.web.context import broker_of, json_body, no_content
from minipulsar.broker.web.errors import bad_request, conflict, not_found, precondition_failed
from minipulsar.broker.web.routes import OBJECT, STRING_LIST, RouteTable

CLUSTER_DATA = {"type": "object", "properties": {
    "serviceUrl": {"type": "string"}, "serviceUrlTls": {"type": "string"},
    "brokerServiceUrl": {"type": "string"}, "brokerServiceUrlTls": {"type": "string"}}}
TENANT_INFO = {"type": "object", "properties": {
    "adminRoles": STRING_LIST, "allowedClusters": STRING_LIST}}


def add_routes(table: RouteTable) -> None:
    table.add("GET", "/admin/v2/clusters", list_clusters, "the clusters", "clusters", response=STRING_LIST)
    table.add("GET", "/admin/v2/clusters/{cluster}", get_cluster, "a cluster's ClusterData", "clusters",
              response=CLUSTER_DATA)
    table.add("PUT", "/admin/v2/clusters/{cluster}", create_cluster, "create a cluster", "clusters",
              body=CLUSTER_DATA, status=204)
    table.add("POST", "/admin/v2/clusters/{cluster}", update_cluster, "update a cluster", "clusters",
              body=CLUSTER_DATA, status=204)
    table.add("DELETE", "/admin/v2/clusters/{cluster}", delete_cluster, "delete a cluster", "clusters", status=204)
    table.add("GET", "/admin/v2/tenants", list_tenants, "the tenants", "tenants", response=STRING_LIST)
    table.add("GET", "/admin/v2/tenants/{tenant}", get_tenant, "a tenant's TenantInfo", "tenants",
              response=TENANT_INFO)
    table.add("PUT", "/admin/v2/tenants/{tenant}", create_tenant, "create a tenant", "tenants",
              body=TENANT_INFO, status=204)
    table.add("POST", "/admin/v2/tenants/{tenant}", update_tenant, "update a tenant", "tenants",
              body=TENANT_INFO, status=204)
    table.add("DELETE", "/admin/v2/tenants/{tenant}", delete_tenant, "delete an empty tenant", "tenants", status=204)
    table.add("GET", "/admin/v2/namespaces/{tenant}", list_namespaces, "a tenant's namespaces", "namespaces",
              response=STRING_LIST)
    table.add("GET", "/admin/v2/namespaces/{tenant}/{namespace}", get_policies, "a namespace's policies",
              "namespaces", response=OBJECT)
    table.add("PUT", "/admin/v2/namespaces/{tenant}/{namespace}", create_namespace, "create a namespace",
              "namespaces", body=OBJECT, status=204)
    table.add("DELETE", "/admin/v2/namespaces/{tenant}/{namespace}", delete_namespace,
              "delete a namespace without topics", "namespaces", status=204)


# ---- clusters ------------------------------------------------------------------------------
def _clusters(request: web.Request) -> dict[str, dict]:
    """Every known cluster: this one (its own URLs), the configured replication peers, and those
    created through this API."""
    broker = broker_of(request)
    clusters = {name: {"serviceUrl": "", "brokerServiceUrl": url}
                for name, url in broker.replication.configured.peers.items()}
    clusters.update(broker.metadata.data.get("clusters", {}))
    clusters[broker.config.cluster_name] = {"serviceUrl": broker.web_service_url,
                                            "brokerServiceUrl": broker.service_url}
    return clusters


async def list_clusters(request: web.Request) -> web.Response:
    return web.json_response(sorted(_clusters(request)))


async def get_cluster(request: web.Request) -> web.Response:
    name = request.match_info["cluster"]
    data = _clusters(request).get(name)
    if data is None:
        raise not_found(f"Cluster {name} does not exist")
    return web.json_response(data)


async def _cluster_data(request: web.Request) -> dict:
    data = await json_body(request, {})
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise bad_request("ClusterData must be a JSON object of URL strings")
    unknown = set(data) - set(CLUSTER_DATA["properties"])
    if unknown:
        raise bad_request(f"unknown ClusterData fields {sorted(unknown)}")
    return data


async def create_cluster(request: web.Request) -> web.Response:
    name = request.match_info["cluster"]
    if name in _clusters(request):
        raise conflict(f"Cluster {name} already exists")
    await _store_cluster(request, name, await _cluster_data(request))
    return no_content()


async def update_cluster(request: web.Request) -> web.Response:
    name = request.match_info["cluster"]
    if name not in _clusters(request):
        raise not_found(f"Cluster {name} does not exist")
    if name == broker_of(request).config.cluster_name:
        raise precondition_failed(f"Cluster {name} is this broker's own; its URLs come from its configuration")
    await _store_cluster(request, name, await _cluster_data(request))
    return no_content()


async def _store_cluster(request: web.Request, name: str, data: dict) -> None:
    """Keep the cluster, and let replication follow its (new) broker service URL at once."""
    broker = broker_of(request)
    broker.metadata.data.setdefault("clusters", {})[name] = data
    await broker.metadata.save()
    await broker.reconfigure_replication()


async def delete_cluster(request: web.Request) -> web.Response:
    broker = broker_of(request)
    name = request.match_info["cluster"]
    stored = broker.metadata.data.get("clusters", {})
    if name not in _clusters(request):
        raise not_found(f"Cluster {name} does not exist")
    if name not in stored:
        raise precondition_failed(f"Cluster {name} comes from the broker's configuration, not this API")
    users = [t for t in broker.namespaces.tenants() if name in broker.namespaces.tenant_info(t)["allowedClusters"]]
    if users:
        raise precondition_failed(f"Cluster {name} is still allowed for tenants {users}")
    del stored[name]
    await broker.metadata.save()
    await broker.reconfigure_replication()
    return no_content()


# ---- tenants -------------------------------------------------------------------------------
async def list_tenants(request: web.Request) -> web.Response:
    return web.json_response(broker_of(request).namespaces.tenants())


async def get_tenant(request: web.Request) -> web.Response:
    tenant = request.match_info["tenant"]
    info = broker_of(request).namespaces.tenant_info(tenant)
    if info is None:
        raise not_found(f"Tenant {tenant} does not exist")
    return web.json_response(info)


async def _tenant_info(request: web.Request) -> dict:
    body = await json_body(request, {})
    if not isinstance(body, dict):
        raise bad_request("TenantInfo must be a JSON object")
    roles, clusters = body.get("adminRoles", []), body.get("allowedClusters", [])
    if not all(isinstance(v, list) and all(isinstance(s, str) for s in v) for v in (roles, clusters)):
        raise bad_request("adminRoles and allowedClusters must be lists of strings")
    unknown = set(clusters) - set(_clusters(request))
    if unknown:
        raise precondition_failed(f"Clusters {sorted(unknown)} do not exist")
    return new_tenant_info(clusters or [broker_of(request).config.cluster_name], roles)


async def create_tenant(request: web.Request) -> web.Response:
    broker = broker_of(request)
    tenant = request.match_info["tenant"]
    if broker.namespaces.tenant_exists(tenant):
        raise conflict(f"Tenant {tenant} already exists")
    broker.namespaces.put_tenant(tenant, await _tenant_info(request))
    await broker.metadata.save()
    return no_content()


async def update_tenant(request: web.Request) -> web.Response:
    broker = broker_of(request)
    tenant = request.match_info["tenant"]
    if not broker.namespaces.tenant_exists(tenant):
        raise not_found(f"Tenant {tenant} does not exist")
    broker.namespaces.put_tenant(tenant, await _tenant_info(request))
    await broker.metadata.save()
    return no_content()


async def delete_tenant(request: web.Request) -> web.Response:
    broker = broker_of(request)
    tenant = request.match_info["tenant"]
    if not broker.namespaces.tenant_exists(tenant):
        raise not_found(f"Tenant {tenant} does not exist")
    if broker.namespaces.namespaces_of(tenant):
        raise conflict(f"The tenant {tenant} still has active namespaces")
    broker.namespaces.remove_tenant(tenant)
    await broker.metadata.save()
    return no_content()


# ---- namespaces ----------------------------------------------------------------------------
async def list_namespaces(request: web.Request) -> web.Response:
    broker = broker_of(request)
    tenant = request.match_info["tenant"]
    if not broker.namespaces.tenant_exists(tenant):
        raise not_found(f"Tenant {tenant} does not exist")
    return web.json_response(broker.namespaces.namespaces_of(tenant))


def _namespace(request: web.Request) -> str:
    return f"{request.match_info['tenant']}/{request.match_info['namespace']}"


async def get_policies(request: web.Request) -> web.Response:
    namespace = _namespace(request)
    policies = broker_of(request).namespaces.policies(namespace)
    if policies is None:
        raise not_found(f"Namespace {namespace} does not exist")
    return web.json_response(policies)


async def create_namespace(request: web.Request) -> web.Response:
    broker = broker_of(request)
    namespace = _namespace(request)
    if not broker.namespaces.tenant_exists(request.match_info["tenant"]):
        raise not_found(f"Tenant {request.match_info['tenant']} does not exist")
    if broker.namespaces.exists(namespace):
        raise conflict(f"Namespace {namespace} already exists")
    policies = await json_body(request, {})
    if not isinstance(policies, dict):
        raise bad_request("namespace Policies must be a JSON object")
    broker.namespaces.put_namespace(namespace, policies)
    await broker.metadata.save()
    return no_content()


async def delete_namespace(request: web.Request) -> web.Response:
    broker = broker_of(request)
    namespace = _namespace(request)
    if not broker.namespaces.exists(namespace):
        raise not_found(f"Namespace {namespace} does not exist")
    if broker.list_topics(namespace):
        raise conflict(f"Cannot delete non empty namespace {namespace}")
    broker.namespaces.remove_namespace(namespace)
    await broker.metadata.save()
    return no_content()
