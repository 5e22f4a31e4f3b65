"""ManagedCursor: one subscription's (or reader's) position in a managed ledger.

State, as in Pulsar's ``ManagedCursorImpl``:

* mark-delete position: every entry ``<=`` it is acknowledged;
* individually deleted messages: ``(lower, upper]`` ranges above it (:class:`PositionRangeSet`);
* read position: the next entry to dispatch;
* long properties attached to the mark-delete, string cursor properties.

A durable cursor persists that state (at most ``max_unacked_ranges_to_persist`` ranges,
lowest first) through :mod:`storage.cursor_store`, rate limited to
``mark_delete_rate_limit`` persists per second, and always on close. Ledger trimming
uses the *persisted* mark-delete, so an ack lost in a crash is redelivered, never lost.
A non-durable cursor (readers) never touches the disk.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Callable, Iterable

from . import cursor_store
from .cursor_store import CursorState
from .errors import CursorError, PersistenceError
from .position import EARLIEST, Position
from .range_set import PositionRangeSet

if TYPE_CHECKING:
    from .cursor_ledger import CursorLedger
    from .entry import Entry
    from .ledger_map import LedgerMap

log = logging.getLogger(__name__)


class ManagedCursor:
    """A named cursor over one managed ledger; create via the ledger, not directly.

    It computes positions on the ledger's :class:`LedgerMap` (``ledger_map``: a direct method
    call per acknowledgement, as fast as before the map was split out) and reaches the ledger
    only for reads, the last confirmed position and settings, through
    :class:`storage.cursor_ledger.CursorLedger`.
    """

    def __init__(self, ledger: "CursorLedger", ledger_map: "LedgerMap", name: str, durable: bool,
                 mark_delete: Position, state: CursorState | None = None, store_base: str | None = None,
                 slot: int = -1) -> None:
        self.name = name
        self.durable = durable
        self._ledger = ledger
        self._map = ledger_map
        self._md = mark_delete
        self._ranges = PositionRangeSet(state.ranges if state else ())
        self._properties: dict[str, int] = dict(state.properties) if state else {}
        self._cursor_properties: dict[str, str] = dict(state.cursor_properties) if state else {}
        self._read = ledger_map.next_valid_position(mark_delete)
        # persistence bookkeeping
        self._base = store_base
        self._slot = slot
        self._seq = state.seq if state else 0
        self._persisted_md = mark_delete
        self._dirty = False
        self._timer: asyncio.TimerHandle | None = None
        self._persist_task: asyncio.Task | None = None
        self._last_persist_at = 0.0
        self._last_persisted_ranges = len(state.ranges) if state else 0
        self._last_dropped = False
        self._listeners: list[Callable[[], None]] = []
        self._closed = False

    # -- activity: whether the ledger caches appends for this cursor ------------------
    def set_active(self) -> None:
        """Something reads this cursor at the tail (its subscription has a consumer, or a
        replicator reads it): the ledger caches new entries. Pulsar ``ManagedCursor.setActive``."""
        self._ledger.activate_cursor(self)

    def set_inactive(self) -> None:
        """Nothing reads this cursor any more. Pulsar ``ManagedCursor.setInactive``."""
        self._ledger.deactivate_cursor(self)

    @property
    def is_active(self) -> bool:
        """Pulsar ``ManagedCursor.isActive`` (the internal stats' cursor field ``active``)."""
        return self._ledger.is_cursor_active(self)

    # -- positions -----------------------------------------------------------
    @property
    def mark_delete_position(self) -> Position:
        """Everything ``<=`` this is acknowledged."""
        return self._md

    @property
    def persisted_mark_delete_position(self) -> Position:
        """The mark-delete position of the last completed persist (what a crash restarts from)."""
        return self._persisted_md

    @property
    def read_position(self) -> Position:
        """The next position :meth:`read_entries` starts from."""
        return self._read

    def has_more_entries(self) -> bool:
        """True when a durable entry exists at or after the read position."""
        return self._read <= self._ledger.last_confirmed_position

    def seek(self, read_position: Position) -> None:
        """Move the read position, clamped to >= the entry after the mark-delete position."""
        floor = self._map.next_valid_position(self._md)
        self._read = max(read_position, floor)

    def rewind(self) -> None:
        """Read position = the entry after the mark-delete position (redeliver all unacked)."""
        self._read = self._map.next_valid_position(self._md)

    # -- reads ---------------------------------------------------------------
    async def read_entries(self, max_entries: int, max_bytes: int = 5 * 1024 * 1024) -> list["Entry"]:
        """Up to ``max_entries`` entries from the read position, skipping individually deleted ones.

        Advances the read position past every entry returned or skipped; [] when none is ready.
        """
        out: list["Entry"] = []
        budget = max_bytes
        while len(out) < max_entries and self.has_more_entries():
            batch = await self._ledger.read_entries(self._read, max_entries - len(out), budget)
            if not batch:
                break
            if self._none_deleted_from(batch[0].position):  # the usual case: one check per batch
                out.extend(batch)
                budget -= sum(len(entry.data) for entry in batch)
            else:
                for entry in batch:
                    if not self.is_deleted(entry.position):
                        out.append(entry)
                        budget -= len(entry.data)
            self._read = max(self._read, self._map.next_valid_position(batch[-1].position))
            if out and budget <= 0:
                break
        return out

    async def replay_entries(self, positions: Iterable[Position]) -> tuple[list["Entry"], list[Position]]:
        """Read the entries at ``positions`` again (redelivery), ascending, without moving the read
        position: returns (entries, skipped), where skipped lists the positions already
        acknowledged or trimmed from the ledger (Pulsar ``ManagedCursor.asyncReplayEntries``)."""
        ordered = sorted(positions)
        entries = await self._ledger.read_positions([p for p in ordered if not self.is_deleted(p)])
        found = {entry.position for entry in entries}
        return entries, [p for p in ordered if p not in found]

    async def find_newest_matching(self, predicate: Callable[[bytes], bool]) -> Position | None:
        """The last retained position whose entry data satisfies the monotone ``predicate``
        (binary search over the ledger; Pulsar ``ManagedCursor.asyncFindNewestMatching``)."""
        return await self._ledger.find_newest_matching(predicate)

    # -- position arithmetic, as the ledger counts entries -------------------
    def next_valid_position(self, position: Position) -> Position:
        """The position right after ``position`` an entry has (or would get), crossing ledgers."""
        return self._map.next_valid_position(position)

    def previous_position(self, position: Position) -> Position:
        """The entry before ``position``, crossing back into earlier ledgers, or ``(L, -1)``."""
        return self._map.previous_position(position)

    # -- acknowledgements ----------------------------------------------------
    def _none_deleted_from(self, pos: Position) -> bool:
        """True when no position >= ``pos`` is acknowledged (mark-delete below, no range above)."""
        if pos <= self._md:
            return False
        # A range ending at pos holds pos: ask for ranges ending above the entry before it.
        return not self._ranges or self._ranges.first_range_above(pos.previous_in_ledger()) is None

    def is_deleted(self, pos: Position) -> bool:
        """True when ``pos`` is at/below the mark-delete position or individually deleted."""
        return pos <= self._md or pos in self._ranges

    def mark_delete(self, position: Position, properties: dict[str, int] | None = None) -> None:
        """Cumulative ack up to ``position`` (clamped to the last confirmed entry).

        No-op when ``position <= mark-delete``. ``properties`` replace the long properties
        when given (None keeps them). Schedules a rate-limited persist.
        """
        self._check_open()
        lac = self._ledger.last_confirmed_position
        if position > lac:
            log.warning("cursor %s: mark-delete %s beyond last confirmed %s, clamped", self.name, position, lac)
            position = lac
        if properties is not None:
            self._properties = dict(properties)
        if position <= self._md:
            if properties is not None:
                self._schedule_persist()
            return
        self._set_mark_delete(position)
        self._schedule_persist()

    def delete(self, positions: Iterable[Position]) -> None:
        """Individual acks; the mark-delete moves over the contiguous acknowledged prefix."""
        self._check_open()
        changed = False
        ranges, next_valid = self._ranges, self._map.next_valid_position
        for pos in positions:
            if pos <= self._md:
                continue
            if not ranges and pos == next_valid(self._md):
                self._md = pos  # the common in-order ack: no range to keep, nothing to merge
                changed = True
            elif ranges.add(pos):
                changed = True
        if not changed:
            return
        if next_valid(self._md) in ranges:
            self._set_mark_delete(self._md)
        elif self._read <= self._md:
            self._read = next_valid(self._md)
        self._schedule_persist()

    def _set_mark_delete(self, position: Position) -> None:
        """Move mark-delete to ``position``, then over every range contiguous with it."""
        ledger_map = self._map
        self._ranges.remove_at_most(position)
        while True:
            nxt = ledger_map.next_valid_position(position)
            rng = self._ranges.range_containing(nxt)
            if rng is None:
                break
            position = rng[1]
            self._ranges.remove_at_most(position)
        self._md = position
        if self._read <= position:
            self._read = ledger_map.next_valid_position(position)

    @property
    def individually_deleted_ranges_count(self) -> int:
        """Number of ``(lower, upper]`` ranges held in memory (Pulsar ``getTotalNonContiguousDeletedMessagesRange``)."""
        return len(self._ranges)

    def individually_deleted_ranges(self) -> list[tuple[Position, Position]]:
        """The ``(lower, upper]`` ranges, lowest first."""
        return self._ranges.ranges()

    def number_of_entries_in_backlog(self) -> int:
        """Entries after mark-delete, up to the last confirmed one, that are not individually deleted."""
        lac = self._ledger.last_confirmed_position
        if lac <= self._md:
            return 0
        return max(0, self._map.count_entries_between(self._md, lac) - self._ranges.entry_count)

    def reset_cursor(self, position: Position) -> None:
        """Mark-delete = the entry before ``position``; ranges cleared; read position = ``position``.

        A position before the first retained entry (``EARLIEST``, any negative ledger id) means the
        first entry; one past the end means the next entry to be written."""
        self._check_open()
        ledger_map = self._map
        end = ledger_map.next_valid_position(self._ledger.last_confirmed_position)
        first = ledger_map.first_position or end
        if position == EARLIEST or position.ledger_id < 0 or position < first:
            position = first
        elif position > end:
            position = end
        self._ranges.clear()
        self._md = ledger_map.previous_position(position)
        self._read = ledger_map.next_valid_position(self._md)
        self._schedule_persist()

    def skip_entries(self, n: int) -> None:
        """Acknowledge the next ``n`` not-yet-deleted entries after mark-delete (cumulatively)."""
        self._check_open()
        ledger_map = self._map
        lac = self._ledger.last_confirmed_position
        pos, remaining = self._md, n
        while remaining > 0 and pos < lac:
            rng = self._ranges.first_range_above(pos)
            gap_end = rng[0] if rng else lac
            gap = ledger_map.count_entries_between(pos, gap_end)
            if gap >= remaining:
                pos = ledger_map.advance(pos, remaining)
                remaining = 0
            else:
                remaining -= gap
                pos = rng[1] if rng else lac
        if pos > self._md:
            self._set_mark_delete(pos)
            self._schedule_persist()

    def skip_trimmed(self, first: Position) -> None:
        """Move the mark-delete position up to ``first`` (the first retained ledger's ``(L, -1)``)
        when it lies below: the entries in between were trimmed. Called by the ledger after a trim."""
        if self._closed or self._md >= first:
            return
        self._set_mark_delete(first)
        self._schedule_persist()

    def clear_backlog(self) -> None:
        """Acknowledge everything: mark-delete = last confirmed position."""
        self.mark_delete(self._ledger.last_confirmed_position)

    # -- properties ----------------------------------------------------------
    @property
    def properties(self) -> dict[str, int]:
        """Long properties attached to the mark-delete (Pulsar ``LongProperty``)."""
        return dict(self._properties)

    @property
    def cursor_properties(self) -> dict[str, str]:
        """String cursor properties (Pulsar ``StringProperty``, subscription properties)."""
        return dict(self._cursor_properties)

    def set_cursor_property(self, key: str, value: str) -> None:
        """Set one string property; schedules a persist."""
        self._cursor_properties[str(key)] = str(value)
        self._schedule_persist()

    # -- persistence -----------------------------------------------------------
    @property
    def last_persisted_ranges_count(self) -> int:
        """How many ranges the last persist wrote."""
        return self._last_persisted_ranges

    @property
    def last_persist_dropped_ranges(self) -> bool:
        """Whether the last persist had more ranges than ``max_unacked_ranges_to_persist``."""
        return self._last_dropped

    def is_cursor_data_fully_persistable(self) -> bool:
        """PIP-299 check: ranges in memory <= managedLedgerMaxUnackedRangesToPersist."""
        return len(self._ranges) <= self._ledger.config.max_unacked_ranges_to_persist

    def add_persist_listener(self, cb: Callable[[], None]) -> None:
        """``cb()`` runs on the loop after each completed persist."""
        self._listeners.append(cb)

    def remove_persist_listener(self, cb: Callable[[], None]) -> None:
        if cb in self._listeners:
            self._listeners.remove(cb)

    def snapshot(self) -> CursorState:
        """The state a persist would write now (ranges capped, lowest first)."""
        cap = max(0, self._ledger.config.max_unacked_ranges_to_persist)
        return CursorState(self.name, self._md, self._ranges.ranges(limit=cap), dict(self._properties),
                           dict(self._cursor_properties), self._seq + 1)

    def _schedule_persist(self) -> None:
        if not self.durable or self._closed:
            return
        self._dirty = True
        if self._timer is not None or (self._persist_task and not self._persist_task.done()):
            return  # the running persist re-schedules when it ends
        rate = self._ledger.config.mark_delete_rate_limit
        delay = 0.0 if rate <= 0 else max(0.0, self._last_persist_at + 1.0 / rate - time.monotonic())
        self._timer = asyncio.get_running_loop().call_later(delay, self._start_persist)

    def _start_persist(self) -> None:
        self._timer = None
        if self._persist_task is None or self._persist_task.done():
            self._persist_task = asyncio.get_running_loop().create_task(self._persist_once())

    async def _persist_once(self) -> None:
        try:
            await self._write_state()
        except PersistenceError:
            pass  # logged; stays dirty and is retried at the next scheduled persist
        if self._dirty and not self._closed:
            self._schedule_persist()

    async def _write_state(self) -> None:
        """Write the current state to the next slot; raises PersistenceError on I/O failure."""
        state = self.snapshot()
        dropped = len(self._ranges) > len(state.ranges)
        slot = 1 - self._slot if self._slot >= 0 else 0
        self._dirty = False
        loop = asyncio.get_running_loop()
        self._last_persist_at = time.monotonic()
        try:
            await loop.run_in_executor(self._ledger.executor, cursor_store.store, self._base, state, slot,
                                       self._ledger.config.sync_data)
        except OSError as exc:
            self._dirty = True
            log.error("cursor %s/%s: persisting state failed: %s", self._ledger.name, self.name, exc)
            raise PersistenceError(f"cursor {self.name}: persist failed: {exc}") from exc
        self._slot, self._seq = slot, state.seq
        self._persisted_md = state.mark_delete
        self._last_persisted_ranges = len(state.ranges)
        self._last_dropped = dropped
        if dropped:
            log.info("cursor %s/%s: persisted %d of %d ranges (cap)", self._ledger.name, self.name,
                     len(state.ranges), len(self._ranges))
        for cb in list(self._listeners):
            try:
                cb()
            except Exception:  # a listener must not break persistence
                log.exception("cursor %s: persist listener failed", self.name)

    async def flush(self) -> None:
        """Persist now if durable and dirty (waits for a persist already running)."""
        if not self.durable:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._persist_task is not None and not self._persist_task.done():
            await asyncio.shield(self._persist_task)
        if self._dirty:
            await self._write_state()

    async def initialize(self) -> None:
        """Write a new durable cursor's state at once (it must survive a crash right after
        creation); raises PersistenceError. Called by ``ManagedLedger.open_cursor``."""
        self._dirty = True
        await self._write_state()

    async def remove_state(self) -> None:
        """Stop persisting, wait for a persist already running, and remove the state files.
        Called by ``ManagedLedger.delete_cursor``; later ack calls raise CursorError."""
        self.durable = False  # no persist is scheduled from here on
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._persist_task is not None and not self._persist_task.done():
            await asyncio.shield(self._persist_task)
        self._closed = True
        if self._base is not None:
            await asyncio.get_running_loop().run_in_executor(self._ledger.executor, cursor_store.remove, self._base)

    async def close(self) -> None:
        """Persist pending state (durable) and stop; later ack calls raise CursorError."""
        if self._closed:
            return
        await self.flush()
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise CursorError(f"cursor {self.name} is closed")

    def __repr__(self) -> str:
        return (f"ManagedCursor({self.name!r}, durable={self.durable}, md={self._md}, read={self._read}, "
                f"ranges={len(self._ranges)})")
