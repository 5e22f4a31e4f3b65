"""The cursors of one managed ledger: the durable ones by name, and the making of new ones.

Durable cursors are loaded from their slot files when the ledger opens, created (and
persisted at once) by ``open_cursor``, and removed with their files by ``delete_cursor``;
each completed persist of one may free consumed ledgers, so the container calls the
ledger's trim back. Their lowest *persisted* mark-delete position is what trimming waits
for. Non-durable cursors (readers) are made here too but not kept: they never hold back
trimming. Pulsar: ``ManagedCursorContainer`` (the ledger's ``cursors``) together with
``ManagedLedgerImpl.initializeCursors`` / ``asyncOpenCursor`` / ``newNonDurableCursor``.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Callable

from . import cursor_store
from .cursor import ManagedCursor
from .position import Position

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from .cursor_ledger import CursorLedger
    from .ledger_map import LedgerMap

log = logging.getLogger(__name__)


class CursorContainer:
    """The durable cursors of ``ledger`` (whose ledger map is ``ledger_map``), their state under
    ``folder`` (the ledger's ``cursors/``); ``on_persisted()`` runs on the loop after each
    persist of a durable cursor."""

    def __init__(self, ledger: "CursorLedger", ledger_map: "LedgerMap", folder: str,
                 on_persisted: Callable[[], None]) -> None:
        self._ledger = ledger
        self._map = ledger_map
        self.folder = folder
        self._on_persisted = on_persisted
        self._durable: dict[str, ManagedCursor] = {}

    def durable(self) -> dict[str, ManagedCursor]:
        """Durable cursors by name (a copy)."""
        return dict(self._durable)

    def get(self, name: str) -> ManagedCursor | None:
        return self._durable.get(name)

    async def load(self, loop: asyncio.AbstractEventLoop, executor: "Executor") -> None:
        """Track every durable cursor stored under ``folder`` (at open); a cursor none of whose
        slots is readable is logged and dropped."""
        def load_all():
            return [(base, *cursor_store.load(base)) for base in cursor_store.list_cursors(self.folder)]
        for base, state, slot in await loop.run_in_executor(executor, load_all):
            if state is None:
                log.error("ledger %s: cursor file %s has no readable state; cursor dropped", self._ledger.name, base)
                continue
            cursor = ManagedCursor(self._ledger, self._map, state.name, True, state.mark_delete, state, base, slot)
            self._track(cursor)

    async def create(self, name: str, mark_delete: Position) -> ManagedCursor:
        """A new durable cursor at ``mark_delete``, persisted before it is returned (it must
        survive a crash right after creation); raises PersistenceError."""
        base = cursor_store.cursor_file_base(self.folder, name)
        cursor = self._track(ManagedCursor(self._ledger, self._map, name, True, mark_delete, store_base=base))
        await cursor.initialize()
        return cursor

    def new_non_durable(self, mark_delete: Position) -> ManagedCursor:
        """A reader's cursor at ``mark_delete``: never persisted, never tracked."""
        name = f"reader-{id(self._ledger):x}-{time.monotonic_ns()}"
        return ManagedCursor(self._ledger, self._map, name, False, mark_delete)

    def _track(self, cursor: ManagedCursor) -> ManagedCursor:
        self._durable[cursor.name] = cursor
        cursor.add_persist_listener(functools.partial(self._persisted, cursor))
        return cursor

    def _persisted(self, cursor: ManagedCursor) -> None:
        if cursor.durable:  # a cursor being deleted stops counting at once
            self._on_persisted()

    async def delete(self, name: str) -> bool:
        """Stop tracking durable cursor ``name`` and remove its files; False when there is none."""
        cursor = self._durable.pop(name, None)
        if cursor is None:
            return False
        await cursor.remove_state()
        return True

    def slowest_persisted(self, default: Position) -> Position:
        """The lowest persisted mark-delete position of the durable cursors (``default`` with none):
        everything at or below it may be trimmed."""
        return min(c.persisted_mark_delete_position for c in self._durable.values()) if self._durable else default

    def skip_trimmed(self, first: Position) -> None:
        """Move every durable cursor below ``first`` (the first retained ledger's ``(L, -1)``) up
        to it (Pulsar ManagedLedgerImpl.advanceCursorsIfNecessary)."""
        for cursor in list(self._durable.values()):
            cursor.skip_trimmed(first)

    async def close_all(self) -> None:
        """Persist and close every durable cursor; a failure is logged and the others still close
        (the older persisted state of the failed one stays valid)."""
        for cursor in list(self._durable.values()):
            try:
                await cursor.close()
            except Exception as exc:
                log.error("ledger %s: closing cursor %s failed: %s", self._ledger.name, cursor.name, exc)
