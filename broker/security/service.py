"""BrokerSecurity: the broker's authentication, authorization and TLS, built from its config.

The broker holds one as `broker.security`. Handlers ask it one question each (may this
connection's role produce on, subscribe to, look up this topic?) and get NotAuthorizedError with
Pulsar's wording when the answer is no. With authorizationEnabled=false every authenticated
client may do everything, as in Pulsar; with authenticationEnabled=false nobody is asked for
credentials. Permissions can be granted either way (they are stored, and apply once authorization
is on), as Pulsar's admin API allows.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minipulsar.broker.config import BrokerConfig
from minipulsar.broker.security.authentication import AuthenticationService
from minipulsar.broker.security.authorization import AuthorizationService, role_list
from minipulsar.broker.security.errors import NotAuthorizedError
from minipulsar.broker.security.permissions import PermissionStore
from minipulsar.broker.security.settings import (
    broker_client_authentication,
    check_settings,
    tls_port,
    tls_ports_configured,
)
from minipulsar.broker.security.tls_context import ReloadingContext, TlsSettings
from minipulsar.broker.topic_name import TopicName

if TYPE_CHECKING:
    from minipulsar.broker.connection import ServerConnection
    from minipulsar.broker.metadata_store import MetadataStore
    from minipulsar.broker.namespaces import Namespaces
    from minipulsar.client.auth import Authentication

log = logging.getLogger(__name__)


class BrokerSecurity:
    """config: the broker's settings; namespaces and store: where tenants' adminRoles and the
    granted permissions live. Raises ConfigError naming the key of a setting that cannot work."""

    def __init__(self, config: BrokerConfig, namespaces: "Namespaces", store: "MetadataStore"):
        check_settings(config)
        self.config = config
        self._namespaces = namespaces
        self.authentication = AuthenticationService.from_config(config) if config.authentication_enabled else None
        self.permissions = PermissionStore(namespaces, store)
        self.authorization = (AuthorizationService(role_list(config.super_user_roles), namespaces, self.permissions)
                              if config.authorization_enabled else None)
        self.tls = ReloadingContext(TlsSettings.from_config(config)) if tls_ports_configured(config) else None
        self.client_authentication = broker_client_authentication(config)
        self._reload_task: asyncio.Task | None = None

    # ---- ports -----------------------------------------------------------------------------
    @property
    def broker_port_tls(self) -> int | None:
        """brokerServicePortTls (None: no TLS binary listener)."""
        return tls_port(self.config.broker_service_port_tls)

    @property
    def web_port_tls(self) -> int | None:
        """webServicePortTls (None: no TLS web listener)."""
        return tls_port(self.config.web_service_port_tls)

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start watching the TLS files (every tlsCertRefreshCheckDurationSec; 0 = never)."""
        interval = self.config.tls_cert_refresh_check_duration_sec
        if self.tls is not None and interval > 0:
            self._reload_task = asyncio.get_running_loop().create_task(self.tls.run(interval))

    def stop(self) -> None:
        if self._reload_task is not None:
            self._reload_task.cancel()
            self._reload_task = None

    def broker_client_authentication(self) -> "Authentication | None":
        """What the broker's own clients send (brokerClientAuthenticationPlugin); None = nothing."""
        return self.client_authentication

    # ---- authorization of binary commands --------------------------------------------------
    # Each check first raises TopicNotFoundError when the topic's tenant or namespace does not
    # exist: Pulsar looks the namespace up before it checks permissions, so a client learns that
    # the topic is missing rather than that it may not use it.
    def check_produce(self, conn: "ServerConnection", topic: TopicName) -> None:
        """Raise NotAuthorizedError unless the connection's role may produce on topic."""
        if self.authorization is not None and not self._allowed(topic, self.authorization.can_produce, conn):
            self._deny(conn, "Client is not authorized to Produce", topic)

    def check_consume(self, conn: "ServerConnection", topic: TopicName) -> None:
        """Raise NotAuthorizedError unless the connection's role may subscribe to topic."""
        if self.authorization is not None and not self._allowed(topic, self.authorization.can_consume, conn):
            self._deny(conn, "Client is not authorized to subscribe", topic)

    def check_lookup(self, conn: "ServerConnection", topic: TopicName, what: str = "Lookup") -> None:
        """Raise NotAuthorizedError unless the connection's role may look topic up (what: the
        operation's name in the message, "Lookup" or "Get Partition Metadata" as Pulsar)."""
        if self.authorization is not None and not self._allowed(topic, self.authorization.can_lookup, conn):
            self._deny(conn, f"Client is not authorized to {what}", topic)

    def check_list_topics(self, conn: "ServerConnection", namespace: str) -> None:
        """Raise NotAuthorizedError unless the connection's role may list the namespace's topics."""
        if self.authorization is not None and not self.authorization.can_list_topics(namespace, _role(conn)):
            self._deny(conn, "Client is not authorized to list topics", namespace)

    def _allowed(self, topic: TopicName, permission, conn: "ServerConnection") -> bool:
        self._namespaces.check(topic)  # TopicNotFoundError
        return permission(topic, _role(conn))

    def _deny(self, conn: "ServerConnection", message: str, resource) -> None:
        log.warning("%s: %s with role %s on %s", conn.peer_address, message, _role(conn), resource)
        raise NotAuthorizedError(message)


def _role(conn: "ServerConnection") -> str | None:
    auth = getattr(conn, "auth", None)
    return auth.role if auth is not None else None
