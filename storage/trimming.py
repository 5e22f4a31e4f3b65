"""Which consumed ledgers a managed ledger may delete now (the policy; the ledger deletes them).

Pulsar's ``ManagedLedgerImpl.internalTrimLedgers``: walking from the oldest ledger, a sealed
ledger goes when its last entry is at or below ``slowest`` (the lowest *persisted* mark-delete
position of the durable cursors, or the last confirmed entry when there is none) and
retention does not keep it. Retention is ``(minutes, size_mb)``, 0 = none, -1 = unlimited:
a consumed ledger is kept unless its retention time expired **or** the retained size stays
at/over the quota without it. The walk stops at the first ledger that stays, and never
reaches the current ledger.
"""
from __future__ import annotations

from .ledger_map import LedgerMap
from .position import Position

MIB = 1024 * 1024


def ledgers_to_trim(ledgers: LedgerMap, slowest: Position, retention: tuple[int, int], now_ms: float) -> list[int]:
    """Ids of the ledgers to delete, oldest first; ``now_ms`` is wall-clock ms since the epoch
    (compared with each ledger's ``sealed_at_ms``)."""
    minutes, size_mb = retention
    doomed: list[int] = []
    remaining = ledgers.total_size
    for lid, info in ledgers.ledgers.items():
        if lid >= ledgers.current_id:
            break
        if info.entries and Position(lid, info.entries - 1) > slowest:
            break
        remaining -= info.data_bytes
        expired = minutes >= 0 and now_ms - info.sealed_at_ms >= minutes * 60_000
        over_quota = size_mb >= 0 and remaining >= size_mb * MIB
        if not (expired or over_quota):
            break
        doomed.append(lid)
    return doomed
