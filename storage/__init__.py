"""minipulsar storage: managed ledgers (segment files, positions, reads, trimming) and
managed cursors (mark-delete position, individually deleted ranges, durable state).

Entries are opaque bytes here; this package imports nothing else of minipulsar.
See docs/storage.md for the formats and guarantees.
"""
from .compacted_ledger import CompactedLedger, CompactedLedgerWriter, delete_compacted_ledgers
from .config import ManagedLedgerConfig
from .cursor import ManagedCursor
from .durability import Durability
from .errors import (CursorError, DataDirLockedError, LedgerClosedError, LedgerCorruptionError,
                     PersistenceError, StorageError)
from .factory import ManagedLedgerFactory, make_dirs_durably
from .entry import Entry
from .ledger import ManagedLedger
from .ledger_map import LedgerInfo
from .position import EARLIEST, Position
from .range_set import PositionRangeSet

__all__ = [
    "CompactedLedger", "CompactedLedgerWriter", "delete_compacted_ledgers",
    "CursorError", "DataDirLockedError", "Durability", "EARLIEST", "Entry", "LedgerClosedError", "LedgerInfo",
    "LedgerCorruptionError",
    "ManagedCursor", "ManagedLedger", "ManagedLedgerConfig", "ManagedLedgerFactory", "PersistenceError", "make_dirs_durably",
    "Position", "PositionRangeSet", "StorageError",
]
