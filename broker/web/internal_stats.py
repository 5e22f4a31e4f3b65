"""A topic's internal stats: its managed ledger and cursors as Pulsar's
PersistentTopicInternalStats names them (GET .../internalStats).

Positions print as "ledger:entry"; individually deleted messages as Pulsar prints the range set,
"[(3:4..3:5],(3:7..3:10]]". Fields that only BookKeeper has (cursor ledgers, offloading,
under-replication) carry the values a standalone Pulsar shows for them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from minipulsar.broker.web.formats import date_text, position_text
from minipulsar.storage import ManagedCursor

if TYPE_CHECKING:
    from minipulsar.broker.topic import PersistentTopic


def of_topic(topic: "PersistentTopic") -> dict:
    ledger = topic.ledger
    infos = ledger.ledger_infos()
    current = infos[-1]
    cursors = {name: of_cursor(cursor, ledger.count_entries_between) for name, cursor in ledger.cursors.items()}
    for name, subscription in topic.subscriptions.items():
        if not subscription.durable:  # readers' cursors are not kept by the ledger
            cursors[name] = of_cursor(subscription.cursor, ledger.count_entries_between)
    return {
        "entriesAddedCounter": ledger.entries_added,
        "numberOfEntries": ledger.number_of_entries,
        "totalSize": ledger.total_size,
        "currentLedgerEntries": current.entries,
        "currentLedgerSize": current.size,
        "lastLedgerCreatedTimestamp": date_text(ledger.current_ledger_created_ms),
        "waitingCursorsCount": 0,
        "pendingAddEntriesCount": ledger.pending_appends,
        "lastConfirmedEntry": position_text(ledger.last_confirmed_position),
        "state": "LedgerOpened",
        "ledgers": [{"ledgerId": info.ledger_id, "entries": info.entries, "size": info.size, "offloaded": False,
                     "underReplicated": False} for info in infos],
        "cursors": cursors,
        "schemaLedgers": [],
        "compactedLedger": topic.compaction.internal_stats(),
        # minipulsar's own (docs/compatibility.md): failed appends, and the ledgers fenced after a
        # journal write of unknown outcome (EIO), as Pulsar fences a ledger after a write error.
        "addEntryErrors": ledger.add_entry_errors,
        "fencedLedgers": ledger.fenced_ledgers,
    }


def of_cursor(cursor: ManagedCursor, count_between) -> dict:
    md, read = cursor.mark_delete_position, cursor.read_position
    ranges = ",".join(f"({position_text(lo)}..{position_text(hi)}]" for lo, hi in cursor.individually_deleted_ranges())
    return {
        "markDeletePosition": position_text(md),
        "readPosition": position_text(read),
        "waitingReadOp": False,
        "pendingReadOps": 0,
        "messagesConsumedCounter": 0,
        "cursorLedger": -1,
        "cursorLedgerLastEntry": -1,
        "individuallyDeletedMessages": f"[{ranges}]",
        "lastLedgerSwitchTimestamp": "",
        "state": "Open",
        "active": cursor.is_active,
        "numberOfEntriesSinceFirstNotAckedMessage": count_between(md, read) if read > md else 0,
        "totalNonContiguousDeletedMessagesRange": cursor.individually_deleted_ranges_count,
        "subscriptionHavePendingRead": False,
        "subscriptionHavePendingReplayRead": False,
        "properties": cursor.properties,
    }
