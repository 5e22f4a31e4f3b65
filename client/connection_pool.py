"""Connections shared by every producer and consumer of one Client: one per (logical broker URL,
physical address), opened on first use and forgotten when it closes. Source: Pulsar's C++ ConnectionPool
(connectionsPerBroker = 1).
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from urllib.parse import urlparse

from minipulsar.client.connection import ClientConnection
from minipulsar.client.exceptions import InvalidUrl
from minipulsar.client.tls import is_tls_url

log = logging.getLogger(__name__)


DEFAULT_PORTS = {"pulsar": "6650", "pulsar+ssl": "6651"}


def parse_service_url(url: str) -> list[tuple[str, int]]:
    """'pulsar://h1:6650,h2:6651' (or pulsar+ssl://) -> [('h1', 6650), ('h2', 6651)]; raises InvalidUrl."""
    parsed = urlparse(url)
    if parsed.scheme not in DEFAULT_PORTS:
        raise InvalidUrl(f"unsupported service URL {url!r}: pulsar:// or pulsar+ssl:// expected")
    hosts = []
    for part in parsed.netloc.split(","):
        host, _, port = part.rpartition(":")
        if not host:
            host, port = part, DEFAULT_PORTS[parsed.scheme]
        try:
            hosts.append((host.strip("[]"), int(port)))
        except ValueError:
            raise InvalidUrl(f"bad port in service URL {url!r}") from None
    if not hosts or not hosts[0][0]:
        raise InvalidUrl(f"no host in service URL {url!r}")
    return hosts


class ConnectionPool:
    """get(logical_url, physical_url) -> an open ClientConnection."""

    def __init__(self, operation_timeout: float, connection_timeout: float, authentication=None,
                 keep_alive_interval: float = 30.0, ssl_context: ssl.SSLContext | None = None):
        self.ssl_context = ssl_context  # for pulsar+ssl:// addresses (client/tls.py)
        self.operation_timeout = operation_timeout
        self.connection_timeout = connection_timeout
        self.authentication = authentication
        self.keep_alive_interval = keep_alive_interval
        self._connections: dict[tuple[str, str], asyncio.Future] = {}

    async def get(self, logical_url: str, physical_url: str | None = None) -> ClientConnection:
        """The pooled connection to logical_url (through physical_url when proxying)."""
        key = (logical_url, physical_url or logical_url)
        future = self._connections.get(key)
        if future is not None:
            if not future.done():
                return await asyncio.shield(future)
            if future.exception() is None and not future.result().closed:
                return future.result()
        future = asyncio.get_running_loop().create_future()
        self._connections[key] = future
        try:
            cnx = await self._open(key)
        except BaseException as exc:
            self._connections.pop(key, None)
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters get it through shield
            raise
        future.set_result(cnx)
        return cnx

    async def _open(self, key: tuple[str, str]) -> ClientConnection:
        logical_url, physical_url = key
        host, port = parse_service_url(physical_url)[0]
        if is_tls_url(physical_url) and self.ssl_context is None:
            raise InvalidUrl(f"{physical_url} needs TLS: create the Client with a pulsar+ssl:// service URL "
                             f"or use_tls=True")
        cnx = ClientConnection(
            logical_url, host, port, operation_timeout=self.operation_timeout,
            ssl_context=self.ssl_context if is_tls_url(physical_url) else None,
            keep_alive_interval=self.keep_alive_interval, authentication=self.authentication,
            proxy_to_broker_url=logical_url if logical_url != physical_url else None,
            on_closed=lambda c: self._forget(key, c),
        )
        return await cnx.open(self.connection_timeout)

    def _forget(self, key: tuple[str, str], cnx: ClientConnection) -> None:
        future = self._connections.get(key)
        if future is not None and future.done() and not future.exception() and future.result() is cnx:
            del self._connections[key]

    def close(self) -> None:
        """Close every connection."""
        for future in list(self._connections.values()):
            if future.done() and not future.exception():
                future.result().close()
        self._connections.clear()
