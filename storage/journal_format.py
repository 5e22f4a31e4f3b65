"""The journal's on-disk format: journal files of records, and the checkpoint file.

Journal file ``<journal dir>/<seq>.jnl`` (seq: 12 decimal digits, growing by one per file)::

    header : b"MPJNL001" + seq (int64 LE)                                  16 bytes
    record*: magic (uint16 0x4a52) + kind (uint8) + pad (uint8) + topic (uint32)
             + ledger_id (int64) + entry_id (int64) + length (uint32) + crc (uint32)   32 bytes
             + payload (length bytes)

Kinds (every integer little-endian):

* ENTRY: one entry of ledger ``ledger_id``; the payload is the entry's segment record
  (``[length][crc][data]``, storage.segment), so the storage thread writes it to the segment
  as it is. ``crc`` covers the header's first 28 bytes and the record's 8-byte header, whose
  own CRC covers the data, so the data is checksummed once.
* NAME: ``topic`` is the id the file's later records use for the managed ledger whose folder
  name (utf-8, in the ledgers directory) is the payload; every file declares the names it
  uses, so each file reads alone.
* SEAL: ledger ``ledger_id`` keeps exactly ``entry_id`` entries: a roll-over past a failed
  write fences the entries the journal may hold beyond it (Pulsar fences a BookKeeper ledger
  after a write error and continues on a new one).
* TRIM: ledger ``ledger_id`` was trimmed; its entries are not wanted any more.
* DELETE: the managed ledger was deleted; its earlier records are not wanted any more.

For NAME, SEAL, TRIM and DELETE, ``crc`` covers the header's first 28 bytes and the payload.
A record that does not check ends the file (a torn tail).

Checkpoint file ``<journal dir>/CHECKPOINT``: b"MPCKP001" + seq + offset (int64 LE each) +
crc32c (uint32 LE) of the 24 bytes before it. Every record before (seq, offset) is in the
segments and synced there; recovery replays the journal from that point. Written atomically
(temporary file, fsync, rename, fsync of the directory). Source: BookKeeper's journal
(Journal, JournalChannel) and its lastMark / checkpoint.
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from typing import Iterator

import crc32c

from . import segment
from .segment import fsync_dir

FILE_MAGIC = b"MPJNL001"
FILE_HEADER = struct.Struct("<8sq")
RECORD = struct.Struct("<HBBIqqII")
RECORD_MAGIC = 0x4A52
CHECKPOINT_MAGIC = b"MPCKP001"
CHECKPOINT = struct.Struct("<8sqq")
CRC = struct.Struct("<I")
CHECKPOINT_FILE = "CHECKPOINT"
_FILE_NAME = re.compile(r"^(\d{12})\.jnl$")

ENTRY, NAME, SEAL, TRIM, DELETE = 1, 2, 3, 4, 5
KINDS = frozenset((ENTRY, NAME, SEAL, TRIM, DELETE))
_HEAD_CRC_BYTES = RECORD.size - CRC.size  # the header bytes a record's crc starts with

_crc = crc32c.crc32c


def file_path(folder: str, seq: int) -> str:
    """Path of journal file ``seq``."""
    return os.path.join(folder, f"{seq:012d}.jnl")


def list_files(folder: str) -> list[int]:
    """The journal files' sequence numbers, ascending."""
    return sorted(int(m.group(1)) for name in os.listdir(folder) if (m := _FILE_NAME.match(name)))


def entry_record(topic: int, ledger_id: int, entry_id: int, seg_header: bytes) -> bytes:
    """The 32-byte header of an ENTRY record whose payload is seg_header + data (len(data) is
    in seg_header; its CRC covers the data)."""
    length = len(seg_header) + segment.RECORD_HEADER.unpack(seg_header)[0]
    head = RECORD.pack(RECORD_MAGIC, ENTRY, 0, topic, ledger_id, entry_id, length, 0)[:_HEAD_CRC_BYTES]
    return head + CRC.pack(_crc(seg_header, _crc(head)))


def control_record(kind: int, topic: int, ledger_id: int = -1, entry_id: int = -1, payload: bytes = b"") -> bytes:
    """A NAME, SEAL, TRIM or DELETE record, payload included."""
    head = RECORD.pack(RECORD_MAGIC, kind, 0, topic, ledger_id, entry_id, len(payload), 0)[:_HEAD_CRC_BYTES]
    return head + CRC.pack(_crc(payload, _crc(head))) + payload


@dataclass(frozen=True, slots=True)
class Record:
    """A record read back: kind, topic id, ledger and entry ids, and its payload (for ENTRY the
    segment record, header included); end: the file offset right after it."""

    kind: int
    topic: int
    ledger_id: int
    entry_id: int
    payload: bytes
    end: int


def read_records(path: str) -> Iterator[Record]:
    """The records of a journal file, in order, stopping at the first one that is torn or fails
    its CRC. Raises OSError."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < FILE_HEADER.size or data[:8] != FILE_MAGIC:
        return
    pos = FILE_HEADER.size
    view = memoryview(data)
    while pos + RECORD.size <= len(data):
        magic, kind, _, topic, ledger_id, entry_id, length, crc = RECORD.unpack_from(data, pos)
        end = pos + RECORD.size + length
        if magic != RECORD_MAGIC or kind not in KINDS or end > len(data):
            return
        head = view[pos:pos + _HEAD_CRC_BYTES]
        payload = view[pos + RECORD.size:end]
        if not _record_checks(kind, head, payload, crc):
            return
        yield Record(kind, topic, ledger_id, entry_id, bytes(payload), end)
        pos = end


def _record_checks(kind: int, head, payload, crc: int) -> bool:
    if kind != ENTRY:
        return _crc(payload, _crc(head)) == crc
    if len(payload) < segment.RECORD_OVERHEAD:
        return False
    seg_head = payload[:segment.RECORD_OVERHEAD]
    if _crc(seg_head, _crc(head)) != crc:
        return False
    length, data_crc = segment.RECORD_HEADER.unpack(seg_head)
    return length == len(payload) - segment.RECORD_OVERHEAD and \
        segment.record_crc(payload[segment.RECORD_OVERHEAD:]) == data_crc


@dataclass(frozen=True, slots=True, order=True)
class Mark:
    """A place in the journal: file seq and byte offset in it (BookKeeper's LogMark)."""

    seq: int
    offset: int


def read_checkpoint(folder: str) -> Mark | None:
    """The last checkpoint, None when there is none (or it does not check)."""
    try:
        with open(os.path.join(folder, CHECKPOINT_FILE), "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    if len(raw) != CHECKPOINT.size + CRC.size or CRC.unpack_from(raw, CHECKPOINT.size)[0] != _crc(raw[:CHECKPOINT.size]):
        return None
    magic, seq, offset = CHECKPOINT.unpack_from(raw)
    return Mark(seq, offset) if magic == CHECKPOINT_MAGIC else None


def write_checkpoint(folder: str, mark: Mark) -> None:
    """Persist mark as the checkpoint, atomically and durably. Raises OSError."""
    body = CHECKPOINT.pack(CHECKPOINT_MAGIC, mark.seq, mark.offset)
    path = os.path.join(folder, CHECKPOINT_FILE)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        segment.write_all(fd, body + CRC.pack(_crc(body)))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(folder)


_ZEROS = memoryview(bytes(1 << 20))


def write_zeros(fd: int, offset: int, length: int, sync: bool) -> None:
    """Write length zero bytes at offset (segment.pwritev_all: a short write raises ENOSPC), then
    fdatasync when sync: space the records overwrite later. Zeros read as the end of the records
    (no record magic). Raises OSError."""
    whole, rest = divmod(length, len(_ZEROS))
    segment.pwritev_all(fd, [_ZEROS] * whole + ([_ZEROS[:rest]] if rest else []), offset)
    if sync:
        os.fdatasync(fd)


def create_file(folder: str, seq: int) -> int:
    """Create journal file seq with its header, durably (the file and its directory entry);
    returns a write fd. Raises OSError."""
    fd = os.open(file_path(folder, seq), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        segment.write_all(fd, FILE_HEADER.pack(FILE_MAGIC, seq))
        os.fdatasync(fd)
        fsync_dir(folder)
    except OSError:
        os.close(fd)
        raise
    return fd
