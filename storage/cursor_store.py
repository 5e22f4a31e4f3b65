"""Durable cursor state on disk: two alternating, CRC-checked slot files per cursor.

Each persist overwrites the slot that does NOT hold the newest good state, then
fdatasyncs it; so a torn write can only damage the slot being written, and loading
picks the good slot with the highest sequence number (logging when it had to fall back).
This plays the role of Pulsar's cursor ledger of ``PositionInfo`` records.

Slot file ``<cursor>.0`` / ``<cursor>.1``::

    b"MPCUR001" + crc32c(body) (uint32) + len(body) (uint32) + body
    body = seq, md_ledger, md_entry, n_ranges (int64 LE each)
           + n_ranges x (lower ledger, lower entry, upper ledger, upper entry) int64 LE
           + JSON {"name", "properties": {str: int}, "cursor_properties": {str: str}}

All functions are blocking; callers run them in an executor.
"""
from __future__ import annotations

import json
import logging
import os
import struct
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

import crc32c

from .position import Position
from .segment import fsync_dir

log = logging.getLogger(__name__)

MAGIC = b"MPCUR001"
FRAME = struct.Struct("<8sII")
BODY_HEAD = struct.Struct("<qqqq")
RANGE = struct.Struct("<qqqq")


@dataclass
class CursorState:
    """What a durable cursor persists (Pulsar ``PositionInfo`` + ``ManagedCursorInfo``)."""

    name: str
    mark_delete: Position
    ranges: list[tuple[Position, Position]] = field(default_factory=list)  # (lower, upper]
    properties: dict[str, int] = field(default_factory=dict)
    cursor_properties: dict[str, str] = field(default_factory=dict)
    seq: int = 0


def cursor_file_base(folder: str, name: str) -> str:
    """Slot path prefix for cursor ``name`` (percent-encoded so any name is one file name)."""
    return os.path.join(folder, quote(name, safe="").replace(".", "%2E") + ".cur")


def encode(state: CursorState) -> bytes:
    """Serialize ``state`` into one framed, CRC-checked slot image."""
    md = state.mark_delete
    parts = [BODY_HEAD.pack(state.seq, md.ledger_id, md.entry_id, len(state.ranges))]
    pack = RANGE.pack
    parts.extend(pack(lo.ledger_id, lo.entry_id, up.ledger_id, up.entry_id) for lo, up in state.ranges)
    meta = {"name": state.name, "properties": state.properties, "cursor_properties": state.cursor_properties}
    parts.append(json.dumps(meta, sort_keys=True).encode())
    body = b"".join(parts)
    return FRAME.pack(MAGIC, crc32c.crc32c(body), len(body)) + body


def decode(raw: bytes) -> CursorState:
    """Parse a slot image; ValueError if torn, mis-framed, failing its CRC32C, or malformed inside
    (a body whose CRC matches but whose range count, JSON or field types are wrong)."""
    if len(raw) < FRAME.size:
        raise ValueError("slot is shorter than its frame header")
    magic, crc, length = FRAME.unpack_from(raw)
    body = memoryview(raw)[FRAME.size:]
    if magic != MAGIC or len(body) != length or crc32c.crc32c(body) != crc:
        raise ValueError("slot is torn or fails its CRC32C")
    if len(body) < BODY_HEAD.size:
        raise ValueError("slot body is shorter than its head")
    seq, md_l, md_e, n = BODY_HEAD.unpack_from(body)
    off = BODY_HEAD.size
    end = off + n * RANGE.size
    if n < 0 or end > len(body):
        raise ValueError(f"slot claims {n} ranges, more than its body holds")
    ranges = [(Position(ll, le), Position(ul, ue)) for ll, le, ul, ue in RANGE.iter_unpack(body[off:end])]
    name, properties, cursor_properties = _decode_meta(body[end:])
    return CursorState(name, Position(md_l, md_e), ranges, properties, cursor_properties, seq)


def _decode_meta(raw: memoryview) -> tuple[str, dict[str, int], dict[str, str]]:
    """(name, properties, cursor_properties) from the slot's JSON tail; ValueError when malformed."""
    try:
        meta = json.loads(bytes(raw))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"slot metadata is not JSON: {exc}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ValueError("slot metadata has no cursor name")
    properties, cursor_properties = meta.get("properties"), meta.get("cursor_properties")
    if not isinstance(properties, dict) or not isinstance(cursor_properties, dict):
        raise ValueError("slot metadata lacks its property maps")
    try:
        properties = {k: int(v) for k, v in properties.items()}
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"slot has a non-integer cursor property: {exc}") from None
    return meta["name"], properties, dict(cursor_properties)


def _read_slot(path: str) -> CursorState | None:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        return decode(raw)
    except (ValueError, KeyError, json.JSONDecodeError, struct.error) as exc:
        log.warning("cursor slot %s is corrupt (%s); ignoring it", path, exc)
        return None


def load(base: str) -> tuple[CursorState | None, int]:
    """Newest good state of a cursor and the slot index that holds it (-1 when none)."""
    states = [_read_slot(f"{base}.{i}") for i in (0, 1)]
    best, best_slot = None, -1
    for slot, st in enumerate(states):
        if st is not None and (best is None or st.seq > best.seq):
            best, best_slot = st, slot
    other_exists = os.path.exists(f"{base}.{1 - best_slot}") if best_slot >= 0 else False
    if best is not None and other_exists and states[1 - best_slot] is None:
        log.warning("cursor %s: newest slot was corrupt, fell back to the previous state (seq %d)",
                    os.path.basename(base), best.seq)
    return best, best_slot


def store(base: str, state: CursorState, slot: int, sync: bool) -> None:
    """Overwrite slot ``slot`` with ``state`` and fdatasync it (fsync the dir on first create)."""
    path = f"{base}.{slot}"
    created = not os.path.exists(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = encode(state)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fdatasync(fd)
    finally:
        os.close(fd)
    if created and sync:
        fsync_dir(os.path.dirname(path))


def remove(base: str) -> None:
    """Delete both slots of a cursor, durably (the folder is synced: an unsynced unlink may be
    undone by a power loss, and the deleted subscription would come back)."""
    for i in (0, 1):
        try:
            os.unlink(f"{base}.{i}")
        except FileNotFoundError:
            pass
    fsync_dir(os.path.dirname(base))


def list_cursors(folder: str) -> list[str]:
    """Base paths of every cursor stored in ``folder``."""
    if not os.path.isdir(folder):
        return []
    bases = {os.path.join(folder, f[:-2]) for f in os.listdir(folder) if f.endswith((".cur.0", ".cur.1"))}
    return sorted(bases)


def name_from_base(base: str) -> str:
    """Inverse of :func:`cursor_file_base` (used only for logs; the slot stores the name)."""
    return unquote(os.path.basename(base)[:-4])
