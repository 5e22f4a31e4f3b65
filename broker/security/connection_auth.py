"""One binary connection's authentication, as Pulsar's ServerCnx keeps it: the role CONNECT
established, and the periodic refresh of credentials that expire while the client stays connected.

At CONNECT the credentials go to the AuthenticationService. A refusal is answered as Pulsar answers
it: ERROR with request_id -1, ServerError AuthenticationError and "Failed to authenticate" (the
broker's log says why; the client is told no more), then the connection closes.

Every authenticationRefreshCheckSeconds the connection's credentials are looked at (Pulsar's
refreshAuthenticationCredentials). Expired ones get AUTH_CHALLENGE carrying "PulsarAuthRefresh";
the client answers AUTH_RESPONSE with fresh credentials (the official client asks its token
supplier again). The connection is closed when those do not verify (ERROR first, as at CONNECT),
when they name another role, when the client never announced `supports_auth_refresh`, or when the
previous challenge is still unanswered at the next check.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minipulsar.broker.security.authentication import AuthenticationService
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.state import AuthState
from minipulsar.proto import BROKER_INITIATED_REQUEST_ID
from minipulsar.proto import PulsarApi_pb2 as api

if TYPE_CHECKING:
    from minipulsar.broker.connection import ServerConnection

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type
REFRESH_AUTH_DATA = b"PulsarAuthRefresh"  # Pulsar's AuthData.REFRESH_AUTH_DATA
AUTH_FAILED_MESSAGE = "Failed to authenticate"  # all a refused client is told, as Pulsar


def connect_method(connect: api.CommandConnect) -> str:
    """CONNECT's auth method name ("none" when the client sent none)."""
    return connect.auth_method_name if connect.HasField("auth_method_name") else "none"


def refuse(conn: "ServerConnection", operation: str, exc: AuthenticationFailedError) -> None:
    """Log why (never the credentials), answer ERROR AuthenticationError, close the connection."""
    log.warning("%s: authentication failed on %s: %s", conn.peer_address, operation, exc)
    conn.send_error(BROKER_INITIATED_REQUEST_ID, api.AuthenticationError, AUTH_FAILED_MESSAGE)
    conn.close()


class ConnectionAuth:
    """service: the broker's AuthenticationService; state: what CONNECT established;
    supports_refresh: CONNECT.feature_flags.supports_auth_refresh."""

    def __init__(self, service: AuthenticationService, state: AuthState, supports_refresh: bool):
        self.service = service
        self.state = state
        self.supports_refresh = supports_refresh
        self.pending_challenge = False
        self.refreshes = 0  # successful refreshes (broker stats, tests)
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    def connect(cls, service: AuthenticationService, conn: "ServerConnection",
                connect: api.CommandConnect) -> "ConnectionAuth | None":
        """Authenticate CONNECT's credentials; on refusal answer and close, and return None."""
        try:
            state = service.authenticate(connect_method(connect), connect.auth_data, conn.peer_certificate)
        except AuthenticationFailedError as exc:
            refuse(conn, "connect", exc)
            return None
        supports = connect.HasField("feature_flags") and connect.feature_flags.supports_auth_refresh
        return cls(service, state, supports)

    @property
    def role(self) -> str:
        return self.state.role

    # ---- refresh ---------------------------------------------------------------------------
    def schedule_refresh(self, conn: "ServerConnection", interval: float, server_version: str) -> None:
        """Check the credentials every interval seconds while conn is open."""
        loop = asyncio.get_running_loop()

        def tick() -> None:
            if conn.closed:
                return
            self._timer = loop.call_later(interval, tick)
            self.check_expiry(conn, server_version)

        self._timer = loop.call_later(interval, tick)

    def check_expiry(self, conn: "ServerConnection", server_version: str) -> None:
        """One refresh check: nothing while the credentials are valid, else challenge or close."""
        if not self.state.is_expired():
            return
        if not self.supports_refresh:
            log.warning("%s: closing connection: credentials of role %s expired and the client does not "
                        "support auth credentials refresh", conn.peer_address, self.role)
            conn.close()
            return
        if self.pending_challenge:
            log.warning("%s: closing connection after timeout on refreshing auth credentials of role %s",
                        conn.peer_address, self.role)
            conn.close()
            return
        log.info("%s: refreshing authentication credentials of role %s", conn.peer_address, self.role)
        self.pending_challenge = True
        conn.send(api.BaseCommand(type=Type.AUTH_CHALLENGE, authChallenge=api.CommandAuthChallenge(
            server_version=server_version, protocol_version=conn.protocol_version,
            challenge=api.AuthData(auth_method_name=self.state.method, auth_data=REFRESH_AUTH_DATA))))

    def respond(self, conn: "ServerConnection", response: api.CommandAuthResponse) -> None:
        """AUTH_RESPONSE: verify the new credentials with the provider that accepted the first ones."""
        self.pending_challenge = False
        data = response.response.auth_data if response.HasField("response") else b""
        try:
            state = self.service.authenticate(self.state.method, data, conn.peer_certificate)
        except AuthenticationFailedError as exc:
            refuse(conn, "authentication-refresh", exc)
            return
        if state.role != self.role:
            log.warning("%s: principal cannot change during an authentication refresh: expected=%s got=%s",
                        conn.peer_address, self.role, state.role)
            conn.close()
            return
        self.state = state
        self.refreshes += 1
        log.info("%s: refreshed authentication credentials for role %s", conn.peer_address, self.role)

    def cancel(self) -> None:
        """Stop the refresh checks (the connection closed)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
