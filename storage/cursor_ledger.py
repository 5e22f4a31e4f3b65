"""What a managed cursor uses of its managed ledger: a narrow, structural interface.

:class:`storage.cursor.ManagedCursor` and :class:`storage.cursor_container.CursorContainer`
are typed against this Protocol, not against ``ManagedLedger``, so neither imports the ledger
module (which creates cursors and so imports them). ``ManagedLedger`` satisfies it; a test
may hand a cursor any object that does. Position arithmetic is not part of it: a cursor gets
the ledger's :class:`storage.ledger_map.LedgerMap` and computes on it directly. In Pulsar,
``ManagedCursorImpl`` holds its ``ManagedLedgerImpl`` and calls the same methods on it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from .config import ManagedLedgerConfig
    from .cursor import ManagedCursor
    from .entry import Entry
    from .position import Position


class CursorLedger(Protocol):
    """The ledger as its cursors see it: the last confirmed entry, reads, settings, the I/O executor."""

    name: str
    config: "ManagedLedgerConfig"
    executor: "Executor"

    @property
    def last_confirmed_position(self) -> "Position":
        """Last durable entry, or ``(current ledger, -1)``."""

    async def read_entries(self, start: "Position", max_entries: int, max_bytes: int = ...) -> "list[Entry]":
        """Durable entries at positions ``>= start``, within both limits (at least one if any)."""

    async def read_positions(self, positions: "list[Position]") -> "list[Entry]":
        """The entries at ``positions`` (ascending) that exist, in order."""

    async def find_newest_matching(self, predicate: Callable[[bytes], bool]) -> "Position | None":
        """The last retained position whose data satisfies the monotone ``predicate``."""

    def activate_cursor(self, cursor: "ManagedCursor") -> None:
        """cursor is read at the tail: appends are cached from now on."""

    def deactivate_cursor(self, cursor: "ManagedCursor") -> None:
        """cursor is not read any more (the cache lets go once no cursor is active)."""

    def is_cursor_active(self, cursor: "ManagedCursor") -> bool:
        """Whether cursor is active."""
