"""Namespace policies: GET, set and DELETE /admin/v2/namespaces/{tenant}/{namespace}/{policy}.

One route triple per policy of broker/namespace_policies.py, under Pulsar's paths and JSON: GET
answers the namespace's own value (null when it has none: the broker's setting applies); set takes
the value as the JSON body; DELETE removes it. A bad value is 412 with the reason, as Pulsar.
Source: Pulsar NamespacesBase / Namespaces (v2 REST).
"""
from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from minipulsar.broker.backlog_quota import QUOTA_TYPES, RETENTION_POLICIES
from minipulsar.broker.namespace_policies import PolicyError
from minipulsar.broker.web.context import broker_of, json_body, no_content
from minipulsar.broker.web.errors import bad_request, not_found, precondition_failed
from minipulsar.broker.web.routes import Query, RouteTable
from minipulsar.broker.web.topic_path import namespace_name

_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}


@dataclass(frozen=True)
class PolicyPath:
    """name: the policy (and path segment); set_method: POST or PUT; body: its JSON schema (None:
    the set call takes no body and means true); unset: what GET answers when the namespace has no
    value; removable: whether DELETE exists (Pulsar has none for schemaCompatibilityStrategy)."""

    name: str
    set_method: str
    body: dict | None
    summary: str
    unset: object = None
    removable: bool = True


PATHS = (
    PolicyPath("messageTTL", "POST", _INT, "message TTL in seconds (messages older are expired)"),
    PolicyPath("deduplication", "POST", _BOOL, "message deduplication"),
    PolicyPath("subscriptionTypesEnabled", "POST", {"type": "array", "items": {"type": "string", "enum": [
        "Exclusive", "Shared", "Failover", "Key_Shared", "Key_Failover"]}}, "the subscription types allowed",
        unset=[]),
    PolicyPath("maxUnackedMessagesPerConsumer", "POST", _INT, "unacknowledged messages a consumer may hold"),
    PolicyPath("dispatcherPauseOnAckStatePersistent", "POST", None,
               "pause dispatch while the ack state cannot be persisted (PIP-299)", unset=False),
    PolicyPath("schemaCompatibilityStrategy", "PUT", {"type": "string"}, "the schema compatibility strategy",
               unset="UNDEFINED", removable=False),
    PolicyPath("delayedDelivery", "POST", {"type": "object", "properties": {
        "active": _BOOL, "tickTime": _INT, "maxDeliveryDelayInMillis": _INT}, "required": ["active"]},
        "delayed delivery (DelayedDeliveryPolicies)"),
    PolicyPath("retention", "POST", {"type": "object", "properties": {
        "retentionTimeInMinutes": _INT, "retentionSizeInMB": _INT}}, "retention of consumed messages"),
    PolicyPath("isAllowAutoUpdateSchema", "POST", _BOOL, "whether producers may add schema versions",
               removable=False),
    PolicyPath("replication", "POST", {"type": "array", "items": {"type": "string"}},
               "the clusters the namespace replicates to", unset=[], removable=False),
    PolicyPath("maxTopicsPerNamespace", "POST", _INT, "topics the namespace may hold (0: no limit)"),
    PolicyPath("maxProducersPerTopic", "POST", _INT, "producers a topic may have (0: no limit)"),
    PolicyPath("maxConsumersPerSubscription", "POST", _INT, "consumers a subscription may have (0: no limit)"),
)


BACKLOG_QUOTA = {"type": "object", "properties": {
    "limitSize": _INT, "limitTime": _INT, "policy": {"type": "string", "enum": list(RETENTION_POLICIES)}}}
QUOTA_TYPE = Query("backlogQuotaType", description="destination_storage (default) or message_age")


def add_routes(table: RouteTable) -> None:
    base = "/admin/v2/namespaces/{tenant}/{namespace}"
    table.add("GET", base + "/backlogQuotaMap", get_backlog_quotas, "the backlog quotas by type", "namespaces",
              response={"type": "object", "additionalProperties": BACKLOG_QUOTA})
    table.add("POST", base + "/backlogQuota", set_backlog_quota, "set a backlog quota", "namespaces",
              query=(QUOTA_TYPE,), body=BACKLOG_QUOTA, status=204)
    table.add("DELETE", base + "/backlogQuota", remove_backlog_quota, "remove a backlog quota", "namespaces",
              query=(QUOTA_TYPE,), status=204)
    for path in PATHS:
        url = "/admin/v2/namespaces/{tenant}/{namespace}/" + path.name
        table.add("GET", url, _getter(path), f"get the {path.summary}", "namespaces",
                  response={"nullable": True})
        table.add(path.set_method, url, _setter(path), f"set the {path.summary}", "namespaces",
                  body=path.body, status=204)
        if path.removable:
            table.add("DELETE", url, _remover(path.name), f"remove the {path.summary}", "namespaces", status=204)


def _existing_namespace(request: web.Request) -> str:
    namespace = namespace_name(request)
    if not broker_of(request).namespaces.exists(namespace):
        raise not_found(f"Namespace {namespace} does not exist")
    return namespace


def _getter(path: PolicyPath):
    async def get(request: web.Request) -> web.Response:
        value = broker_of(request).policies.get(_existing_namespace(request), path.name)
        return web.json_response(path.unset if value is None else value)
    return get


def _setter(path: PolicyPath):
    async def set_policy(request: web.Request) -> web.Response:
        namespace = _existing_namespace(request)
        value = True if path.body is None else await json_body(request)
        try:
            await broker_of(request).policies.set(namespace, path.name, value)
        except PolicyError as exc:
            raise precondition_failed(f"Invalid value for {path.name}: {exc}") from exc
        return no_content()
    return set_policy


def _remover(name: str):
    async def remove(request: web.Request) -> web.Response:
        await broker_of(request).policies.remove(_existing_namespace(request), name)
        return no_content()
    return remove


# ---- backlog quotas (a map by quota type, set and removed one type at a time) --------------
def _quota_type(request: web.Request) -> str:
    kind = request.query.get("backlogQuotaType", "destination_storage")
    if kind not in QUOTA_TYPES:
        raise bad_request(f"backlogQuotaType must be one of {', '.join(QUOTA_TYPES)}, not {kind!r}")
    return kind


async def get_backlog_quotas(request: web.Request) -> web.Response:
    namespace = _existing_namespace(request)
    return web.json_response(broker_of(request).policies.get(namespace, "backlogQuota") or {})


async def set_backlog_quota(request: web.Request) -> web.Response:
    namespace, kind = _existing_namespace(request), _quota_type(request)
    await _store_quotas(request, namespace, {**_quotas(request, namespace), kind: await json_body(request)})
    return no_content()


async def remove_backlog_quota(request: web.Request) -> web.Response:
    namespace, kind = _existing_namespace(request), _quota_type(request)
    quotas = _quotas(request, namespace)
    quotas.pop(kind, None)
    await _store_quotas(request, namespace, quotas)
    return no_content()


def _quotas(request: web.Request, namespace: str) -> dict:
    return dict(broker_of(request).policies.get(namespace, "backlogQuota") or {})


async def _store_quotas(request: web.Request, namespace: str, quotas: dict) -> None:
    try:
        await broker_of(request).policies.set(namespace, "backlogQuota", quotas)
    except PolicyError as exc:
        raise bad_request(f"Invalid backlog quota: {exc}") from exc
