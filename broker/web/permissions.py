"""Permissions: grant, list and revoke what roles may do on a namespace or a topic, on Pulsar's paths.

    GET    /admin/v2/namespaces/{tenant}/{namespace}/permissions          {role: [actions]}
    POST   /admin/v2/namespaces/{tenant}/{namespace}/permissions/{role}   body ["produce", "consume"]
    DELETE /admin/v2/namespaces/{tenant}/{namespace}/permissions/{role}
    GET    /admin/v2/{domain}/{tenant}/{namespace}/{topic}/permissions    namespace's and topic's, united
    POST   /admin/v2/{domain}/{tenant}/{namespace}/{topic}/permissions/{role}
    DELETE /admin/v2/{domain}/{tenant}/{namespace}/{topic}/permissions/{role}   412 when not set on the topic

Actions are Pulsar's AuthAction names (broker/security/permissions.py); a grant replaces the
role's earlier grant at that level. Only tenant admins and super-users reach these paths when
authorization is on (broker/security/web.py). Source: Pulsar NamespacesBase
internalGrantPermissionOnNamespace / internalRevokePermissionsOnNamespace, PersistentTopicsBase
internalGetPermissionsOnTopic / internalGrantPermissionsOnTopic / internalRevokePermissionsOnTopic.
"""
from __future__ import annotations

from aiohttp import web
from minipulsar.broker.security.permissions import AUTH_ACTIONS, parse_actions
from minipulsar.broker.web.context import broker_of, json_body, no_content
from minipulsar.broker.web.errors import bad_request, not_found, precondition_failed
from minipulsar.broker.web.routes import RouteTable
from minipulsar.broker.web.topic_path import TOPIC_PATH, namespace_name, topic_name

ACTIONS = {"type": "array", "items": {"type": "string", "enum": list(AUTH_ACTIONS)}}
PERMISSIONS = {"type": "object", "additionalProperties": ACTIONS}
NAMESPACE = "/admin/v2/namespaces/{tenant}/{namespace}/permissions"
TOPIC = "/admin/v2" + TOPIC_PATH + "/permissions"


def add_routes(table: RouteTable) -> None:
    table.add("GET", NAMESPACE, get_namespace_permissions, "the roles' permissions on a namespace", "namespaces",
              response=PERMISSIONS)
    table.add("POST", NAMESPACE + "/{role}", grant_namespace_permission, "grant a role actions on a namespace",
              "namespaces", body=ACTIONS, status=204)
    table.add("DELETE", NAMESPACE + "/{role}", revoke_namespace_permission, "revoke a role's namespace permissions",
              "namespaces", status=204)
    table.add("GET", TOPIC, get_topic_permissions, "the roles' permissions on a topic (with its namespace's)",
              "topics", response=PERMISSIONS)
    table.add("POST", TOPIC + "/{role}", grant_topic_permission, "grant a role actions on a topic", "topics",
              body=ACTIONS, status=204)
    table.add("DELETE", TOPIC + "/{role}", revoke_topic_permission, "revoke a role's permissions on a topic",
              "topics", status=204)


def _existing_namespace(request: web.Request) -> str:
    namespace = namespace_name(request)
    if not broker_of(request).namespaces.exists(namespace):
        raise not_found(f"Namespace {namespace} does not exist")
    return namespace


async def _actions(request: web.Request) -> list[str]:
    try:
        return parse_actions(await json_body(request, []))
    except ValueError as exc:
        raise bad_request(str(exc)) from None


async def get_namespace_permissions(request: web.Request) -> web.Response:
    namespace = _existing_namespace(request)
    return web.json_response(broker_of(request).security.permissions.namespace_permissions(namespace))


async def grant_namespace_permission(request: web.Request) -> web.Response:
    namespace = _existing_namespace(request)
    actions = await _actions(request)
    await broker_of(request).security.permissions.grant_namespace(namespace, request.match_info["role"], actions)
    return no_content()


async def revoke_namespace_permission(request: web.Request) -> web.Response:
    namespace = _existing_namespace(request)
    await broker_of(request).security.permissions.revoke_namespace(namespace, request.match_info["role"])
    return no_content()


async def get_topic_permissions(request: web.Request) -> web.Response:
    topic = str(topic_name(request))
    permissions = broker_of(request).security.permissions
    merged = {role: set(actions) for role, actions in
              permissions.namespace_permissions(_existing_namespace(request)).items()}
    for role, actions in permissions.topic_permissions(topic).items():
        merged.setdefault(role, set()).update(actions)
    return web.json_response({role: sorted(actions) for role, actions in merged.items()})


async def grant_topic_permission(request: web.Request) -> web.Response:
    topic = str(topic_name(request))
    _existing_namespace(request)
    actions = await _actions(request)
    await broker_of(request).security.permissions.grant_topic(topic, request.match_info["role"], actions)
    return no_content()


async def revoke_topic_permission(request: web.Request) -> web.Response:
    topic = str(topic_name(request))
    _existing_namespace(request)
    role = request.match_info["role"]
    if not await broker_of(request).security.permissions.revoke_topic(topic, role):
        raise precondition_failed(f"Permissions are not set at the topic level for role {role} on {topic}")
    return no_content()
