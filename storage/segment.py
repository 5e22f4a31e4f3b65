"""The on-disk segment format: one file per ledger, plus its offset index.

Segment file ``<ledger_id>.seg``::

    header  : b"MPSEG001" + ledger_id (int64 LE)                        16 bytes
    record* : length (uint32 LE) + crc (uint32 LE) + data (length bytes)

``crc = crc32c(data, crc32c(length bytes))``: the CRC32C (``crc32c`` package) of the
length field followed by the data, so a zero-filled tail (length 0, crc 0) is rejected too.

Offset index ``<ledger_id>.idx`` (written once, when the ledger is sealed)::

    b"MPIDX001", ledger_id, entry_count, end_offset, sealed_at_ms   (int64 LE each)
    offsets  : entry_count x int64 LE (file offset of each record)
    crc      : uint32 LE crc32c of everything above

Functions here are blocking and run on a storage thread or an executor, never on the loop.
"""
from __future__ import annotations

import errno
import logging
import os
import struct
import sys
import time
from array import array
from dataclasses import dataclass, field

import crc32c

from .errors import LedgerCorruptionError

log = logging.getLogger(__name__)

SEG_MAGIC = b"MPSEG001"
IDX_MAGIC = b"MPIDX001"
SEG_HEADER = struct.Struct("<8sq")
RECORD_HEADER = struct.Struct("<II")
LENGTH = struct.Struct("<I")
IDX_HEADER = struct.Struct("<8sqqqq")
CRC = struct.Struct("<I")
HEADER_SIZE = SEG_HEADER.size
RECORD_OVERHEAD = RECORD_HEADER.size
MAX_RECORD = 0xFFFFFFFF
SCAN_CHUNK = 8 * 1024 * 1024

_crc = crc32c.crc32c


def record_crc(data) -> int:
    """CRC32C of the record's length field then its data."""
    return _crc(data, _crc(LENGTH.pack(len(data))))


def segment_path(folder: str, ledger_id: int) -> str:
    """Path of ledger ``ledger_id``'s segment file."""
    return os.path.join(folder, f"{ledger_id:012d}.seg")


def index_path(folder: str, ledger_id: int) -> str:
    """Path of ledger ``ledger_id``'s sealed offset index."""
    return os.path.join(folder, f"{ledger_id:012d}.idx")


@dataclass(slots=True)
class SegmentIndex:
    """What a reader needs of one ledger: record offsets, data end, seal time (ms, 0 = open)."""

    ledger_id: int
    offsets: array = field(default_factory=lambda: array("q"))
    end_offset: int = HEADER_SIZE
    sealed_at_ms: int = 0
    # Entry ids known bad from a rescan. Shared and empty until one is found: a set of its own per
    # index would be one more object per ledger for the cyclic collector to scan, and corruption is rare.
    corrupt: frozenset[int] = frozenset()

    @property
    def entries(self) -> int:
        return len(self.offsets)

    @property
    def data_bytes(self) -> int:
        """Payload bytes of all records (without headers)."""
        return self.end_offset - HEADER_SIZE - RECORD_OVERHEAD * len(self.offsets)


def fsync_dir(folder: str) -> None:
    """fsync a directory so a create, rename or unlink inside it survives a crash."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def create_segment(folder: str, ledger_id: int, sync: bool) -> int:
    """Create ``<id>.seg`` with its header and return a write fd positioned at the end."""
    fd = os.open(segment_path(folder, ledger_id), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    write_all(fd, SEG_HEADER.pack(SEG_MAGIC, ledger_id))
    if sync:
        os.fdatasync(fd)
        fsync_dir(folder)
    return fd


def write_all(fd: int, buf) -> None:
    """os.write until every byte is written (a short write is followed by the real error)."""
    view = memoryview(buf)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def encode_records(datas: list[bytes], start_offset: int) -> tuple[list, array, int]:
    """Build the iovec parts of ``datas`` as records: (parts, record offsets, end offset)."""
    parts = []
    offsets = array("q")
    pack = RECORD_HEADER.pack
    lpack = LENGTH.pack
    append_part = parts.append
    append_off = offsets.append
    pos = start_offset
    for data in datas:
        n = len(data)
        append_part(pack(n, _crc(data, _crc(lpack(n)))))
        append_part(data)
        append_off(pos)
        pos += RECORD_OVERHEAD + n
    return parts, offsets, pos


IOV_MAX = 1024  # buffers one writev may take (Linux)
# pwritev's RWF_DSYNC (Linux 4.7+): the write is durable when the call returns, as write + fdatasync.
DSYNC_FLAG = getattr(os, "RWF_DSYNC", 0)


def pwritev_all(fd: int, parts: list, offset: int, dsync: bool = False) -> None:
    """Write ``parts`` at ``offset`` with os.pwritev in IOV_MAX slices; with ``dsync`` (one slice
    and RWF_DSYNC available, else the caller must fdatasync) each call also syncs the data.
    A short write (the disk filled) raises OSError(ENOSPC); the caller cuts the partial tail."""
    flags = DSYNC_FLAG if dsync else 0
    for i in range(0, len(parts), IOV_MAX):
        chunk = parts[i:i + IOV_MAX]
        want = sum(map(len, chunk))
        done = os.pwritev(fd, chunk, offset, flags)
        if done != want:
            # What a plain write would raise next; nothing past the last synced record is kept.
            raise OSError(errno.ENOSPC, f"short write: {done} of {want} bytes")
        offset += want


def syncs_inline(parts: list, sync: bool) -> bool:
    """Whether pwritev_all(..., dsync=True) makes ``parts`` durable by itself (one call, flag known)."""
    return sync and DSYNC_FLAG != 0 and len(parts) <= IOV_MAX


def scan_segment(folder: str, ledger_id: int, cut_tail: bool) -> SegmentIndex:
    """Rebuild the index of a segment by reading every record and checking its CRC.

    With ``cut_tail`` (the last, open segment after a crash) the file is truncated at
    the first torn or bad record. Without it (a sealed segment whose index was lost) a
    bad record with a plausible length is kept and marked corrupt; reading it raises.
    """
    path = segment_path(folder, ledger_id)
    idx = SegmentIndex(ledger_id)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(HEADER_SIZE)
        if len(head) < HEADER_SIZE or SEG_HEADER.unpack(head) != (SEG_MAGIC, ledger_id):
            log.warning("segment %s: missing or bad header, treating as empty", path)
            good_end = 0
        else:
            good_end = _scan_records(f, path, size, idx, cut_tail)
    if cut_tail and (good_end < size or good_end == 0):  # a torn tail, or no header at all
        log.warning("segment %s: cutting torn tail at offset %d (file had %d bytes)", path, good_end, size)
        with open(path, "r+b") as f:
            if good_end == 0:
                f.write(SEG_HEADER.pack(SEG_MAGIC, ledger_id))
                good_end = HEADER_SIZE
            f.truncate(good_end)
            os.fdatasync(f.fileno())
    idx.end_offset = max(good_end, HEADER_SIZE)
    return idx


def _scan_records(f, path: str, size: int, idx: SegmentIndex, cut_tail: bool) -> int:
    """Walk the records after the header; returns the offset after the last good record."""
    pos = HEADER_SIZE
    buf = b""
    buf_start = pos
    while pos < size:
        rel = pos - buf_start
        if rel + RECORD_OVERHEAD > len(buf):
            buf = buf[rel:] + f.read(SCAN_CHUNK)
            buf_start, rel = pos, 0
            if len(buf) < RECORD_OVERHEAD:
                break
        length, crc = RECORD_HEADER.unpack_from(buf, rel)
        end = pos + RECORD_OVERHEAD + length
        if end > size:
            if not cut_tail:
                log.error("segment %s: record at offset %d runs past the end of the file", path, pos)
            break
        if rel + RECORD_OVERHEAD + length > len(buf):
            buf = buf[rel:] + f.read(max(SCAN_CHUNK, RECORD_OVERHEAD + length - (len(buf) - rel)))
            buf_start, rel = pos, 0
        data = memoryview(buf)[rel + RECORD_OVERHEAD: rel + RECORD_OVERHEAD + length]
        if _crc(data, _crc(LENGTH.pack(length))) != crc:
            if cut_tail:
                break
            log.error("segment %s: entry %d (offset %d) fails its CRC32C", path, len(idx.offsets), pos)
            idx.corrupt |= {len(idx.offsets)}
        idx.offsets.append(pos)
        pos = end
    return pos


def write_index(folder: str, idx: SegmentIndex, sync: bool) -> None:
    """Persist ``idx`` atomically (temp file, fsync, rename, fsync dir)."""
    if not idx.sealed_at_ms:
        idx.sealed_at_ms = int(time.time() * 1000)
    body = IDX_HEADER.pack(IDX_MAGIC, idx.ledger_id, len(idx.offsets), idx.end_offset, idx.sealed_at_ms)
    body += idx.offsets.tobytes() if sys.byteorder == "little" else _le(idx.offsets)
    path = index_path(folder, idx.ledger_id)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(body)
        f.write(CRC.pack(_crc(body)))
        f.flush()
        if sync:
            os.fdatasync(f.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_dir(folder)


def _le(offsets: array) -> bytes:
    copy = array("q", offsets)
    copy.byteswap()
    return copy.tobytes()


def load_index(folder: str, ledger_id: int) -> SegmentIndex | None:
    """Read ``<id>.idx``; None if missing, torn, failing its CRC or longer than the segment."""
    path = index_path(folder, ledger_id)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    if len(raw) < IDX_HEADER.size + CRC.size or CRC.unpack_from(raw, len(raw) - 4)[0] != _crc(memoryview(raw)[:-4]):
        log.warning("index %s is torn or fails its CRC32C; rescanning the segment", path)
        return None
    magic, lid, count, end_offset, sealed_at = IDX_HEADER.unpack_from(raw)
    if magic != IDX_MAGIC or lid != ledger_id or len(raw) != IDX_HEADER.size + 8 * count + 4:
        log.warning("index %s has a bad header; rescanning the segment", path)
        return None
    offsets = array("q")
    offsets.frombytes(memoryview(raw)[IDX_HEADER.size:-4])
    if sys.byteorder != "little":
        offsets.byteswap()
    try:
        seg_size = os.stat(segment_path(folder, ledger_id)).st_size
    except FileNotFoundError:
        return None
    if seg_size < end_offset:
        log.error("segment of ledger %d is shorter (%d) than its index says (%d); rescanning",
                  ledger_id, seg_size, end_offset)
        return None
    return SegmentIndex(ledger_id, offsets, end_offset, sealed_at)


def read_records(folder: str, idx: SegmentIndex, first: int, last: int) -> list[bytes]:
    """Read entries ``first..last`` (inclusive) of a ledger with one pread; verify each CRC.

    Raises LedgerCorruptionError (after logging) when a record's length or CRC does not match.
    FileNotFoundError propagates when the ledger was trimmed meanwhile.
    """
    offsets = idx.offsets
    start = offsets[first]
    end = offsets[last + 1] if last + 1 < len(offsets) else idx.end_offset
    if not HEADER_SIZE <= start <= end <= idx.end_offset:
        # Only an index whose CRC matched but whose offsets are wrong gets here (a writer bug).
        _corrupt(idx, first, f"has index offsets outside its segment ({start}..{end} of {idx.end_offset})")
    fd = os.open(segment_path(folder, idx.ledger_id), os.O_RDONLY)
    try:
        buf = os.pread(fd, end - start, start)
    finally:
        os.close(fd)
    out = []
    view = memoryview(buf)
    for entry_id in range(first, last + 1):
        rel = offsets[entry_id] - start
        rec_end = (offsets[entry_id + 1] if entry_id + 1 < len(offsets) else idx.end_offset) - start
        if rel < 0 or rec_end > len(buf) or rec_end - rel < RECORD_OVERHEAD:
            _corrupt(idx, entry_id, "is truncated")
        length, crc = RECORD_HEADER.unpack_from(buf, rel)
        if length != rec_end - rel - RECORD_OVERHEAD or entry_id in idx.corrupt:
            _corrupt(idx, entry_id, "has a bad length field or was found corrupt at open")
        data = view[rel + RECORD_OVERHEAD: rec_end]
        if _crc(data, _crc(LENGTH.pack(length))) != crc:
            _corrupt(idx, entry_id, "fails its CRC32C")
        out.append(bytes(data))
    return out


def _corrupt(idx: SegmentIndex, entry_id: int, what: str) -> None:
    msg = f"ledger {idx.ledger_id} entry {entry_id} (position {idx.ledger_id}:{entry_id}) {what}"
    log.error("corrupt record: %s", msg)
    raise LedgerCorruptionError(msg)
