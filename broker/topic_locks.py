"""One asyncio lock per persistent topic name, held while the topic is loaded and while it is
closed (an unload or a delete), so a topic is loaded again only once its ledger is closed
(Pulsar's BrokerService keeps one future per topic for the same purpose). A lock lives only while
someone holds or waits for it: a broker with a million topics loaded holds none."""
from __future__ import annotations

import asyncio
import contextlib


class TopicLocks:
    """hold(name): an async context manager, exclusive per name; `held` maps the names locked or
    waited for to [lock, holders and waiters]."""

    def __init__(self) -> None:
        self.held: dict[str, list] = {}

    @contextlib.asynccontextmanager
    async def hold(self, name: str):
        slot = self.held.setdefault(name, [asyncio.Lock(), 0])
        slot[1] += 1
        try:
            async with slot[0]:
                yield
        finally:
            slot[1] -= 1
            if not slot[1]:
                del self.held[name]
