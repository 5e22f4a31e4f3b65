"""The example's demo input: a thread that publishes a steady number of messages a second.

Messages are ``b"event <i>"`` with keys ``key-0`` .. ``key-4`` and event time = the time of
sending. Sending is paced against the clock, not by sleeping after each message: every tick
publishes what the rate says is due by now, so 1,000 messages a second cost about 100 wake-ups a
second and the rate holds however long one send takes.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time

log = logging.getLogger(__name__)

TICK_SECONDS = 0.01
KEYS = 5


class DemoProducer:
    """Publish ``rate`` messages a second to ``topic`` from a background thread.

    ``start()`` begins; ``stop()`` stops sending, waits for every receipt and returns how many
    messages the broker confirmed. ``published`` counts confirmations as they arrive.
    """

    def __init__(self, service_url: str, topic: str, rate: float):
        self.service_url = service_url
        self.topic = topic
        self.rate = rate
        self.published = 0
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-producer", daemon=True)

    def start(self) -> "DemoProducer":
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> int:
        self._stop.set()
        self._thread.join(timeout)
        return self.published

    def _run(self) -> None:
        try:
            asyncio.run(self._publish())
        except Exception:  # noqa: BLE001 - a demo input that dies must say why, not kill the example
            log.exception("demo producer failed after %d messages", self.published)

    def _confirmed(self, error, message_id) -> None:
        if error is None:
            self.published += 1
        else:
            self.failed += 1

    async def _publish(self) -> None:
        from minipulsar.client import Client

        async with Client(self.service_url) as client:
            producer = await client.create_producer(self.topic, batching_enabled=True,
                                                    batching_max_publish_delay_ms=5, block_if_queue_full=True)
            started, sent = time.monotonic(), 0
            while not self._stop.is_set():
                due = int((time.monotonic() - started) * self.rate)
                for i in range(sent, due):
                    await producer.send_async(f"event {i}".encode(), self._confirmed, partition_key=f"key-{i % KEYS}",
                                              event_timestamp=int(time.time() * 1000))
                sent = max(sent, due)
                await asyncio.sleep(TICK_SECONDS)
            await producer.flush()
            await producer.close()
        if self.failed:
            log.warning("demo producer: %d messages failed", self.failed)
