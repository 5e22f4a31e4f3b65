"""The web service's lifecycle: an aiohttp application on the broker's event loop.

It listens on bindAddress:webServicePort (0 picks a free port, as for brokerServicePort), and on
webServicePortTls with the broker's TLS context when that is set, and is started and stopped with
the broker. The web console (broker/web/console) is served at / unless webConsoleEnabled is false. Every route group registers itself in one RouteTable; the security middleware
(broker/security/web.py) authenticates and authorizes requests when the broker's settings ask.
With webSocketServiceEnabled the WebSocket API (broker/web/websocket) is served beside them, outside
the OpenAPI document (its paths upgrade to sockets), authenticating its own upgrades.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from minipulsar import __version__
from minipulsar.broker.config import PORT_OFF
from minipulsar.broker.security.web import security_middleware
from minipulsar.broker.web import (broker_stats, brokers, console, functions, lookup, metrics, namespace_policies,
                                  permissions, rest_producer, schemas, subscriptions, tenants, topics)
from minipulsar.broker.web.context import BROKER
from minipulsar.broker.web.errors import error_middleware
from minipulsar.broker.web.routes import OBJECT, RouteTable
from minipulsar.broker.web.websocket import service as websocket

if TYPE_CHECKING:
    from minipulsar.broker.broker import Broker

log = logging.getLogger(__name__)

ROUTE_GROUPS = (lookup, brokers, tenants, namespace_policies, topics, subscriptions, schemas, metrics, permissions,
                broker_stats, rest_producer, functions)


def route_table() -> RouteTable:
    """Every route the web service serves, the OpenAPI document's own included."""
    table = RouteTable()
    for group in ROUTE_GROUPS:
        group.add_routes(table)
    table.add("GET", "/admin/v2/openapi.json", _openapi, "this document (OpenAPI 3.0)", "meta", response=OBJECT)
    return table


OPENAPI: web.AppKey[dict] = web.AppKey("openapi")


async def _openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app[OPENAPI])


class WebService:
    """broker: the Broker it serves; port: the bound port after start()."""

    def __init__(self, broker: "Broker"):
        self.broker = broker
        self.port: int | None = None
        self.port_tls: int | None = None  # webServicePortTls once bound
        self._runner: web.AppRunner | None = None

    def application(self) -> web.Application:
        table = route_table()
        app = web.Application(middlewares=[error_middleware, security_middleware(self.broker.security)],
                              client_max_size=self.broker.config.max_message_size * 2)
        app[BROKER] = self.broker
        namespaces = self.broker.namespaces
        app[functions.ACCESS] = functions.FunctionsAccess(lambda: self.broker.functions, namespaces.tenant_exists,
                                                          namespaces.exists)
        app[OPENAPI] = table.openapi("minipulsar admin API", __version__)
        table.register(app)
        if self.broker.config.web_socket_service_enabled:
            security = self.broker.security
            websocket.add_routes(app, websocket.BrokerAccess(
                self.broker.config, security.authentication, security.authorization,
                security.broker_client_authentication(), lambda: self.broker.service_url))
        broker_stats.attach(app, self.broker)
        if self.broker.config.web_console_enabled:
            console.register(app, self.broker.security)
        return app

    async def start(self) -> None:
        """Listen; raises OSError when the port is taken."""
        config = self.broker.config
        self._runner = web.AppRunner(self.application(), access_log=None, handle_signals=False)
        await self._runner.setup()
        if config.web_service_port != PORT_OFF:  # an empty webServicePort: the TLS port only
            site = web.TCPSite(self._runner, config.bind_address, config.web_service_port, reuse_address=True)
            await site.start()
            self.port = self._runner.addresses[0][1]
            log.info("web service listening on %s:%d", config.bind_address, self.port)
            # Pulsar's WebService line, which Testcontainers modules and scripts wait for
            log.info("HTTP Service started at http://%s:%d", config.bind_address, self.port)
        await self._start_tls_site()

    async def _start_tls_site(self) -> None:
        """Listen on webServicePortTls too, when set (raises OSError naming the key when taken)."""
        security = self.broker.security
        if security.web_port_tls is None:
            return
        config = self.broker.config
        site = web.TCPSite(self._runner, config.bind_address, security.web_port_tls, ssl_context=security.tls.context,
                           reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            raise OSError(exc.errno, f"webServicePortTls {security.web_port_tls}: {exc.strerror}") from exc
        self.port_tls = self._runner.addresses[-1][1]  # the site just started
        config.web_service_port_tls = str(self.port_tls)
        log.info("web service listening with TLS on %s:%d", config.bind_address, self.port_tls)
        log.info("HTTPS Service started at https://%s:%d", config.bind_address, self.port_tls)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
