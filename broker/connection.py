"""One client connection: reads frames, routes each command to its handler, writes replies.

The connection owns the producers and consumers its client created and tears them down when the
socket closes. Protocol violations (garbage, lying sizes, oversize frames, unparsable commands,
anything before CONNECT) close this connection only, after an ERROR where the command carried a
request id. Back-pressure: reading pauses while too many publishes wait for their receipts, and
consumers on a connection whose write buffer is above the high-water mark get nothing until it
drains. Handlers live in broker/handlers/, one module per group of commands.
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from typing import TYPE_CHECKING, Any, Iterator

from minipulsar.broker.background import BackgroundTasks
from minipulsar.broker.errors import BrokerError, ServiceNotReadyError
from minipulsar.broker.handlers import ROUTES
from minipulsar.broker.handlers.producers import publish_send
from minipulsar.broker.publish_buffer import READ_PAUSE_REASON as PUBLISH_BUFFER_PAUSE
from minipulsar.broker.security.tls_context import peer_certificate
from minipulsar.proto import BROKER_INITIATED_REQUEST_ID
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import FRAME_PADDING, Frame, SendFastPathDecoder, SendFrame, encode_command
from minipulsar.proto.hot_commands import encode_message, encode_send_receipt
from minipulsar.storage import Entry, Position

if TYPE_CHECKING:
    from minipulsar.broker.consumer import Consumer
    from minipulsar.broker.security.connection_auth import ConnectionAuth
    from minipulsar.broker.producer import Producer
    from minipulsar.broker.broker import Broker

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type
# The sub-message field of BaseCommand for each type is named after the type in PulsarApi.proto;
# requests among them carry request_id, which is where an ERROR reply must point.
_FIELD_BY_TYPE = {
    field.number: field.name for field in api.BaseCommand.DESCRIPTOR.fields if field.name != "type"
}


def command_body(command: api.BaseCommand) -> Any:
    """The sub-message of command matching its type (e.g. command.producer for PRODUCER)."""
    return getattr(command, _FIELD_BY_TYPE[command.type])


_BODY_OPTIONAL = frozenset((Type.PING, Type.PONG))
_PENDING_PAUSE = "pending publishes"  # maxPendingPublishRequestsPerConnection reached


class ServerConnection(asyncio.Protocol):
    """asyncio protocol for one client socket. peer_address: 'host:port' of the client."""

    def __init__(self, broker: "Broker"):
        self.broker = broker
        config = broker.config
        self.decoder = SendFastPathDecoder(config.max_message_size + FRAME_PADDING)
        self.transport: asyncio.Transport | None = None
        self.peer_address = ""
        self.connected = False  # CONNECT seen
        self.closed = False
        self.protocol_version = 0
        self.client_version = ""
        self.peer_certificate: bytes | None = None  # DER client certificate the TLS handshake verified
        self.auth: ConnectionAuth | None = None  # the role CONNECT authenticated (authenticationEnabled)
        self.producers: dict[int, Producer] = {}
        self.consumers: dict[int, Consumer] = {}
        # Producer and consumer ids whose PRODUCER / SUBSCRIBE is still being handled (creating()).
        self._creating: dict[str, set[int]] = {"Producer": set(), "Consumer": set()}
        self.pending_publishes = 0
        self.max_pending_publishes = config.max_pending_publish_requests_per_connection
        # Why reading is paused: "pending publishes" (this connection's cap) and/or the broker's
        # publish buffer (broker/publish_buffer.py); reading resumes when no reason is left.
        self._read_pauses: set[str] = set()
        self._admitted = False  # counted by the broker's connection limits (broker/limits.py)
        self._peer_host = ""
        self._writing_paused = False
        self._tasks = BackgroundTasks(self, log)  # async handlers, cancelled with the connection
        self._last_received = time.monotonic()
        self._ping_outstanding = False
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._high_water = config.connection_write_high_water_mark_bytes

    def __repr__(self) -> str:
        return f"ServerConnection({self.peer_address})"

    # ---- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.peer_address = f"{peer[0]}:{peer[1]}"
        self.peer_certificate = peer_certificate(transport)
        self._peer_host = peer[0]
        refusal = self.broker.connection_limits.admit(self._peer_host)
        if refusal is not None:
            self._refuse(refusal)
            return
        self._admitted = True
        transport.set_write_buffer_limits(high=self._high_water, low=self._high_water // 2)
        self.broker.connections.add(self)
        if self.broker.publish_buffer.full:
            self.pause_reading(PUBLISH_BUFFER_PAUSE)
        log.debug("connection from %s", self.peer_address)

    def _refuse(self, reason: str) -> None:
        """brokerMaxConnections / brokerMaxConnectionsPerIp reached: ERROR NotAllowedError with
        request id -1 before CONNECT, then close, as Pulsar's ServerCnx.channelActive."""
        log.info("%s: connection refused: %s", self.peer_address, reason)
        self.closed = True
        self.transport.write(encode_command(api.BaseCommand(type=Type.ERROR, error=api.CommandError(
            request_id=BROKER_INITIATED_REQUEST_ID, error=api.NotAllowedError, message=reason))))
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        self._last_received = time.monotonic()
        self._ping_outstanding = False
        try:
            frames = self.decoder.feed(data)
        except FrameError as exc:
            self.protocol_error(f"bad frame: {exc}")
            return
        for frame in frames:
            if self.closed or self.transport.is_closing():  # a protocol error in this read closed it
                return
            if type(frame) is SendFrame:
                self._publish(frame)
            else:
                self._route(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self._admitted:
            return
        self.broker.connection_limits.release(self._peer_host)
        self.broker.connections.discard(self)
        self._tasks.cancel()
        if self.auth is not None:
            self.auth.cancel()  # the credentials refresh timer
        for producer_id in list(self.producers):
            self.remove_producer(producer_id)
        for consumer_id in list(self.consumers):
            self.remove_consumer(consumer_id)
        log.debug("connection from %s closed (%s)", self.peer_address, exc)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        for consumer in list(self.consumers.values()):
            consumer.writable()

    # ---- routing ---------------------------------------------------------------------------
    def _route(self, frame: Frame) -> None:
        command = frame.command
        if not self.connected and command.type != Type.CONNECT:
            self.protocol_error(f"{Type.Name(command.type)} before CONNECT", command)
            return
        handler = ROUTES.get(command.type)
        if handler is None:
            self.protocol_error(f"unexpected command {Type.Name(command.type)}", command)
            return
        if command.type not in _BODY_OPTIONAL and not command.HasField(_FIELD_BY_TYPE[command.type]):
            self.protocol_error(f"{Type.Name(command.type)} without its command body")
            return
        try:
            result = handler(self, frame)
        except BrokerError as exc:
            self.reply_error(command, exc)
            return
        except Exception:
            log.exception("%s: handler for %s failed", self.peer_address, Type.Name(command.type))
            self.protocol_error("internal error", command)
            return
        if result is not None and inspect.isawaitable(result):  # the hot SEND/FLOW/ACK return None
            self._tasks.spawn(self._run_async(command, result))

    def _publish(self, frame: SendFrame) -> None:
        """A SEND the decoder read by hand: what _route checks and catches for one, without the
        BaseCommand (SEND carries no request id, so a failure is logged, as reply_error does)."""
        if not self.connected:
            self.protocol_error("SEND before CONNECT")
            return
        try:
            publish_send(self, frame.send, frame.headers_and_payload)
        except BrokerError as exc:
            log.warning("%s: SEND failed: %s", self.peer_address, exc)
        except Exception:
            log.exception("%s: handler for SEND failed", self.peer_address)
            self.protocol_error("internal error")

    async def _run_async(self, command: api.BaseCommand, awaitable) -> None:
        try:
            await awaitable
        except BrokerError as exc:
            self.reply_error(command, exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("%s: handler for %s failed", self.peer_address, Type.Name(command.type))
            self.reply_error(command, BrokerError(f"internal error: {exc}"))

    # ---- writing ---------------------------------------------------------------------------
    def send(self, command: api.BaseCommand) -> None:
        self.write_frame(encode_command(command))

    def write_frame(self, frame: bytes) -> None:
        """Queue a frame; all frames queued in one turn of the event loop leave in one write,
        so a burst of receipts or messages costs one system call, not one each."""
        if self.closed or self.transport is None:
            return
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out.append(frame)
        self._out_bytes += len(frame)

    def _flush(self) -> None:
        held_back = self._out_bytes >= self._high_water
        out, self._out, self._out_bytes = self._out, [], 0
        if out and not self.closed and not self.transport.is_closing():
            # One joined buffer: cheaper for the transport than many small ones (receipts, messages).
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])
        if held_back and not self._writing_paused:
            self.resume_writing()  # the queue made consumers wait; the socket took it all

    def is_writable(self) -> bool:
        """False while the socket is backed up, counting frames queued for this loop turn."""
        return not self._writing_paused and not self.closed and self._out_bytes < self._high_water

    def reply_error(self, command: api.BaseCommand, exc: BrokerError) -> None:
        """ERROR for the request that failed; the connection stays open."""
        request_id = getattr(command_body(command), "request_id", None)
        if request_id is None:
            log.warning("%s: %s failed: %s", self.peer_address, Type.Name(command.type), exc)
            return
        self.send_error(request_id, exc.server_error, str(exc))

    def send_error(self, request_id: int, server_error: int, message: str) -> None:
        self.send(api.BaseCommand(type=Type.ERROR, error=api.CommandError(
            request_id=request_id, error=server_error, message=message)))

    def send_success(self, request_id: int) -> None:
        self.send(api.BaseCommand(type=Type.SUCCESS, success=api.CommandSuccess(request_id=request_id)))

    def send_message(self, consumer_id: int, entry: Entry, partition: int, redelivery_count: int,
                     consumer_epoch: int | None, ack_set: list[int] | None) -> None:
        """MESSAGE = command + the stored entry bytes, unchanged. partition: -1 for a
        non-partitioned topic; ack_set: the batch indexes still unacknowledged (set bits) of a
        partly acknowledged batch, as signed int64 words, or None."""
        ledger_id, entry_id = entry.position
        self.write_frame(encode_message(consumer_id, ledger_id, entry_id, partition, redelivery_count,
                                        consumer_epoch, ack_set, entry.data))

    def send_receipt(self, producer_id: int, sequence_id: int, highest_sequence_id: int, position: Position) -> None:
        """SEND_RECEIPT, hand-encoded: one per SEND on the hot path."""
        self.write_frame(encode_send_receipt(producer_id, sequence_id, position.ledger_id, position.entry_id,
                                             highest_sequence_id))

    def send_send_error(self, producer_id: int, sequence_id: int, error: int, message: str) -> None:
        self.send(api.BaseCommand(type=Type.SEND_ERROR, send_error=api.CommandSendError(
            producer_id=producer_id, sequence_id=sequence_id, error=error, message=message)))

    def send_active_consumer_change(self, consumer_id: int, active: bool) -> None:
        if self.protocol_version >= api.v12:
            self.send(api.BaseCommand(type=Type.ACTIVE_CONSUMER_CHANGE, active_consumer_change=api.CommandActiveConsumerChange(
                consumer_id=consumer_id, is_active=active)))

    def send_reached_end_of_topic(self, consumer_id: int) -> None:
        """REACHED_END_OF_TOPIC, which clients speaking protocol version 9 or later understand."""
        if self.protocol_version >= api.v9:
            self.send(api.BaseCommand(type=Type.REACHED_END_OF_TOPIC,
                                      reachedEndOfTopic=api.CommandReachedEndOfTopic(consumer_id=consumer_id)))

    # ---- producers and consumers -----------------------------------------------------------
    @contextlib.contextmanager
    def creating(self, kind: str, handle_id: int) -> Iterator[None]:
        """Around the creation of a "Producer" or "Consumer" with handle_id: a second PRODUCER or
        SUBSCRIBE with that id meanwhile gets ServiceNotReadyError (it would create a second handle
        and orphan the first), as Pulsar's ServerCnx answers while the first one's future is pending."""
        in_flight = self._creating[kind]
        if handle_id in in_flight:
            raise ServiceNotReadyError(f"{kind} is already present on the connection")
        in_flight.add(handle_id)
        try:
            yield
        finally:
            in_flight.discard(handle_id)

    def remove_producer(self, producer_id: int) -> None:
        """Forget a producer and close it (it leaves its topic)."""
        producer = self.producers.pop(producer_id, None)
        if producer is not None:
            producer.close()

    def remove_consumer(self, consumer_id: int) -> None:
        """Forget a consumer and close it (it leaves its subscription)."""
        consumer = self.consumers.pop(consumer_id, None)
        if consumer is not None:
            consumer.close()

    def close_consumer_by_broker(self, consumer_id: int) -> None:
        """Tell the client its consumer is closed (it will reconnect), then forget it."""
        self.send(api.BaseCommand(type=Type.CLOSE_CONSUMER, close_consumer=api.CommandCloseConsumer(
            consumer_id=consumer_id, request_id=BROKER_INITIATED_REQUEST_ID)))
        self.remove_consumer(consumer_id)

    def close_producer_by_broker(self, producer_id: int) -> None:
        self.send(api.BaseCommand(type=Type.CLOSE_PRODUCER, close_producer=api.CommandCloseProducer(
            producer_id=producer_id, request_id=BROKER_INITIATED_REQUEST_ID)))
        self.remove_producer(producer_id)

    # ---- publish back-pressure -------------------------------------------------------------
    def publish_started(self, size: int) -> None:
        """A SEND of size bytes is being stored: count it here and in the broker's publish buffer."""
        self.pending_publishes += 1
        self.broker.publish_buffer.add(size)
        if self.pending_publishes >= self.max_pending_publishes:
            self.pause_reading(_PENDING_PAUSE)

    def publish_finished(self, size: int) -> None:
        self.pending_publishes -= 1
        self.broker.publish_buffer.release(size)
        if self.pending_publishes <= self.max_pending_publishes // 2:
            self.resume_reading(_PENDING_PAUSE)

    def pause_reading(self, reason: str) -> None:
        """Stop reading from the socket until resume_reading(reason); reasons add up."""
        if not self._read_pauses and not self.closed:
            self.transport.pause_reading()
        self._read_pauses.add(reason)

    def resume_reading(self, reason: str) -> None:
        if reason not in self._read_pauses:
            return
        self._read_pauses.discard(reason)
        if not self._read_pauses and not self.closed:
            self.transport.resume_reading()

    # ---- errors, keep-alive, close ---------------------------------------------------------
    def protocol_error(self, reason: str, command: api.BaseCommand | None = None) -> None:
        """The client broke the protocol: ERROR if the command had a request id, then close."""
        log.warning("%s: closing connection: %s", self.peer_address, reason)
        if command is not None and command.type in _FIELD_BY_TYPE:
            request_id = getattr(command_body(command), "request_id", None)
            if request_id is not None:
                self.send_error(request_id, api.NotAllowedError, reason)
        self.close()

    def keepalive_tick(self, interval: float) -> None:
        """Called every keepAliveIntervalSeconds: PING an idle client, drop one that never answered."""
        if self.closed or not self.connected:
            return
        if time.monotonic() - self._last_received < interval:
            return
        if self._ping_outstanding:
            # abort, not close: a close waits for the write buffer to drain, which a dead peer
            # never lets happen, and the connection's producers would keep their names meanwhile.
            log.info("%s: no answer to PING for %.0f s; aborting", self.peer_address, interval)
            self.transport.abort()
            return
        self._ping_outstanding = True
        self.send(api.BaseCommand(type=Type.PING, ping=api.CommandPing()))

    def close(self) -> None:
        """Close after the frames already queued (an ERROR before a protocol close) are written."""
        if self.transport is not None and not self.transport.is_closing():
            self._flush()
            self.transport.close()
