"""The web service's authentication and authorization, as Pulsar's AuthenticationFilter and its
admin resources' access checks.

With authenticationEnabled every request but GET /metrics (unless authenticateMetricsEndpoint), the
WebSocket API's upgrades (which check their own, broker/web/websocket/admission.py) and the web
console's static files must carry credentials a provider accepts: `Authorization: Bearer <token>`,
or on the TLS web port
a client certificate (its CN). Without them the answer is 401 {"reason": "Authentication
required"}; why is logged, never the credentials.

With authorizationEnabled the role must also be allowed (403 otherwise), by path:
- HTTP lookup and a topic's partition metadata (what a client with an http:// service URL asks):
  `produce` or `consume` on the topic;
- the REST producer (POST /topics/...): `produce` on the topic;
- a namespace's topic list: `consume` on the namespace;
- Pulsar Functions (/admin/v3/functions/{tenant}/{namespace}/...): the tenant's admins and roles
  granted `functions` on the namespace; refused with 401 "client is not authorize to perform
  operation", Pulsar's answer there;
- creating, changing or deleting a tenant, and everything without a tenant in its path
  (clusters, brokers, the tenant list): super-users;
- everything else under a tenant (its namespaces, policies, topics, subscriptions, permissions):
  the tenant's admins (TenantInfo.adminRoles) and super-users.
"""
from __future__ import annotations

import logging

from aiohttp import web
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.service import BrokerSecurity
from minipulsar.broker.security.tls_context import peer_certificate
from minipulsar.broker.web.console import is_asset_request
from minipulsar.broker.web.errors import RestError
from minipulsar.broker.web.topic_path import topic_name

log = logging.getLogger(__name__)

ROLE: web.RequestKey[str] = web.RequestKey("role", str)  # the authenticated role, for handlers
NOT_TENANT_ADMIN = "Don't have permission to administrate resources on this tenant"
NOT_SUPER_USER = "This operation requires super-user access"
LIST_TOPICS = "/admin/v2/namespaces/{tenant}/{namespace}/topics"
FUNCTIONS = "/admin/v3/functions/"
NOT_FUNCTIONS_ROLE = "client is not authorize to perform operation"


def security_middleware(security: BrokerSecurity):
    """An aiohttp middleware enforcing security's authentication and authorization."""

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        if security.authentication is None or _public(request, security):
            return await handler(request)
        try:
            state = security.authentication.authenticate_http(request.headers, peer_certificate(request.transport))
        except AuthenticationFailedError as exc:
            log.warning("%s %s from %s: authentication failed: %s", request.method, request.path, request.remote, exc)
            raise RestError(401, "Authentication required") from None
        request[ROLE] = state.role
        if security.authorization is not None and request.match_info.http_exception is None:
            denial = access_denial(security, request, state.role)
            if denial is not None:
                log.warning("%s %s: %s (role %s)", request.method, request.path, denial, state.role)
                raise RestError(401 if denial == NOT_FUNCTIONS_ROLE else 403, denial)
        return await handler(request)

    return middleware


def _public(request: web.Request, security: BrokerSecurity) -> bool:
    """/metrics unless authenticateMetricsEndpoint; the WebSocket API's /ws/ paths, whose upgrades
    authenticate themselves (broker/web/websocket/admission.py: the token query parameter too);
    the web console's own files (never its data)."""
    if request.path.startswith("/ws/") or is_asset_request(request):
        return True
    return request.path == "/metrics" and not security.config.authenticate_metrics_endpoint


def access_denial(security: BrokerSecurity, request: web.Request, role: str) -> str | None:
    """Why role may not make this request (Pulsar's wording), or None when it may."""
    authorization = security.authorization
    info = request.match_info
    pattern = info.route.resource.canonical if info.route.resource is not None else request.path
    if pattern.startswith("/lookup/v2/topic/") or (request.method == "GET" and pattern.endswith("/{topic}/partitions")):
        return None if authorization.can_lookup(topic_name(request), role) else "Client is not authorized to Lookup"
    if pattern.startswith("/topics/"):  # the REST producer
        return None if authorization.can_produce(topic_name(request), role) else "Client is not authorized to Produce"
    if pattern.startswith(FUNCTIONS) and "namespace" in info:
        namespace = f"{info['tenant']}/{info['namespace']}"
        return None if authorization.can_operate_functions(namespace, role) else NOT_FUNCTIONS_ROLE
    if request.method == "GET" and pattern == LIST_TOPICS:
        namespace = f"{info['tenant']}/{info['namespace']}"
        return None if authorization.can_list_topics(namespace, role) else NOT_TENANT_ADMIN
    changes_tenant = pattern.startswith("/admin/v2/tenants/") and request.method != "GET"
    if "tenant" in info and not changes_tenant:
        return None if authorization.is_tenant_admin(info["tenant"], role) else NOT_TENANT_ADMIN
    if pattern == "/admin/v2/openapi.json":
        return None
    return None if authorization.is_super_user(role) else NOT_SUPER_USER
