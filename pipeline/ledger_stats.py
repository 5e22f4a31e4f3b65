"""How many entries each ledger of a topic partition holds, from the broker's admin REST API.

``GET {admin.url}/admin/v2/persistent/{tenant}/{namespace}/{topic}/internalStats`` (Pulsar's
PersistentTopicInternalStats) lists the partition's ledgers with their entry counts. The binary
protocol has no such question, and without the counts a planner only knows where ledgers start,
not how long they are. Used only when the ``admin.url`` option is given.
"""
from __future__ import annotations

import asyncio
import logging
from urllib.parse import quote

import aiohttp

log = logging.getLogger(__name__)


def stats_url(admin_url: str, partition: str) -> str:
    """The internalStats URL of a fully qualified topic partition name."""
    domain, rest = partition.split("://", 1)
    tenant, namespace, local = rest.split("/", 2)
    return f"{admin_url.rstrip('/')}/admin/v2/{domain}/{tenant}/{namespace}/{quote(local, safe='')}/internalStats"


async def _ledgers(session: aiohttp.ClientSession, admin_url: str, partition: str) -> dict[int, int]:
    async with session.get(stats_url(admin_url, partition)) as response:
        response.raise_for_status()
        stats = await response.json()
    return {int(ledger["ledgerId"]): int(ledger["entries"]) for ledger in stats.get("ledgers", [])}


async def ledger_entries(admin_url: str, partitions: list[str], timeout_seconds: float = 30) -> dict[str, dict[int, int]]:
    """{partition: {ledger id: entries}} for every partition, asked concurrently; raises
    aiohttp.ClientError (or TimeoutError) when the admin API cannot answer."""
    timeout = aiohttp.ClientTimeout(total=timeout_seconds)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        found = await asyncio.gather(*(_ledgers(session, admin_url, p) for p in partitions))
    log.debug("ledgers of %d partitions from %s", len(partitions), admin_url)
    return dict(zip(partitions, found))
