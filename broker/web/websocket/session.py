"""One WebSocket session: its socket, its idle timeout and pings, and the loop that reads it.

A session reads frames until the socket closes: text frames go to `on_text` (the producer,
consumer or reader session), a PING is answered with a PONG carrying the same bytes, binary frames
are ignored (Pulsar's handlers read text only). Any frame in or out counts as activity; a session
with none for webSocketSessionIdleTimeoutMillis is closed with 1001 "Connection Idle Timeout", as
Jetty's idle timeout closes it; with webSocketPingDurationSeconds > 0 the broker pings every that
many seconds. A text frame over webSocketMaxTextFrameSize closes the session with 1009
(aiohttp's MESSAGE_TOO_BIG, as Jetty's). Errors a session reports to its client close it with
4000 + Pulsar's WebSocketError code and Pulsar's description (formats.WebSocketError); a failure
of our own closes it with 1011. Whatever ends the session, `release` then closes the client
handle behind it (acknowledgements made are flushed first). Source: Pulsar AbstractWebSocketHandler
(onWebSocketConnect's ping task, close(WebSocketError)), WebSocketServlet's policy (idle timeout,
max text message size).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from minipulsar.broker.config import BrokerConfig
from minipulsar.broker.web.websocket.formats import WebSocketError, dumps

log = logging.getLogger(__name__)

MAX_REASON_BYTES = 123  # a close frame carries at most 125 bytes: the code and this much reason


@dataclass(frozen=True)
class SessionSettings:
    """idle_timeout: seconds without a frame before the session closes (0: never); ping_interval:
    seconds between the broker's pings (0: none); max_text_frame_size: bytes."""

    idle_timeout: float
    ping_interval: float
    max_text_frame_size: int

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "SessionSettings":
        return cls(config.web_socket_session_idle_timeout_millis / 1000.0,
                   max(0, config.web_socket_ping_duration_seconds), config.web_socket_max_text_frame_size)


def close_reason(text: str) -> str:
    """text cut to what a close frame can carry (UTF-8, whole characters)."""
    return text.encode("utf-8")[:MAX_REASON_BYTES].decode("utf-8", "ignore")


class Session:
    """ws: the prepared WebSocketResponse; label: what the logs call the session (peer and topic)."""

    def __init__(self, ws: web.WebSocketResponse, settings: SessionSettings, label: str):
        self.ws = ws
        self.settings = settings
        self.label = label
        self._loop = asyncio.get_running_loop()
        self._last_activity = self._loop.time()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task] = set()
        self._closing: asyncio.Task | None = None  # a close started outside the read loop

    # ---- what the producer, consumer and reader sessions define ----------------------------
    async def start(self) -> None:
        """Called once the socket is open, before the first frame is read."""

    async def on_text(self, text: str) -> None:
        """One text frame from the client."""

    async def release(self) -> None:
        """The session ended: close the client handle behind it."""

    # ---- the loop ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Serve the socket until it closes, then release."""
        log.info("%s: WebSocket session opened", self.label)
        self._arm_idle_timer(self.settings.idle_timeout)
        if self.settings.ping_interval > 0:
            self.spawn(self._ping_every(self.settings.ping_interval))
        try:
            await self.start()
            await self._read()
        finally:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            for task in list(self._tasks):
                task.cancel()
            if self._closing is not None:
                await self._closing  # its close handshake ends within aiohttp's close timeout
            await self.release()
            if not self.ws.closed:
                await self.ws.close()
            log.info("%s: WebSocket session closed (code %s)", self.label, self.ws.close_code)

    async def _read(self) -> None:
        while True:
            message = await self.ws.receive()
            self.touch()
            if message.type == WSMsgType.TEXT:
                await self._text(message.data)
            elif message.type == WSMsgType.PING:
                await self.ws.pong(message.data)
            elif message.type == WSMsgType.ERROR:  # e.g. a frame over the size limit: aiohttp closed it
                log.warning("%s: %s", self.label, message.data)
                return
            elif message.type not in (WSMsgType.PONG, WSMsgType.BINARY):  # CLOSE, CLOSING, CLOSED
                return

    async def _text(self, text: str) -> None:
        try:
            await self.on_text(text)
        except ConnectionResetError:
            return  # the socket is closing under an answer: the next receive() ends the loop
        except Exception as exc:  # a bug must end this session only, as Jetty's 1011 does
            log.exception("%s: failed to handle a frame", self.label)
            await self.close_with(WSCloseCode.INTERNAL_ERROR, f"{WebSocketError.UnknownError.description()}: {exc}")

    # ---- what sessions use ------------------------------------------------------------------
    def touch(self) -> None:
        """A frame went in or out: the idle timeout starts again."""
        self._last_activity = self._loop.time()

    async def send_json(self, value: Any) -> None:
        """Send value as one text frame; raises ConnectionResetError when the socket is closing."""
        self.touch()
        await self.ws.send_str(dumps(value))

    async def close_with_error(self, error: WebSocketError, detail: str | None = None) -> None:
        """Close the session reporting error (close code 4000 + Pulsar's code)."""
        reason = error.description() + (f": {detail}" if detail else "")
        log.warning("%s: closing: %s", self.label, reason)
        await self.close_with(error.close_code, reason)

    async def close_with(self, code: int, reason: str) -> None:
        """Close the socket with code and reason, and wait for the close handshake; from on_text
        or from another task (aiohttp's close() runs beside a pending receive())."""
        if not self.ws.closed:
            await self.ws.close(code=code, message=close_reason(reason).encode("utf-8"))

    def close_soon(self, code: int, reason: str) -> None:
        """Start closing the socket without waiting: from a timer, or from a task spawn() runs
        (which is cancelled when the session ends, and must not be cancelled mid-close)."""
        if self._closing is None and not self.ws.closed:
            self._closing = self._loop.create_task(self.close_with(code, reason))

    def spawn(self, coroutine) -> asyncio.Task:
        """Run coroutine for as long as the session lives (cancelled when it ends; it closes the
        session with close_soon, never close_with)."""
        task = self._loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ---- idle timeout and pings -------------------------------------------------------------
    def _arm_idle_timer(self, delay: float) -> None:
        if self.settings.idle_timeout > 0:
            self._idle_timer = self._loop.call_later(delay, self._check_idle)

    def _check_idle(self) -> None:
        idle = self._loop.time() - self._last_activity
        if idle < self.settings.idle_timeout:
            self._arm_idle_timer(self.settings.idle_timeout - idle)
            return
        log.info("%s: idle for %.0f s", self.label, idle)
        self.close_soon(WSCloseCode.GOING_AWAY, "Connection Idle Timeout")

    async def _ping_every(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self.touch()
            try:
                await self.ws.ping(b"PING")
            except ConnectionResetError:  # closing: the read loop ends the session
                return
