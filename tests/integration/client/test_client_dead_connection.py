"""Dead connections and the reasons of connection errors.

The network to the broker goes silent (a TCP proxy that stops forwarding without closing): the
keep-alive finds it within two intervals and the connection is aborted at once, though megabytes
wait unsent in it (a graceful close would wait for a peer that takes nothing); the producer
reconnects with its back-off, capped at max_backoff_interval_ms, and every message is stored once
the network is back. And whatever fails while connecting - resolving, connecting, the CONNECT
handshake - the error names the host, the step and the OS error or the time waited."""
from __future__ import annotations

import asyncio
import logging
import re

import pytest

from minipulsar import client as mp
from minipulsar.client.exceptions import InvalidConfiguration, Timeout
from minipulsar.launcher import free_port
from tests.blackhole_proxy import BlackholeProxy
from tests.helpers import wait_for_async

KEEPALIVE = 0.3  # seconds
BACKOFF_CAP_MS = 500
PAYLOAD = bytes(64 * 1024)  # 300 messages of 64 KB: more than the socket buffers hold


@pytest.fixture
def proxied(broker_factory):
    """(broker, proxy): the broker advertises 127.0.0.2, where the proxy listens, so that lookups
    lead every connection through the proxy."""
    broker = broker_factory(advertisedAddress="127.0.0.2")
    port = int(broker.url.rsplit(":", 1)[1])
    proxy = BlackholeProxy(("127.0.0.2", port), ("127.0.0.1", port)).start()
    yield broker, proxy
    proxy.stop()


async def test_a_blackholed_connection_is_aborted_and_the_producer_catches_up(proxied, topic, caplog):
    caplog.set_level(logging.INFO, logger="minipulsar.client.handler")
    _, proxy = proxied
    loop = asyncio.get_running_loop()
    async with mp.Client(proxy.url, operation_timeout_seconds=10, connection_timeout_ms=1000,
                         keep_alive_interval_seconds=KEEPALIVE, max_backoff_interval_ms=BACKOFF_CAP_MS) as c:
        producer = await c.create_producer(topic, send_timeout_millis=0, block_if_queue_full=True)
        impl = producer._impls[0]
        cnx = impl.cnx
        proxy.blackhole()
        cut = loop.time()
        receipts = [await producer.send_async(i.to_bytes(4, "big") + PAYLOAD) for i in range(300)]
        await wait_for_async(lambda: impl.cnx is None, "the producer to learn that its connection is dead", timeout=10)
        detected = loop.time() - cut
        assert cnx.closed and cnx._lost, "aborted: connection_lost ran although frames were unsent"
        assert detected <= 2 * KEEPALIVE + 1.5, f"dead connection found after {detected:.1f} s"

        proxy.heal()
        healed = loop.time()
        await wait_for_async(lambda: impl.cnx is not None, "the producer to reconnect", timeout=10)
        reconnected = loop.time() - healed
        await asyncio.wait_for(asyncio.gather(*receipts), 30)
        consumer = await c.subscribe(topic, "check", initial_position=mp.InitialPosition.Earliest)
        got = [int.from_bytes((await consumer.receive(5000)).data()[:4], "big") for _ in range(300)]
    assert list(dict.fromkeys(got)) == list(range(300)), "every message stored, in order"
    # one back-off step plus the new connection's handshake
    assert reconnected <= BACKOFF_CAP_MS / 1000 + 2, f"reconnected {reconnected:.1f} s after the heal"
    waits = [float(w) for w in re.findall(r"reconnecting in ([\d.]+) s", caplog.text)]
    assert waits and max(waits) <= BACKOFF_CAP_MS / 1000, f"reconnection waits {waits} exceed the cap"


async def test_max_backoff_interval_must_be_positive():
    with pytest.raises(InvalidConfiguration, match="max_backoff_interval_ms"):
        mp.Client("pulsar://127.0.0.1:6650", max_backoff_interval_ms=0)


async def test_an_unresolvable_advertised_host_is_named_with_the_resolver_error(broker_factory, topic):
    """The broker's lookup answers a name the client cannot resolve (as a service name seen from
    outside its container network)."""
    broker = broker_factory(advertisedAddress="nonexistent.invalid")
    port = broker.url.rsplit(":", 1)[1]
    async with mp.Client(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=1) as c:
        with pytest.raises(Timeout) as failure:
            await c.create_producer(topic)
    # The resolver's own error, or - where no DNS server answers at all - the time waited for it.
    assert re.search(rf"cannot connect to nonexistent\.invalid:{port}: (resolving nonexistent\.invalid: \[Errno"
                     rf"|timed out after [\d.]+ s resolving nonexistent\.invalid)", str(failure.value)), str(failure.value)


async def test_a_resolver_that_never_answers_is_a_timeout_naming_host_and_step(monkeypatch):
    """As in a container cut off from its network, whose resolver does not answer: the reason is
    the time waited while resolving, never an empty string."""
    async def no_answer(*args, **kwargs):
        await asyncio.Event().wait()

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", no_answer)
    async with mp.Client("pulsar://broker-b:6650", operation_timeout_seconds=1, connection_timeout_ms=200) as c:
        with pytest.raises(Timeout) as failure:
            await c.create_producer("t")
    assert "cannot connect to broker-b:6650: timed out after 0.2 s resolving broker-b" in str(failure.value)


async def test_a_silent_server_is_a_handshake_timeout_naming_host_and_step():
    server = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)  # accepts, never answers
    port = server.sockets[0].getsockname()[1]
    try:
        async with mp.Client(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=1, connection_timeout_ms=200) as c:
            with pytest.raises(Timeout) as failure:
                await c.create_producer("t")
    finally:
        server.close()
    assert (f"cannot connect to 127.0.0.1:{port}: timed out after 0.2 s waiting for CONNECTED from 127.0.0.1:{port}"
            in str(failure.value))


async def test_a_refused_connection_names_the_address_and_the_os_error():
    port = free_port()  # nothing listens there
    async with mp.Client(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=1) as c:
        with pytest.raises(Timeout) as failure:
            await c.create_producer("t")
    expected = f"cannot connect to 127.0.0.1:{port}: connecting to 127.0.0.1:{port}: 127.0.0.1: [Errno 111]"
    assert expected in str(failure.value)
