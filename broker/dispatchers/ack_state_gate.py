"""PIP-299: pause dispatching new entries while the ack state can no longer be fully persisted.

At each cursor persist the gate caches how many individually deleted ranges the cursor held (an
estimate, as the PIP says: acks after the persist only shrink it). While
dispatcherPauseOnAckStatePersistentEnabled is on and that number exceeds
managedLedgerMaxUnackedRangesToPersist, multi-consumer dispatchers (Shared, Key_Shared,
Key_Failover) read no new entries; redeliveries still go out. A later persist under the cap, or a
skip, clear-backlog, seek or reset, lifts the pause. Both settings are read live, so changing
them while the broker runs takes effect at the next check.
Source: PIP-299 / Pulsar ManagedCursor.isCursorDataFullyPersistable, shouldPauseOnAckStatePersist.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from minipulsar.broker.config import BrokerConfig
    from minipulsar.storage import ManagedCursor

log = logging.getLogger(__name__)


class AckStateGate:
    """cursor: the subscription's cursor; config: the broker's live settings (the range cap);
    enabled(): whether dispatcherPauseOnAckStatePersistentEnabled is in force for this subscription
    (its namespace's policy, else the setting); on_resume(): called when a pause ends, so the
    dispatcher reads again."""

    def __init__(self, name: str, cursor: "ManagedCursor", config: "BrokerConfig", enabled: Callable[[], bool],
                 on_resume: Callable[[], None]):
        self.name = name
        self.cursor = cursor
        self.config = config
        self.enabled = enabled
        self.on_resume = on_resume
        self.ranges_at_last_persist = cursor.individually_deleted_ranges_count
        self._was_blocked = False
        cursor.add_persist_listener(self.on_persisted)

    @property
    def blocked(self) -> bool:
        """The PIP's isBlockedOnAckStatePersistent; always False with the feature off."""
        return (
            self.enabled()
            and self.ranges_at_last_persist > self.config.managed_ledger_max_unacked_ranges_to_persist
        )

    def on_persisted(self) -> None:
        self.ranges_at_last_persist = self.cursor.individually_deleted_ranges_count
        self._report()

    def reset(self) -> None:
        """Skip, clear-backlog, seek or reset rewrote the ack state: resume at once."""
        self.ranges_at_last_persist = self.cursor.individually_deleted_ranges_count
        self._report()

    def recheck(self) -> None:
        """The settings changed: pause or resume accordingly."""
        self._report()

    def _report(self) -> None:
        blocked = self.blocked
        if blocked and not self._was_blocked:
            log.warning("%s: pausing dispatch: %d ack ranges at the last persist exceed %d "
                        "(managedLedgerMaxUnackedRangesToPersist)", self.name, self.ranges_at_last_persist,
                        self.config.managed_ledger_max_unacked_ranges_to_persist)
        elif self._was_blocked and not blocked:
            log.info("%s: resuming dispatch: %d ack ranges at the last persist", self.name, self.ranges_at_last_persist)
            self.on_resume()
        self._was_blocked = blocked

    def close(self) -> None:
        self.cursor.remove_persist_listener(self.on_persisted)

    def stats(self) -> dict:
        return {
            "blockedOnAckStatePersistent": self.blocked,
            "nonContiguousDeletedMessagesRangesAtLastPersist": self.ranges_at_last_persist,
        }
