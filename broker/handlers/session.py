"""CONNECT, AUTH_RESPONSE, PING and PONG: the connection handshake, credentials and keep-alive.

With authenticationEnabled, CONNECT's credentials are checked before CONNECTED (a refusal is
ERROR AuthenticationError, then close) and AUTH_RESPONSE answers the broker's refresh challenge
(broker/security/connection_auth.py)."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minipulsar.broker.security.connection_auth import ConnectionAuth
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import Frame

if TYPE_CHECKING:
    from minipulsar.broker.connection import ServerConnection

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type
MAX_PROTOCOL_VERSION = 20  # newest ProtocolVersion in our PulsarApi.proto
SERVER_VERSION = "minipulsar-0.1.0"


def handle_connect(conn: "ServerConnection", frame: Frame) -> None:
    """CONNECTED with server_version, min(client, 20) as protocol_version, and max_message_size."""
    connect = frame.command.connect
    if conn.connected:
        conn.protocol_error("second CONNECT on one connection", frame.command)
        return
    authentication = conn.broker.security.authentication
    if authentication is not None:
        conn.auth = ConnectionAuth.connect(authentication, conn, connect)
        if conn.auth is None:
            return  # refused and closed
    conn.connected = True
    conn.client_version = connect.client_version
    conn.protocol_version = min(connect.protocol_version, MAX_PROTOCOL_VERSION)
    conn.send(api.BaseCommand(type=Type.CONNECTED, connected=api.CommandConnected(
        server_version=SERVER_VERSION,
        protocol_version=conn.protocol_version,
        max_message_size=conn.broker.config.max_message_size,
    )))
    log.debug("%s connected: %s, protocol v%d", conn.peer_address, connect.client_version, conn.protocol_version)
    if conn.auth is not None:
        log.info("%s connected with role=%s using authMethod=%s, clientVersion=%s", conn.peer_address,
                 conn.auth.role, conn.auth.state.method, connect.client_version)
        conn.auth.schedule_refresh(conn, conn.broker.config.authentication_refresh_check_seconds, SERVER_VERSION)


def handle_auth_response(conn: "ServerConnection", frame: Frame) -> None:
    """The client's fresh credentials after AUTH_CHALLENGE; a connection that was never asked
    for credentials (authentication off) has nothing to answer."""
    if conn.auth is None:
        conn.protocol_error("AUTH_RESPONSE without authentication")
        return
    conn.auth.respond(conn, frame.command.authResponse)


def handle_ping(conn: "ServerConnection", frame: Frame) -> None:
    conn.send(api.BaseCommand(type=Type.PONG, pong=api.CommandPong()))


def handle_pong(conn: "ServerConnection", frame: Frame) -> None:
    """Any received frame already cleared the outstanding ping; nothing else to do."""


HANDLERS = {Type.CONNECT: handle_connect, Type.AUTH_RESPONSE: handle_auth_response, Type.PING: handle_ping,
            Type.PONG: handle_pong}
