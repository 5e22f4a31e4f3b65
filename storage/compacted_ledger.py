"""Compacted ledgers: immutable files of entries, each stored with the position it had in its topic.

File ``compacted-<id>.ledger`` in a managed ledger's folder::

    header  : b"MPCMP001" + compacted ledger id (int64 LE)              16 bytes
    record* : length (uint32 LE) + crc (uint32 LE) + data (length bytes)   as in segment files
    data    : original ledger id, entry id (int64 LE each) + the entry's bytes

A compacted ledger is written to ``<name>.tmp``, fsynced, renamed and the folder fsynced, so
after a crash at any moment it is either complete or absent; which one a topic uses is recorded
elsewhere (the compaction cursor's properties). Entries are in ascending original position.
Source: Pulsar's compacted topic ledger (one BookKeeper ledger per compaction, CompactedTopicImpl).
Functions here are blocking; callers run them in an executor.
"""
from __future__ import annotations

import bisect
import os
import re
import struct
from .errors import LedgerCorruptionError
from .position import Position
from .segment import RECORD_HEADER, RECORD_OVERHEAD, encode_records, fsync_dir, pwritev_all, record_crc

MAGIC = b"MPCMP001"
HEADER = struct.Struct("<8sq")
ORIGINAL_POSITION = struct.Struct("<qq")
_NAME = re.compile(r"^compacted-(\d+)\.ledger(\.tmp)?$")


def compacted_path(folder: str, ledger_id: int) -> str:
    return os.path.join(folder, f"compacted-{ledger_id:012d}.ledger")


class CompactedLedgerWriter:
    """Writes one compacted ledger: append() chunks of (original position, entry bytes) in ascending
    position, then finish() (fsync, rename, folder fsync) or abort() (the tmp file is removed).
    Blocking; raises OSError."""

    def __init__(self, folder: str, ledger_id: int, sync: bool):
        self.folder = folder
        self.ledger_id = ledger_id
        self.sync = sync
        self.count = 0
        self._final = compacted_path(folder, ledger_id)
        self._tmp = self._final + ".tmp"
        self._fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._offset = HEADER.size
        pwritev_all(self._fd, [HEADER.pack(MAGIC, ledger_id)], 0)

    def append(self, entries: list[tuple[Position, bytes]]) -> None:
        datas = [ORIGINAL_POSITION.pack(*position) + data for position, data in entries]
        start = self._offset
        parts, _, self._offset = encode_records(datas, start)
        pwritev_all(self._fd, parts, start)
        self.count += len(datas)

    def finish(self) -> "CompactedLedger":
        """Make the ledger durable under its final name and return it opened."""
        if self.sync:
            os.fdatasync(self._fd)
        os.close(self._fd)
        self._fd = -1
        os.replace(self._tmp, self._final)
        if self.sync:
            fsync_dir(self.folder)
        return CompactedLedger.open(self.folder, self.ledger_id)

    def abort(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if os.path.exists(self._tmp):
            os.unlink(self._tmp)


def delete_compacted_ledgers(folder: str, keep: int | None) -> list[int]:
    """Remove every compacted ledger (and leftover tmp file) but `keep`; returns the ids removed."""
    removed = []
    for name in os.listdir(folder):
        match = _NAME.match(name)
        if match and (match.group(2) or int(match.group(1)) != keep):
            os.unlink(os.path.join(folder, name))
            removed.append(int(match.group(1)))
    if removed:
        fsync_dir(folder)
    return removed


class CompactedLedger:
    """An open compacted ledger. positions: the original positions, ascending; size: bytes of entry
    data. Open with CompactedLedger.open (blocking; raises LedgerCorruptionError)."""

    def __init__(self, folder: str, ledger_id: int, positions: list[Position], offsets: list[int], end: int):
        self.folder = folder
        self.ledger_id = ledger_id
        self.positions = positions
        self._offsets = offsets
        self._end = end

    @classmethod
    def open(cls, folder: str, ledger_id: int) -> "CompactedLedger":
        """Index the file by reading each record's header and original position."""
        path = compacted_path(folder, ledger_id)
        positions, offsets = [], []
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            magic, stored_id = HEADER.unpack(f.read(HEADER.size))
            if magic != MAGIC or stored_id != ledger_id:
                raise LedgerCorruptionError(f"{path}: not compacted ledger {ledger_id}")
            offset = HEADER.size
            while offset < size:
                head = f.read(RECORD_OVERHEAD + ORIGINAL_POSITION.size)
                if len(head) < RECORD_OVERHEAD + ORIGINAL_POSITION.size:
                    raise LedgerCorruptionError(f"{path}: truncated record at offset {offset}")
                length, _ = RECORD_HEADER.unpack_from(head)
                positions.append(Position(*ORIGINAL_POSITION.unpack_from(head, RECORD_OVERHEAD)))
                offsets.append(offset)
                offset += RECORD_OVERHEAD + length
                f.seek(offset)
            if offset != size:
                raise LedgerCorruptionError(f"{path}: last record runs past the end of the file")
        return cls(folder, ledger_id, positions, offsets, size)

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def size(self) -> int:
        return self._end - HEADER.size - len(self.positions) * (RECORD_OVERHEAD + ORIGINAL_POSITION.size)

    @property
    def last_position(self) -> Position | None:
        return self.positions[-1] if self.positions else None

    def index_at_or_after(self, position: Position) -> int:
        """The index of the first entry whose original position is >= position (len when none)."""
        return bisect.bisect_left(self.positions, position)

    def read(self, first: int, max_entries: int, max_bytes: int) -> list[tuple[Position, bytes]]:
        """Entries first.. (at least one when any is left, then within both limits) as
        (original position, entry bytes); raises LedgerCorruptionError on a CRC mismatch."""
        last = min(len(self.positions), first + max_entries)
        if first >= last:
            return []
        with open(compacted_path(self.folder, self.ledger_id), "rb") as f:
            start = self._offsets[first]
            end = self._offsets[last] if last < len(self._offsets) else self._end
            f.seek(start)
            buf = f.read(end - start)
        out, budget = [], max_bytes
        for index in range(first, last):
            rel = self._offsets[index] - start
            length, crc = RECORD_HEADER.unpack_from(buf, rel)
            data = buf[rel + RECORD_OVERHEAD: rel + RECORD_OVERHEAD + length]
            if len(data) != length or record_crc(data) != crc:
                raise LedgerCorruptionError(f"compacted ledger {self.ledger_id} entry {index} fails its CRC32C")
            out.append((self.positions[index], data[ORIGINAL_POSITION.size:]))
            budget -= length
            if budget <= 0:
                break
        return out
