"""The official `pulsar` package (pulsar-client) behind the bundled client's asyncio API, for
`minipulsar perf --client official`. Only what the perf verbs use is adapted:

    backend = load()                         # raises UsageError if pulsar-client is not installed
    async with backend.Client(url, operation_timeout_seconds=30) as c:
        producer = await c.create_producer(topic, **official_producer_options)
        future = await producer.send_async(payload)     # an asyncio future, settled by the receipt
        consumer = await c.subscribe(topic, sub, **official_subscribe_options)
        message = await consumer.receive(); await consumer.acknowledge(message)

Blocking calls run in threads; the official client's callbacks settle asyncio futures through
loop.call_soon_threadsafe. Its warnings and errors go to stderr through its own ConsoleLogger: with a
Python logger instead, the client's I/O threads call into Python while the interpreter exits, and
about one run in four ended in std::terminate (exit -6).
"""
from __future__ import annotations

import asyncio
import types

from minipulsar.cli.runtime import UsageError

_RECEIVE_POLL_MS = 1000  # a blocked receive() returns this often, so cancellation is noticed


def load() -> types.SimpleNamespace:
    """The backend: Client plus the official ConsumerType, InitialPosition and CompressionType."""
    try:
        import pulsar
    except ImportError:
        raise UsageError("--client official needs the official client: pip install pulsar-client") from None
    return types.SimpleNamespace(Client=lambda *a, **kw: OfficialClient(pulsar, *a, **kw),
                                 ConsumerType=pulsar.ConsumerType, InitialPosition=pulsar.InitialPosition,
                                 CompressionType=pulsar.CompressionType)


class OfficialClient:
    """pulsar.Client as an async context manager with coroutine factories."""

    def __init__(self, pulsar, service_url: str, operation_timeout_seconds: float = 30, **options):
        self._pulsar = pulsar
        self._client = pulsar.Client(service_url, operation_timeout_seconds=max(1, round(operation_timeout_seconds)),
                                     logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn), **options)
        self._handles: list = []  # producers and consumers, closed before the client

    async def __aenter__(self) -> "OfficialClient":
        return self

    async def __aexit__(self, *exc_info) -> None:
        """Close the producers and consumers, then the client, while the loop still runs."""
        handles, self._handles = self._handles, []
        for handle in handles:
            await asyncio.to_thread(handle.close)
        await asyncio.to_thread(self._client.close)
        del handles, self._client

    async def create_producer(self, topic: str, **options) -> "OfficialProducer":
        producer = await asyncio.to_thread(self._client.create_producer, topic, **options)
        self._handles.append(producer)
        return OfficialProducer(self._pulsar, producer)

    async def subscribe(self, topic: str, subscription_name: str, **options) -> "OfficialConsumer":
        consumer = await asyncio.to_thread(self._client.subscribe, topic, subscription_name, **options)
        self._handles.append(consumer)
        return OfficialConsumer(self._pulsar, consumer)


class OfficialProducer:
    def __init__(self, pulsar, producer):
        self._pulsar = pulsar
        self._producer = producer

    async def send_async(self, content: bytes) -> asyncio.Future:
        """Queue content; the future resolves to the MessageId or fails with the send's Result."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def on_receipt(result, message_id) -> None:  # on the official client's I/O thread
            if not loop.is_closed():  # an exception must never escape into the client's thread
                loop.call_soon_threadsafe(self._settle, future, result, message_id)

        self._producer.send_async(content, on_receipt)
        return future

    def _settle(self, future: asyncio.Future, result, message_id) -> None:
        if future.done():
            return
        if result == self._pulsar.Result.Ok:
            future.set_result(message_id)
        else:
            future.set_exception(RuntimeError(f"send failed: {result}"))


class OfficialConsumer:
    def __init__(self, pulsar, consumer):
        self._pulsar = pulsar
        self._consumer = consumer

    async def receive(self):
        """The next message (waits as long as it takes)."""
        while True:
            try:
                return await asyncio.to_thread(self._consumer.receive, _RECEIVE_POLL_MS)
            except self._pulsar.Timeout:
                continue

    async def acknowledge(self, message) -> None:
        self._consumer.acknowledge(message)  # the official ack only queues; it does not block
