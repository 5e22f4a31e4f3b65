"""Settings of the managed ledger; field comments give the Pulsar ``broker.conf`` key."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ManagedLedgerConfig:
    """Managed-ledger settings; units are in the names (mb = MiB, minutes, per second).

    Retention follows Pulsar: 0 = no retention, -1 = unlimited. A consumed ledger is
    deleted when its retention time expired OR the retained size stays over the quota
    without it (ManagedLedgerImpl.internalTrimLedgers), so both must be non-zero to keep data.
    """

    max_entries_per_ledger: int = 50000          # managedLedgerMaxEntriesPerLedger
    max_size_per_ledger_mb: int = 2048           # managedLedgerMaxSizePerLedgerMbytes
    sync_data: bool = True                       # journalSyncData
    retention_time_minutes: int = 0              # defaultRetentionTimeInMinutes
    retention_size_mb: int = 0                   # defaultRetentionSizeInMB
    max_unacked_ranges_to_persist: int = 10000   # managedLedgerMaxUnackedRangesToPersist
    mark_delete_rate_limit: float = 1.0          # managedLedgerDefaultMarkDeleteRateLimit (persists/s per cursor)
    entry_cache_size_mb: int = 64                # managedLedgerCacheSizeMB (all ledgers of a factory together)
    journal_max_size_mb: int = 2048              # journalMaxSizeMB (BookKeeper): a new journal file past it
    journal_pre_alloc_size_mb: int = 16          # journalPreAllocSizeMB (BookKeeper): zeros ahead, a run
    open_file_limit: int = 1000                  # openFileLimit (BookKeeper): segment write descriptors kept open
    flush_interval_ms: int = 10000               # flushInterval (BookKeeper): ms between checkpoints

    @property
    def max_size_per_ledger_bytes(self) -> int:
        """Roll-over threshold in bytes of record data."""
        return self.max_size_per_ledger_mb * 1024 * 1024

    @property
    def entry_cache_size_bytes(self) -> int:
        """Budget of the per-ledger tail cache in bytes."""
        return self.entry_cache_size_mb * 1024 * 1024
