"""Timers that send messages back to the broker: negative acks (after
negative_ack_redelivery_delay_ms) and the unacked-message timeout (unacked_messages_timeout_ms).

Both keep message ids with a deadline; a single background task wakes every `tick` seconds and
hands the expired ids to `redeliver(ids)`. Source: Pulsar's C++ NegativeAcksTracker and
UnAckedMessageTrackerEnabled.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from minipulsar.client.message_id import MessageId

log = logging.getLogger(__name__)


class RedeliveryTimer:
    """delay: seconds from add() to redelivery; redeliver(list[MessageId]) is called with expired ids."""

    def __init__(self, delay: float, redeliver: Callable[[list[MessageId]], None], tick: float | None = None):
        self.delay = delay
        self.tick = tick if tick is not None else max(0.01, min(delay / 3, 1.0))
        self._redeliver = redeliver
        self._deadlines: dict[MessageId, float] = {}
        self._task: asyncio.Task | None = None

    def __len__(self) -> int:
        return len(self._deadlines)

    def add(self, message_id: MessageId) -> None:
        self._deadlines[message_id] = time.monotonic() + self.delay
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def remove(self, message_id: MessageId) -> None:
        self._deadlines.pop(message_id, None)

    def remove_up_to(self, message_id: MessageId) -> None:
        for key in [k for k in self._deadlines if k <= message_id]:
            del self._deadlines[key]

    def clear(self) -> None:
        self._deadlines.clear()

    async def _run(self) -> None:
        while self._deadlines:
            await asyncio.sleep(self.tick)
            now = time.monotonic()
            expired = [mid for mid, deadline in self._deadlines.items() if deadline <= now]
            for mid in expired:
                del self._deadlines[mid]
            if expired:
                try:
                    self._redeliver(expired)
                except Exception:  # noqa: BLE001 - keep the timer alive
                    log.exception("redelivery failed")

    def close(self) -> None:
        self._deadlines.clear()
        if self._task is not None:
            self._task.cancel()
