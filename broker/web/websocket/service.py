"""The WebSocket service: its routes on the web ports, its client of this broker, its sessions.

Routes (webSocketServiceEnabled): /ws/v2/{producer,consumer,reader}/... and Pulsar's v1 forms
/ws/{producer,consumer,reader}/... (paths.py), and /ws/pingpong, /ws/v2/pingpong, a socket that
only answers pings. They are registered on the web service's application, so the TLS web port
serves them too (wss://), with the same certificate and client-certificate checks.

An upgrade is admitted in this order: the path names a topic (400), the client authenticates (401)
and may use the topic (403), the query parameters parse (400), then the session's producer,
consumer or reader is created (admission.creation_refusal says the status when it cannot be);
only then is the socket accepted. A v1 path is refused as a topic that does not exist (404, or
500 for a reader, as every reader failure): its topic would live in a cluster-scoped namespace,
and minipulsar has none (no Pulsar standalone has one either, unless made with the v1 admin API).

Sessions reach the topics through the bundled client, one Client for the whole service, created at
the first session and connected to this broker's own service URL with
brokerClientAuthenticationPlugin's credentials, as Pulsar's WebSocketService builds its
PulsarClient; docs/websocket.md has the figures behind that choice. With authenticationEnabled
and no such credentials that client cannot connect: a WARNING says so at start-up and upgrades are
refused with the broker's answer to it. At shutdown every session is closed with 1001, then the
client. Source: Pulsar WebSocketService, the WebSocket*Servlet classes, PulsarService (their
registration on the broker's web service).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from aiohttp import WSCloseCode, web

from minipulsar.broker.config import BrokerConfig
from minipulsar.broker.security.authentication import AuthenticationService
from minipulsar.broker.security.authorization import AuthorizationService
from minipulsar.broker.web.errors import RestError
from minipulsar.broker.web.websocket import admission
from minipulsar.broker.web.websocket.consumer import ConsumerSession
from minipulsar.broker.web.websocket.params import consumer_options, producer_options, reader_options
from minipulsar.broker.web.websocket.paths import Endpoint, InvalidPath, parse_path
from minipulsar.broker.web.websocket.producer import ProducerSession
from minipulsar.broker.web.websocket.reader import ReaderSession
from minipulsar.broker.web.websocket.session import Session, SessionSettings
from minipulsar.client import Client, ServiceUnitNotReady, TopicNotFound
from minipulsar.client.auth import Authentication

log = logging.getLogger(__name__)

OPERATION_TIMEOUT_SECONDS = 30  # the Java client's default operationTimeout
NOT_AN_UPGRADE = "HTTP method GET is not supported by this URL"  # what Jetty's servlet answers


@dataclass(frozen=True)
class BrokerAccess:
    """What the service uses of its broker: config (the webSocket* settings, tlsTrustCertsFilePath);
    authentication and authorization (None when off); client_authentication: what the service's
    client presents (brokerClientAuthenticationPlugin; None: nothing); service_url(): the broker's
    pulsar:// (or pulsar+ssl://) URL, known once its ports are bound."""

    config: BrokerConfig
    authentication: AuthenticationService | None
    authorization: AuthorizationService | None
    client_authentication: Authentication | None
    service_url: Callable[[], str]


class WebSocketService:
    """broker: what the service uses of the broker whose topics the sessions reach."""

    def __init__(self, broker: BrokerAccess):
        self.broker = broker
        self.settings = SessionSettings.from_config(broker.config)
        self.sessions: set[Session] = set()
        self._client: Client | None = None
        self._closed = False
        if broker.authentication is not None and broker.client_authentication is None:
            log.warning("webSocketServiceEnabled with authenticationEnabled but no brokerClientAuthenticationPlugin: "
                        "the WebSocket API's client of this broker has no credentials, so every WebSocket session "
                        "will be refused; give it a super-user's (docs/websocket.md)")

    def client(self) -> Client:
        """The service's client of this broker (created at the first session: the ports are bound);
        raises ServiceUnitNotReady once the service is closing."""
        if self._closed:
            raise ServiceUnitNotReady("the WebSocket service is shutting down")
        if self._client is None:
            broker = self.broker
            self._client = Client(broker.service_url(), authentication=broker.client_authentication,
                                  operation_timeout_seconds=OPERATION_TIMEOUT_SECONDS,
                                  tls_trust_certs_file_path=broker.config.tls_trust_certs_file_path or None)
        return self._client

    async def close(self) -> None:
        """Close every session (1001 "Shutdown", as Jetty at stop), then the client."""
        self._closed = True
        for session in list(self.sessions):
            await session.close_with(WSCloseCode.GOING_AWAY, "Shutdown")
        if self._client is not None:
            await self._client.close()
            self._client = None

    # ---- upgrades ---------------------------------------------------------------------------
    async def serve(self, request: web.Request) -> web.WebSocketResponse:
        """Admit the upgrade, open its session and serve it until it closes."""
        ws = web.WebSocketResponse(max_msg_size=self.settings.max_text_frame_size, autoping=False)
        if not ws.can_prepare(request).ok:
            raise RestError(405, NOT_AN_UPGRADE)
        try:
            endpoint = parse_path(request.rel_url.raw_path)
        except InvalidPath as exc:
            raise RestError(400, f"Invalid query params: {exc}") from None
        role = admission.authenticate(self.broker.authentication, request)
        if endpoint.v1_namespace is not None:  # refused as a topic that cannot be created (a reader: 500)
            missing = TopicNotFound(f"Namespace {endpoint.v1_namespace} does not exist (minipulsar has no v1, "
                                    "cluster-scoped, namespaces)")
            raise admission.creation_refusal(missing, endpoint.kind)
        admission.authorize(self.broker.authorization, endpoint.kind, endpoint.topic, role, request)
        label = f"{request.remote} {endpoint.kind} {endpoint.topic}" + (
            f" / {endpoint.subscription}" if endpoint.subscription else "")
        opener = {"producer": self._producer, "consumer": self._consumer, "reader": self._reader}[endpoint.kind]
        try:
            session = await opener(ws, endpoint, request, label)
        except Exception as exc:
            log.warning("%s: refused: %s", label, exc)
            raise admission.creation_refusal(exc, endpoint.kind) from None
        await self._run(ws, session, request)
        return ws

    async def _run(self, ws: web.WebSocketResponse, session: Session, request: web.Request) -> None:
        try:
            await ws.prepare(request)
        except BaseException:
            await session.release()
            raise
        self.sessions.add(session)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)

    async def _producer(self, ws, endpoint: Endpoint, request: web.Request, label: str) -> Session:
        options = producer_options(request.query)
        producer = await self.client().create_producer(endpoint.topic, **options)
        return ProducerSession(ws, self.settings, label, producer)

    async def _consumer(self, ws, endpoint: Endpoint, request: web.Request, label: str) -> Session:
        options = consumer_options(request.query, endpoint.topic, endpoint.subscription)
        consumer = await self.client().subscribe(endpoint.topic, endpoint.subscription, **options.create)
        return ConsumerSession(ws, self.settings, label, consumer, options.max_pending, options.pull_mode)

    async def _reader(self, ws, endpoint: Endpoint, request: web.Request, label: str) -> Session:
        options = reader_options(request.query)
        reader = await self.client().create_reader(endpoint.topic, **options.create)
        return ReaderSession(ws, self.settings, label, reader, options.max_pending)

    async def ping_pong(self, request: web.Request) -> web.WebSocketResponse:
        """/ws/pingpong: a socket that answers pings and reads nothing else."""
        ws = web.WebSocketResponse(max_msg_size=self.settings.max_text_frame_size, autoping=False)
        if not ws.can_prepare(request).ok:
            raise RestError(405, NOT_AN_UPGRADE)
        await self._run(ws, Session(ws, self.settings, f"{request.remote} pingpong"), request)
        return ws


SERVICE: web.AppKey[WebSocketService] = web.AppKey("websocket")


def add_routes(app: web.Application, broker: BrokerAccess) -> None:
    """Serve the WebSocket API on app (the web service's application) for broker."""
    service = app[SERVICE] = WebSocketService(broker)
    for version in ("/ws", "/ws/v2"):
        for kind in ("producer", "consumer", "reader"):
            app.router.add_get(f"{version}/{kind}/{{rest:.*}}", service.serve)
        app.router.add_get(f"{version}/pingpong", service.ping_pong)

    async def close(_app: web.Application) -> None:
        await service.close()

    app.on_shutdown.append(close)
