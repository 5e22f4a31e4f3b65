"""One TCP connection to a broker: the CONNECT handshake, request/response matching, routing of
pushed commands to producers and consumers, and PING/PONG keep-alive.

Requests (anything with a request_id) wait for their answer with the operation timeout and raise
Timeout, ConnectError (connection lost meanwhile) or the mapped server error. Matching is strict,
as in clients that match every reply by its request id (pulsar-rs): a command carrying a pending
request's id is that request's answer, and an answer of a kind the request cannot get (a CLOSE_*
for a SEEK, say) fails it with UnknownError naming both. Pushed commands go to the handler
registered for their producer_id / consumer_id: SEND_RECEIPT, SEND_ERROR, CLOSE_PRODUCER ->
producer; MESSAGE, CLOSE_CONSUMER, ACTIVE_CONSUMER_CHANGE, REACHED_END_OF_TOPIC -> consumer. A
broker's own CLOSE_* carries request id 2^64-1 (BROKER_INITIATED_REQUEST_ID), as Pulsar's do. When the socket closes every registered handler is told, so it can
reconnect.

Dead peers are found in bounded time: every keep_alive_interval seconds the connection sends PING;
if the previous PING is still unanswered and nothing else arrived, the socket is aborted (not
closed: a graceful close waits for the queued frames to reach a peer that may never take them), so
the handlers learn it at once and reconnect. A graceful close() that cannot flush within
CLOSE_FLUSH_SECONDS is aborted too. Every ConnectError names the host, the step that failed
(resolving, connecting, the CONNECT handshake) and the OS error or the time waited.
Source: Pulsar's C++ ClientConnection (Java ClientCnx).
"""
from __future__ import annotations

import asyncio
import logging
import socket
from typing import Callable, Protocol

from minipulsar.client import __version__
from minipulsar.client.exceptions import (ConnectError, PulsarException, ReadError, Timeout, UnknownError,
                                          from_server_error)
from minipulsar.proto import BROKER_INITIATED_REQUEST_ID
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import Frame, FrameDecoder, encode_command

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type
PROTOCOL_VERSION = 20
CLIENT_VERSION = f"Pulsar-Python-minipulsar-{__version__}"
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
# A peer that takes none of our queued frames for this long while we close is treated as dead.
CLOSE_FLUSH_SECONDS = 2.0

# Answers to requests: (BaseCommand field, request_id attribute).
_RESPONSES = {
    Type.SUCCESS: "success",
    Type.ERROR: "error",
    Type.PRODUCER_SUCCESS: "producer_success",
    Type.PARTITIONED_METADATA_RESPONSE: "partitionMetadataResponse",
    Type.LOOKUP_RESPONSE: "lookupTopicResponse",
    Type.GET_LAST_MESSAGE_ID_RESPONSE: "getLastMessageIdResponse",
    Type.CONSUMER_STATS_RESPONSE: "consumerStatsResponse",
    Type.GET_TOPICS_OF_NAMESPACE_RESPONSE: "getTopicsOfNamespaceResponse",
    Type.GET_SCHEMA_RESPONSE: "getSchemaResponse",
    Type.ACK_RESPONSE: "ackResponse",
}
# The answer each request can get besides ERROR (SUCCESS for the requests not listed).
_ANSWER_OF = {
    Type.PRODUCER: Type.PRODUCER_SUCCESS,
    Type.PARTITIONED_METADATA: Type.PARTITIONED_METADATA_RESPONSE,
    Type.LOOKUP: Type.LOOKUP_RESPONSE,
    Type.GET_LAST_MESSAGE_ID: Type.GET_LAST_MESSAGE_ID_RESPONSE,
    Type.CONSUMER_STATS: Type.CONSUMER_STATS_RESPONSE,
    Type.GET_TOPICS_OF_NAMESPACE: Type.GET_TOPICS_OF_NAMESPACE_RESPONSE,
    Type.GET_SCHEMA: Type.GET_SCHEMA_RESPONSE,
    Type.ACK: Type.ACK_RESPONSE,
}


class ProducerListener(Protocol):
    """What a connection calls on a producer registered in `producers`."""

    def on_send_receipt(self, receipt: api.CommandSendReceipt) -> None: ...
    def on_send_error(self, cnx: "ClientConnection", error: api.CommandSendError) -> None: ...
    def on_connection_closed(self, cnx: "ClientConnection") -> None: ...


class ConsumerListener(Protocol):
    """What a connection calls on a consumer registered in `consumers`."""

    def on_message(self, cnx: "ClientConnection", command: api.CommandMessage, data: bytes | None) -> None: ...
    def on_active_consumer_change(self, is_active: bool) -> None: ...
    def on_reached_end_of_topic(self) -> None: ...
    def on_connection_closed(self, cnx: "ClientConnection") -> None: ...


class ClientConnection(asyncio.Protocol):
    """logical_url: the broker this connection stands for; physical (host, port): where it goes
    (differs when proxying through the service URL, then CONNECT carries proxy_to_broker_url)."""

    def __init__(self, logical_url: str, host: str, port: int, *, operation_timeout: float,
                 keep_alive_interval: float = 30.0, authentication=None, proxy_to_broker_url: str | None = None,
                 on_closed: Callable[["ClientConnection"], None] | None = None, ssl_context=None):
        self.logical_url = logical_url
        self.ssl_context = ssl_context  # TLS (pulsar+ssl://) when set
        self.host, self.port = host, port
        self.operation_timeout = operation_timeout
        self.keep_alive_interval = keep_alive_interval
        self.authentication = authentication
        self.proxy_to_broker_url = proxy_to_broker_url
        self.on_closed = on_closed
        self.transport: asyncio.Transport | None = None
        self.decoder = FrameDecoder()
        self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self.server_version = ""
        self.protocol_version = 0
        self.closed = False
        self.producers: dict[int, ProducerListener] = {}
        self.consumers: dict[int, ConsumerListener] = {}
        self._pending: dict[int, tuple[asyncio.Future, int]] = {}  # request id -> (answer, request type)
        self._connected: asyncio.Future | None = None
        self._ping_outstanding = False
        self._keepalive_task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lost = False
        self._close_reason: str | None = None  # why we dropped the connection, for the handlers' errors

    def __repr__(self) -> str:
        return f"ClientConnection({self.logical_url} via {self.host}:{self.port})"

    # ---- opening ---------------------------------------------------------------------------
    async def open(self, timeout: float) -> "ClientConnection":
        """Resolve the host, connect over TCP and complete CONNECT/CONNECTED, all within timeout
        seconds. Raises ConnectError naming the host, the step that failed and the OS error or the
        time waited (a resolver that never answers is a timeout while resolving, not a silence)."""
        self._loop = asyncio.get_running_loop()
        self._connected = self._loop.create_future()
        step = f"resolving {self.host}"
        try:
            async with asyncio.timeout(timeout):
                addresses = await self._loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
                step = f"connecting to {self.host}:{self.port}"
                await self._connect_any([info[4] for info in addresses])
                step = f"waiting for CONNECTED from {self.host}:{self.port}"
                await self._connected
        except TimeoutError:
            self.abort(f"timed out {step}")
            raise ConnectError(f"cannot connect to {self.host}:{self.port}: timed out after {timeout:g} s "
                               f"{step}") from None
        except OSError as exc:
            self.abort(describe(exc))
            raise ConnectError(f"cannot connect to {self.host}:{self.port}: {step}: {describe(exc)}") from exc
        except PulsarException:
            self.abort("CONNECT refused")
            raise
        self._keepalive_task = self._loop.create_task(self._keepalive())
        return self

    async def _connect_any(self, addresses: list[tuple]) -> None:
        """TCP connect to the first of the resolved addresses that accepts; OSError naming each
        address tried and its error when none does."""
        errors = []
        for address in addresses:
            try:
                await self._loop.create_connection(
                    lambda: self, address[0], address[1], ssl=self.ssl_context,
                    server_hostname=self.host if self.ssl_context is not None else None)
                return
            except OSError as exc:
                errors.append(f"{address[0]}: {describe(exc)}")
        raise OSError("; ".join(errors) or "the resolver returned no address")

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        connect = api.CommandConnect(client_version=CLIENT_VERSION, protocol_version=PROTOCOL_VERSION)
        connect.feature_flags.supports_auth_refresh = True
        if self.authentication is not None:
            connect.auth_method_name = self.authentication.auth_method_name()
            connect.auth_data = self.authentication.auth_data()
        else:
            connect.auth_method_name = "none"
        if self.proxy_to_broker_url:
            connect.proxy_to_broker_url = self.proxy_to_broker_url
        self.send_command(api.BaseCommand(type=Type.CONNECT, connect=connect))

    # ---- receiving -------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        self._ping_outstanding = False
        try:
            frames = self.decoder.feed(data)
        except FrameError as exc:
            log.error("%s: undecodable frame from broker: %s", self, exc)
            self._fail_connect(ReadError(str(exc)))
            self.close()
            return
        for frame in frames:
            try:
                self._handle(frame)
            except Exception:
                log.exception("%s: failed to handle %s", self, Type.Name(frame.command.type))

    def _handle(self, frame: Frame) -> None:
        command = frame.command
        kind = command.type
        if kind == Type.MESSAGE:
            consumer = self.consumers.get(command.message.consumer_id)
            if consumer is not None:
                consumer.on_message(self, command.message, frame.headers_and_payload)
        elif kind == Type.SEND_RECEIPT:
            producer = self.producers.get(command.send_receipt.producer_id)
            if producer is not None:
                producer.on_send_receipt(command.send_receipt)
        elif kind in _RESPONSES:
            self._on_response(kind, getattr(command, _RESPONSES[kind]))
        elif kind == Type.CONNECTED:
            self._on_connected(command.connected)
        elif kind == Type.PING:
            self.send_command(api.BaseCommand(type=Type.PONG, pong=api.CommandPong()))
        elif kind == Type.PONG:
            pass
        elif kind == Type.SEND_ERROR:
            producer = self.producers.get(command.send_error.producer_id)
            if producer is not None:
                producer.on_send_error(self, command.send_error)
        elif kind == Type.CLOSE_PRODUCER:
            self._unexpected_answer(kind, command.close_producer.request_id)
            producer = self.producers.pop(command.close_producer.producer_id, None)
            if producer is not None:
                producer.on_connection_closed(self)
        elif kind == Type.CLOSE_CONSUMER:
            self._unexpected_answer(kind, command.close_consumer.request_id)
            consumer = self.consumers.pop(command.close_consumer.consumer_id, None)
            if consumer is not None:
                consumer.on_connection_closed(self)
        elif kind == Type.ACTIVE_CONSUMER_CHANGE:
            consumer = self.consumers.get(command.active_consumer_change.consumer_id)
            if consumer is not None:
                consumer.on_active_consumer_change(command.active_consumer_change.is_active)
        elif kind == Type.REACHED_END_OF_TOPIC:
            consumer = self.consumers.get(command.reachedEndOfTopic.consumer_id)
            if consumer is not None:
                consumer.on_reached_end_of_topic()
        elif kind == Type.AUTH_CHALLENGE:
            self._on_auth_challenge()
        else:
            log.warning("%s: ignoring unexpected %s", self, Type.Name(kind))

    def _on_connected(self, connected: api.CommandConnected) -> None:
        self.server_version = connected.server_version
        self.protocol_version = connected.protocol_version
        if connected.HasField("max_message_size") and connected.max_message_size > 0:
            self.max_message_size = connected.max_message_size
        log.debug("%s: connected to %s, protocol v%d", self, self.server_version, self.protocol_version)
        if self._connected is not None and not self._connected.done():
            self._connected.set_result(None)

    def _on_response(self, kind: int, body) -> None:
        if kind == Type.PRODUCER_SUCCESS and body.HasField("producer_ready") and not body.producer_ready:
            log.info("%s: producer %s queued by the broker; waiting", self, body.producer_name)
            return
        if kind == Type.ERROR and self._connected is not None and not self._connected.done():
            self._fail_connect(from_server_error(body.error, body.message))
            return
        pending = self._pending.pop(body.request_id, None)
        if pending is None or pending[0].done():
            log.debug("%s: answer to unknown request %d (%s)", self, body.request_id, Type.Name(kind))
            return
        future, request_kind = pending
        if kind == Type.ERROR:
            future.set_exception(from_server_error(body.error, body.message))
        elif kind != _ANSWER_OF.get(request_kind, Type.SUCCESS):
            future.set_exception(_unexpected(kind, request_kind, body.request_id))
        else:
            future.set_result(body)

    def _unexpected_answer(self, kind: int, request_id: int) -> None:
        """A broker's CLOSE_* that carries the id of a pending request is that request's (wrong)
        answer; only BROKER_INITIATED_REQUEST_ID, Pulsar's -1, is nobody's."""
        if request_id == BROKER_INITIATED_REQUEST_ID:
            return
        pending = self._pending.pop(request_id, None)
        if pending is not None and not pending[0].done():
            log.warning("%s: %s carries the id of pending request %d", self, Type.Name(kind), request_id)
            pending[0].set_exception(_unexpected(kind, pending[1], request_id))

    def _on_auth_challenge(self) -> None:
        response = api.CommandAuthResponse(client_version=CLIENT_VERSION, protocol_version=PROTOCOL_VERSION)
        if self.authentication is not None:
            response.response.auth_method_name = self.authentication.auth_method_name()
            response.response.auth_data = self.authentication.auth_data()
        else:
            response.response.auth_method_name = "none"
        self.send_command(api.BaseCommand(type=Type.AUTH_RESPONSE, authResponse=response))

    # ---- sending ---------------------------------------------------------------------------
    def send_command(self, command: api.BaseCommand) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(encode_command(command))

    def write(self, data: bytes) -> None:
        """Write an already-encoded frame."""
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    async def request(self, command: api.BaseCommand, request_id: int, timeout: float | None = None):
        """Send command and return the answer with the same request_id (raises on ERROR)."""
        if self.closed:
            raise ConnectError(f"{self} is closed")
        future = self._loop.create_future()
        self._pending[request_id] = (future, command.type)
        self.send_command(command)
        try:
            async with asyncio.timeout(timeout or self.operation_timeout):
                return await future
        except TimeoutError:
            raise Timeout(f"no answer to {Type.Name(command.type)} (request {request_id}) from {self.logical_url}") from None
        finally:
            self._pending.pop(request_id, None)

    # ---- keep-alive and closing ------------------------------------------------------------
    async def _keepalive(self) -> None:
        while not self.closed:
            await asyncio.sleep(self.keep_alive_interval)
            if self._ping_outstanding:
                log.warning("%s: no answer to PING within %g s; dropping the connection", self,
                            self.keep_alive_interval)
                self.abort(f"no answer to PING within {self.keep_alive_interval:g} s")
                return
            self._ping_outstanding = True
            self.send_command(api.BaseCommand(type=Type.PING, ping=api.CommandPing()))

    def _fail_connect(self, exc: Exception) -> None:
        if self._connected is not None and not self._connected.done():
            self._connected.set_exception(exc)
            # Marked retrieved: when open() already gave up (connect refused, timed out) nobody
            # awaits it, and asyncio would log "Future exception was never retrieved".
            self._connected.exception()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lost:
            return
        self._lost = True
        self.closed = True
        reason = self._close_reason or (describe(exc) if exc is not None else "closed by the broker")
        log.info("%s: connection closed (%s)", self, reason)
        self._fail_connect(ConnectError(f"connection to {self.host}:{self.port} closed during handshake: {reason}"))
        if self._keepalive_task is not None:
            self._keepalive_task.cancel()
        for future, _ in self._pending.values():
            if not future.done():
                future.set_exception(ConnectError(f"connection to {self.logical_url} lost: {reason}"))
        self._pending.clear()
        handlers = [*self.producers.values(), *self.consumers.values()]
        self.producers.clear()
        self.consumers.clear()
        if self.on_closed is not None:
            self.on_closed(self)
        for handler in handlers:
            handler.on_connection_closed(self)

    def close(self) -> None:
        """Close the socket after the queued frames are written; connection_lost() notifies the
        handlers. A peer that takes none of them within CLOSE_FLUSH_SECONDS is presumed dead and
        the socket is aborted, so the handlers always learn of the close in bounded time."""
        self.closed = True
        self._close_reason = self._close_reason or "closed by the client"
        if self.transport is None:
            self.connection_lost(None)
        elif not self.transport.is_closing():
            self.transport.close()
            self._loop.call_later(CLOSE_FLUSH_SECONDS, self._abort_unflushed)

    def abort(self, reason: str) -> None:
        """Drop the connection now, discarding unsent frames (the peer is presumed dead);
        connection_lost() notifies the handlers, whose errors carry reason."""
        self.closed = True
        self._close_reason = self._close_reason or reason
        if self.transport is None:
            self.connection_lost(None)
        else:
            self.transport.abort()

    def _abort_unflushed(self) -> None:
        if not self._lost and self.transport is not None:
            self._close_reason = f"the broker took none of our last frames for {CLOSE_FLUSH_SECONDS:g} s"
            self.transport.abort()


def describe(exc: BaseException) -> str:
    """An exception as a non-empty reason ('TimeoutError' where str() is empty)."""
    return str(exc) or type(exc).__name__


def _unexpected(kind: int, request_kind: int, request_id: int) -> UnknownError:
    return UnknownError(f"unexpected {Type.Name(kind)} in answer to {Type.Name(request_kind)} (request {request_id})")
