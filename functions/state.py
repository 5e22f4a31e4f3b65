"""Function state: the key/value table behind Context.incr_counter / get_counter / del_counter /
put_state / get_state and GET/POST /admin/v3/functions/{t}/{ns}/{name}/state/{key}.

Pulsar keeps it in BookKeeper's table service, one table per function; here each function has one
SQLite file, <functions>/state/<tenant>/<namespace>/<name>.db, in WAL mode with synchronous=FULL
(every change is fsynced before it returns, as a table-service put is acknowledged when durable).
The function's instances (separate processes) and the worker open the same file; SQLite's locks
serialize their writes, and a counter increment is one atomic UPSERT, so parallel instances may
increment the same key. A value is bytes; a counter is a number, read through get_state as
Pulsar's 8-byte big-endian encoding. Each key has a version: 0 when first written, +1 per change
(BookKeeper's kv version). The table is deleted with its function.

This module blocks (file I/O); the worker calls it from a thread, instances from their own.
"""
from __future__ import annotations

import base64
import binascii
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from minipulsar.functions.durable_folders import make_folders_durably, sync_folder
from minipulsar.functions.errors import InvalidFunctionError

BUSY_TIMEOUT_MS = 30_000  # how long a write waits for another process's write to finish
WAL_RETRY_SECONDS = 0.01  # between tries to switch a new table to WAL while another connection does


@dataclass(frozen=True)
class StateValue:
    """One key's value. number: the counter's value, None for a plain value."""

    value: bytes
    number: int | None
    version: int


def state_path(state_dir: Path, fqfn: str) -> Path:
    """<state_dir>/<tenant>/<namespace>/<name>.db of the function tenant/namespace/name."""
    tenant, namespace, name = fqfn.split("/")
    return state_dir / tenant / namespace / f"{name}.db"


class StateTable:
    """One function's table at `path` (created with its folders when missing). Thread-safe."""

    def __init__(self, path: Path):
        make_folders_durably(path.parent)
        created = not path.exists()
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
        self._lock = threading.Lock()
        _use_wal(self._db)
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB, number INTEGER, "
                         "version INTEGER NOT NULL)")
        if created:  # SQLite syncs the directory for its journal files, not for a new database
            sync_folder(path.parent)

    def get(self, key: str) -> StateValue | None:
        with self._lock:
            row = self._db.execute("SELECT value, number, version FROM kv WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        value, number, version = row
        return StateValue(number.to_bytes(8, "big", signed=True) if number is not None else bytes(value),
                          number, version)

    def put(self, key: str, value: bytes) -> None:
        """Set key to value (a counter key becomes a plain value, as a table-service put)."""
        with self._lock:
            self._db.execute("INSERT INTO kv (key, value, number, version) VALUES (?, ?, NULL, 0) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value, number = NULL, "
                             "version = version + 1", (key, bytes(value)))

    def incr(self, key: str, amount: int) -> int:
        """Add amount to the counter key (created at 0); returns the new value. ValueError when the
        key holds a plain value (the table service refuses to increment it too)."""
        with self._lock:
            # fetchall: the statement runs to its end, so the implicit transaction commits here
            rows = self._db.execute("INSERT INTO kv (key, value, number, version) VALUES (?, NULL, ?, 0) "
                                    "ON CONFLICT(key) DO UPDATE SET number = number + excluded.number, "
                                    "version = version + 1 WHERE number IS NOT NULL RETURNING number",
                                    (key, int(amount))).fetchall()
        if not rows:
            raise ValueError(f"state key {key!r} holds a value, not a counter")
        return rows[0][0]

    def delete(self, key: str) -> bool:
        """Remove key; False when it did not exist."""
        with self._lock:
            return self._db.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _use_wal(db: sqlite3.Connection) -> None:
    """PRAGMA journal_mode=WAL, tried again for up to BUSY_TIMEOUT_MS while it answers "database is
    locked": when two connections (an instance and the worker) switch a new file at once, SQLite
    refuses one at once instead of waiting its busy timeout. Raises sqlite3.OperationalError."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_SECONDS)


def remove_table(path: Path) -> None:
    """Delete a table's files (the database, its WAL and shared-memory files)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


# ---- Pulsar's FunctionState JSON -------------------------------------------------------------
def function_state(key: str, entry: StateValue) -> dict:
    """{"key", "stringValue", "byteValue", "numberValue", "version"}: a counter as numberValue, a
    value as stringValue when it is UTF-8, else as byteValue (base64, as Jackson writes byte[])."""
    state = {"key": key, "stringValue": None, "byteValue": None, "numberValue": None, "version": entry.version}
    if entry.number is not None:
        state["numberValue"] = entry.number
        return state
    try:
        state["stringValue"] = entry.value.decode("utf-8")
    except UnicodeDecodeError:
        state["byteValue"] = base64.b64encode(entry.value).decode("ascii")
    return state


def value_of(key: str, state: object) -> bytes:
    """The bytes a POSTed FunctionState puts under key: its stringValue, else its byteValue (base64),
    as Pulsar's putFunctionState; InvalidFunctionError for anything else."""
    if not isinstance(state, dict):
        raise InvalidFunctionError("state must be a FunctionState JSON object")
    if state.get("key") not in (None, key):
        raise InvalidFunctionError(f"state key {state.get('key')!r} does not match the path's key {key!r}")
    text, raw = state.get("stringValue"), state.get("byteValue")
    if isinstance(text, str) and text:
        return text.encode("utf-8")
    if isinstance(raw, str):
        try:
            return base64.b64decode(raw, validate=True)
        except binascii.Error:
            raise InvalidFunctionError("byteValue must be base64") from None
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return bytes(raw)
    raise InvalidFunctionError("FunctionState carries no stringValue or byteValue to put")
