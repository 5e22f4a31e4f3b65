"""Exceptions of the storage room (managed ledger and managed cursor).

All derive from :class:`StorageError` so a caller can catch the room's failures
in one clause; the broker maps them to the protocol's ``ServerError`` values.
"""


class StorageError(Exception):
    """Base class of every storage failure."""


class PersistenceError(StorageError):
    """A write (append or state persist) did not reach the disk: ENOSPC, EIO, EFBIG...

    Appends waiting in the failed batch see this; entries acknowledged before stay durable.
    """


class LedgerCorruptionError(StorageError):
    """A stored record failed its CRC32C or length check (Pulsar: BKDigestMatchException)."""


class LedgerClosedError(StorageError):
    """The managed ledger (or factory) was closed or deleted; no further operations."""


class DataDirLockedError(StorageError):
    """Another running broker holds the flock on the data dir's LOCK file."""


class CursorError(StorageError):
    """A cursor operation was invalid (bad name, deleted cursor, bad position)."""
