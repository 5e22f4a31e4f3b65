"""PIP-282's last sent position and the individually sent positions above it.

Every position at or below the last sent position has been sent (or acknowledged, which counts as
sent); positions sent out of order above it are kept as (lower, upper] ranges and folded into the
last sent position as soon as the gap below them closes. The PIP's worked example, from last sent
3:0: sending 3:1-3:3, 3:5 and 3:8-3:10 gives last sent 3:3 with [(3:4, 3:5], (3:7, 3:10]];
then 3:7 -> [(3:4, 3:5], (3:6, 3:10]]; 3:6 -> [(3:4, 3:10]]; 3:4 -> last sent 3:10, [].
Source: PIP-282 / PersistentStickyKeyDispatcherMultipleConsumers.lastSentPosition.
"""
from __future__ import annotations

from typing import Callable

from minipulsar.storage import Position
from minipulsar.storage.range_set import PositionRangeSet

# Stepping over acknowledged positions one at a time is bounded per call: stopping early only
# keeps the last sent position lower, which is the safe side (recently joined consumers wait longer).
_MAX_STEPS = 10_000


class LastSentTracker:
    """next_position(p): the position after p (crossing ledgers); is_deleted(p): acknowledged."""

    def __init__(self, start: Position, next_position: Callable[[Position], Position],
                 is_deleted: Callable[[Position], bool]):
        self.last_sent = start
        self.individually_sent = PositionRangeSet()
        self._next = next_position
        self._is_deleted = is_deleted

    def mark_sent(self, position: Position) -> None:
        """Record that position went to a consumer."""
        last = self.last_sent
        if position <= last:
            return
        # The entry right after last in its ledger needs no ledger lookup (this runs per entry sent).
        if (position.ledger_id == last.ledger_id and position.entry_id == last.entry_id + 1) \
                or position == self._next(last):
            self.last_sent = position
            if self.individually_sent:  # the gap below them closed: fold
                self._fold()
            # else positions acknowledged above (never sent by this dispatcher) fold at the next
            # catch_up; until then the last sent position is lower, the safe side
        else:
            # Above a gap nothing can fold yet (the last fold left the position after the last
            # sent one unsent and unacknowledged); catch_up folds what acknowledgements opened.
            self.individually_sent.add(position)

    def catch_up(self, mark_delete: Position) -> Position:
        """Move up to the mark-delete position (all of it is acknowledged) and fold; returns last sent."""
        if mark_delete > self.last_sent:
            self.last_sent = mark_delete
            self.individually_sent.remove_at_most(mark_delete)
        self._fold()
        return self.last_sent

    def reset(self, position: Position) -> None:
        """Start over at position (after a seek): nothing above it has been sent."""
        self.last_sent = position
        self.individually_sent.clear()

    def _fold(self) -> None:
        for _ in range(_MAX_STEPS):
            nxt = self._next(self.last_sent)
            sent = self.individually_sent.range_containing(nxt)
            if sent is not None:
                self.last_sent = sent[1]
                self.individually_sent.remove_at_most(sent[1])
            elif self._is_deleted(nxt):
                self.last_sent = nxt
            else:
                return

    def stats(self) -> dict:
        return {
            "lastSentPosition": str(self.last_sent),
            "individuallySentPositions": repr(self.individually_sent),
        }
