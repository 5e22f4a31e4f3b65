"""Who may open a WebSocket session, and the HTTP status of an upgrade that is refused.

With authenticationEnabled the upgrade request must carry credentials a provider accepts, as any
web request: `Authorization: Bearer <token>`, or a client certificate on the TLS web port; the
`token` query parameter stands for the header when the request has none (browsers cannot set
headers on a WebSocket), with or without its "Bearer " prefix. No valid credentials: 401 "Failed
to authenticate". With authorizationEnabled, a producer needs `produce` and a consumer or reader
`consume` on the topic (tenant admins and super-users may do both): 403 "Not authorized".
Creating the client handle may still fail; `creation_refusal` gives the status Pulsar answers
for each failure. Source: Pulsar AbstractWebSocketHandler (checkAuth, getErrorCode,
getErrorMessage), WebSocketHttpServletRequestWrapper (the token parameter).
"""
from __future__ import annotations

import logging

from aiohttp import web
from multidict import CIMultiDict

from minipulsar.broker.security.authentication import AuthenticationService
from minipulsar.broker.security.authorization import AuthorizationService
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.tls_context import peer_certificate
from minipulsar.broker.topic_name import TopicName
from minipulsar.broker.web.errors import RestError
from minipulsar.broker.web.websocket.params import InvalidParam
from minipulsar.client import exceptions as client_errors

log = logging.getLogger(__name__)

BEARER = "Bearer "
# The client's failure -> the status Pulsar answers the upgrade with (anything else: 500).
_STATUS = (
    ((client_errors.InvalidConfiguration, InvalidParam), 400),
    ((client_errors.AuthenticationError,), 401),
    ((client_errors.AuthorizationError,), 403),
    ((client_errors.TopicNotFound, client_errors.SubscriptionNotFound), 404),
    ((client_errors.ProducerBusy, client_errors.ConsumerBusy, client_errors.ProducerFenced,
      client_errors.IncompatibleSchema), 409),
    ((client_errors.TooManyLookupRequestException,), 429),
    ((client_errors.ProducerBlockedQuotaExceededError, client_errors.ProducerBlockedQuotaExceededException,
      client_errors.TopicTerminated), 503),
    ((client_errors.Timeout,), 504),
)


def authenticate(authentication: AuthenticationService | None, request: web.Request) -> str | None:
    """The role of the upgrade request (None without authentication); raises RestError 401."""
    if authentication is None:
        return None
    headers = CIMultiDict(request.headers)
    token = request.query.get("token")
    if "Authorization" not in headers and token is not None:
        headers["Authorization"] = token if token.startswith(BEARER) else BEARER + token
    try:
        return authentication.authenticate_http(headers, peer_certificate(request.transport)).role
    except AuthenticationFailedError as exc:
        log.warning("%s %s: WebSocket authentication failed: %s", request.remote, request.path, exc)
        raise RestError(401, "Failed to authenticate") from None


def authorize(authorization: AuthorizationService | None, kind: str, topic: str, role: str | None,
              request: web.Request) -> None:
    """Raise RestError 403 unless role may open a `kind` session on topic (None: authorization off)."""
    if authorization is None:
        return
    name = TopicName.parse(topic)
    allowed = authorization.can_produce(name, role) if kind == "producer" else authorization.can_consume(name, role)
    if not allowed:
        log.warning("%s: WebSocket %s with role %s is not authorized on %s", request.remote, kind, role, topic)
        raise RestError(403, "Not authorized")


def creation_refusal(exc: Exception, kind: str) -> RestError:
    """The upgrade's answer when the client handle could not be created: Pulsar's status, and its
    message ("Invalid query params: ..." or "Failed to create <kind>: ..."). A reader's failures
    are all 500, as Pulsar's ReaderHandler answers them."""
    status = next((code for kinds, code in _STATUS if isinstance(exc, kinds)), 500)
    detail = str(exc) or type(exc).__name__
    if status == 400:
        return RestError(400, f"Invalid query params: {detail}")
    return RestError(500 if kind == "reader" else status, f"Failed to create {kind}: {detail}")
