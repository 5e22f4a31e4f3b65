"""What producers and consumers share: holding one connection to the broker that serves their topic
and getting a new one, with exponential back-off, whenever it is lost.

Creation (start()) retries retryable errors until the operation timeout and fails at once on the
others (TopicNotFound, ProducerBusy, ...). Once created, a handle retries every error except the
terminal ones (ProducerFenced, TopicTerminated) for as long as it is open, so a broker restart is
survived. Subclasses implement _connection_opened(cnx) (send PRODUCER / SUBSCRIBE and wait for the
answer), _connection_lost() and _close_command(request_id) (their CLOSE_PRODUCER / CLOSE_CONSUMER);
_send_close and _request_close are the one way either kind of handle closes itself on the broker.
Reconnection waits follow the client's back-off: 100 ms doubling up to its
max_backoff_interval_ms (60 s by default). Source: Pulsar's C++ HandlerBase (backoff 100 ms .. 60 s).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from minipulsar.client.backoff import Backoff
from minipulsar.client.connection import ClientConnection
from minipulsar.client.exceptions import RETRYABLE, AlreadyClosed, ProducerFenced, PulsarException, Timeout, TopicTerminated
from minipulsar.proto import PulsarApi_pb2 as api

if TYPE_CHECKING:
    from minipulsar.client.client import Client

log = logging.getLogger(__name__)

TERMINAL = (ProducerFenced, TopicTerminated, AlreadyClosed)


class HandlerBase:
    """topic: the fully qualified (partition) topic this handle works on."""

    def __init__(self, client: "Client", topic: str):
        self.client = client
        self.topic = topic
        self.cnx: ClientConnection | None = None
        self.closed = False
        self.failed: Exception | None = None
        self._backoff = Backoff(maximum=client.max_backoff_interval)
        self._ever_connected = False
        self._reconnect_task: asyncio.Task | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        """Connect for the first time; raises the creation error or Timeout."""
        deadline = time.monotonic() + self.client.operation_timeout
        while True:
            try:
                await self._connect_once()
                return
            except PulsarException as exc:
                if not isinstance(exc, RETRYABLE):
                    raise
                delay = self._backoff.next()
                if time.monotonic() + delay >= deadline:
                    raise Timeout(f"{self}: could not connect within the operation timeout: {exc}") from exc
                log.info("%s: connect failed (%s); retrying in %.1f s", self, exc, delay)
                await asyncio.sleep(delay)

    async def _connect_once(self) -> None:
        if self.closed:
            raise AlreadyClosed(f"{self} is closed")
        logical, physical = await self.client.lookup.lookup(self.topic)
        cnx = await self.client.pool.get(logical, physical)
        await self._connection_opened(cnx)
        if self.closed:
            return
        self.cnx = cnx
        self._ever_connected = True
        self._backoff.reset()
        self._ready.set()
        self._after_connected()

    def on_connection_closed(self, cnx: ClientConnection) -> None:
        """The connection dropped or the broker closed this handle: reconnect in the background."""
        if cnx is not self.cnx or self.closed:
            return
        self.cnx = None
        self._ready.clear()
        self._connection_lost()
        self.schedule_reconnect()

    def schedule_reconnect(self) -> None:
        if self.closed or (self._reconnect_task is not None and not self._reconnect_task.done()):
            return
        self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        while not self.closed and self.cnx is None:
            delay = self._backoff.next()
            log.info("%s: reconnecting in %.2f s", self, delay)
            await asyncio.sleep(delay)
            try:
                await self._connect_once()
                log.info("%s: reconnected", self)
            except TERMINAL as exc:
                log.error("%s: giving up: %s", self, exc)
                self.failed = exc
                self._on_terminal_failure(exc)
                return
            except Exception as exc:  # noqa: BLE001 - keep trying while open; the cause is logged
                self._reconnect_failed(exc)

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until connected; raises the terminal failure or Timeout."""
        if self.failed is not None:
            raise self.failed
        try:
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        except TimeoutError:
            raise Timeout(f"{self}: not connected") from None

    def stop_reconnecting(self) -> None:
        self.closed = True
        if self._reconnect_task is not None and self._reconnect_task is not asyncio.current_task():
            self._reconnect_task.cancel()

    # ---- closing on the broker --------------------------------------------------------------
    def _send_close(self, cnx: ClientConnection) -> None:
        """Send CLOSE_PRODUCER / CLOSE_CONSUMER without waiting for the answer: after PRODUCER or
        SUBSCRIBE timed out, so that a broker which created the handle late releases it."""
        cnx.send_command(self._close_command(self.client.new_request_id()))

    async def _request_close(self, cnx: ClientConnection) -> None:
        """Send CLOSE_PRODUCER / CLOSE_CONSUMER and wait for the answer (bounded by the operation
        timeout); a failure is only logged, since the handle is closed locally anyway."""
        request_id = self.client.new_request_id()
        command = self._close_command(request_id)
        try:
            await cnx.request(command, request_id)
        except Exception as exc:  # noqa: BLE001 - closing anyway
            log.debug("%s: %s failed: %s", self, api.BaseCommand.Type.Name(command.type), exc)

    # ---- for subclasses --------------------------------------------------------------------
    def _close_command(self, request_id: int) -> api.BaseCommand:
        """The CLOSE_PRODUCER / CLOSE_CONSUMER command of this handle."""
        raise NotImplementedError

    async def _connection_opened(self, cnx: ClientConnection) -> None:
        raise NotImplementedError

    def _after_connected(self) -> None:
        """Runs once self.cnx is set (resend pending messages, send FLOW)."""

    def _connection_lost(self) -> None:
        """Runs when the connection is gone, before reconnecting."""

    def _reconnect_failed(self, exc: Exception) -> None:
        """A reconnection attempt failed with exc; the next one follows after the back-off."""
        log.info("%s: reconnect failed: %s", self, exc)

    def _on_terminal_failure(self, exc: Exception) -> None:
        """The handle cannot reconnect any more."""


async def start_all(handles) -> None:
    """Start every per-partition handle together; if any fails, close them all and raise the
    first error (a producer or consumer is usable only with all its partitions)."""
    results = await asyncio.gather(*(h.start() for h in handles), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        await asyncio.gather(*(h.close() for h in handles), return_exceptions=True)
        raise errors[0]
