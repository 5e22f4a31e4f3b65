"""What the driver asks the broker when it plans reads: the partitions of the topics, the last
message id of each partition, and the first message at or after a position or a publish time.

Every query opens a bundled ``client.Client`` on a fresh event loop (``asyncio.run``), because
Spark calls the planning methods from plain threads of its Python workers. Only readers are
created (non-durable subscriptions): nothing is left behind on the broker.
"""
from __future__ import annotations

import asyncio
import re
import logging
from typing import Awaitable, Callable, TypeVar

from minipulsar.client import Client, MessageId, Timeout
from minipulsar.client.topic_name import partition_index

from minipulsar.pipeline.offsets import EARLIEST, Position, exclusive_start_before

log = logging.getLogger(__name__)
T = TypeVar("T")


def run_with_client(service_url: str, operation_timeout_seconds: float,
                    work: Callable[[Client], Awaitable[T]]) -> T:
    """asyncio.run(work(client)) with a Client that is closed afterwards."""
    async def main() -> T:
        async with Client(service_url, operation_timeout_seconds=operation_timeout_seconds) as c:
            return await work(c)
    return asyncio.run(main())


async def topic_partitions(c: Client, topics: tuple[str, ...] | list[str], pattern: str | None = None) -> list[str]:
    """The partition names of every topic (a non-partitioned topic is its own single partition),
    in topic order then partition order; with pattern, the topics of its namespace that match it."""
    if pattern:
        topics = await matching_topics(c, pattern)
    found = await asyncio.gather(*(c.get_topic_partitions(t) for t in topics))
    return [name for names in found for name in names]


async def matching_topics(c: Client, pattern: str) -> list[str]:
    """Topics of the pattern's namespace whose full name matches it, as Pulsar's topicsPattern:
    'persistent://tenant/ns/prefix-.*' searches tenant/ns; a pattern without a domain searches
    public/default with the short name expanded."""
    if "://" not in pattern:
        pattern = f"persistent://public/default/{pattern}"
    tenant, namespace = pattern.split("://", 1)[1].split("/")[:2]
    regex = re.compile(pattern)
    return [t for t in await c.get_topics_of_namespace(f"{tenant}/{namespace}") if regex.fullmatch(t)]


async def last_position(c: Client, partition: str) -> Position:
    """The id of the last message of one partition (of its last batch message when batched);
    ``entryId == -1`` when the partition never held a message."""
    reader = await c.create_reader(partition, MessageId.latest)
    try:
        last = await reader.get_last_message_id()
    finally:
        await reader.close()
    return Position.of(last)


async def last_positions(c: Client, partitions: list[str]) -> dict[str, Position]:
    """{partition: last_position} for every partition, asked concurrently."""
    found = await asyncio.gather(*(last_position(c, p) for p in partitions))
    return dict(zip(partitions, found))


async def first_message_after(c: Client, partition: str, start: Position, timeout_ms: int,
                              publish_time_ms: int | None = None) -> MessageId | None:
    """The id of the first message after start (and published at or after publish_time_ms when
    given), or None when the partition holds no such message now."""
    start_id = MessageId.earliest if start.is_earliest else start.message_id(partition_index(partition))
    reader = await c.create_reader(partition, start_id)
    try:
        if publish_time_ms is not None:
            await reader.seek(int(publish_time_ms))
        if not await reader.has_message_available():
            return None
        try:
            while True:  # the seek skips earlier entries; checked here too, publish times being what count
                message = await reader.read_next(timeout_ms)
                if publish_time_ms is None or message.publish_timestamp() >= publish_time_ms:
                    return message.message_id()
        except Timeout:
            log.debug("%s: no message after %s (publish time >= %s) within %d ms",
                      partition, start, publish_time_ms, timeout_ms)
            return None
    finally:
        await reader.close()


async def positions_at_time(c: Client, partitions: list[str], publish_time_ms: int,
                            timeout_ms: int) -> dict[str, Position]:
    """Start positions such that each range begins at the first message published at or after
    publish_time_ms; partitions without such a message start at their last message id."""
    async def one(partition: str) -> Position:
        first = await first_message_after(c, partition, EARLIEST, timeout_ms, publish_time_ms)
        if first is None:
            return await last_position(c, partition)
        return exclusive_start_before(first)
    found = await asyncio.gather(*(one(p) for p in partitions))
    return dict(zip(partitions, found))
