"""atheris harness over the stored-record reader (storage/segment.py: load_index, scan_segment,
read_records) and ledger-folder recovery (storage/recovery.py recover_ledgers).

Input: byte 0 = flags (bit 0 cut the torn tail, bit 1 write an index file, bit 2 give the index a
matching CRC so its offsets reach the reader, bit 3 put a valid header in front of the segment,
bit 4 open the folder with recover_ledgers instead), bytes 1-2 = where the segment's bytes end and
the index's begin, then the bytes. Property (tests/fuzz/oracles.py): every step recovers or raises
LedgerCorruptionError, and what a scan keeps reads back.

    python bench/atheris/fuzz_segment.py --minutes 5
"""
from __future__ import annotations

import os
import struct
import tempfile

import atheris
from common import run

with atheris.instrument_imports(include=["minipulsar"]):
    from minipulsar.storage import segment

    from tests.fuzz import oracles

FOLDER = tempfile.mkdtemp(prefix="minipulsar-atheris-segment-")


def _clear() -> None:
    for name in os.listdir(FOLDER):
        os.unlink(os.path.join(FOLDER, name))


def _index_bytes(raw: bytes, fix_crc: bool) -> bytes:
    if not fix_crc:
        return raw
    return raw + segment.CRC.pack(oracles.crc32c.crc32c(raw))


def test_one_input(data: bytes) -> None:
    if len(data) < 3:
        return
    flags, split = data[0], struct.unpack_from(">H", data, 1)[0]
    body = data[3:]
    seg, idx_raw = body[:split], body[split:]
    if flags & 8:
        seg = segment.SEG_HEADER.pack(segment.SEG_MAGIC, 0) + seg
    idx = _index_bytes(idx_raw, bool(flags & 4)) if flags & 2 else None
    _clear()
    if flags & 16:
        files = {"000000000000.seg": seg, "000000000001.seg": idx_raw}
        if idx is not None:
            files["000000000000.idx"] = idx
        oracles.check_ledger_recovery(FOLDER, files)
    else:
        oracles.check_segment_files(FOLDER, seg, idx, bool(flags & 1))


def seeds() -> list[bytes]:
    records = [b"a", b"bb" * 10, b""]
    seg = oracles.segment_image(records)
    offsets, pos = [], segment.HEADER_SIZE
    for record in records:
        offsets.append(pos)
        pos += segment.RECORD_OVERHEAD + len(record)
    idx = oracles.index_image(offsets, pos)
    split = struct.pack(">H", len(seg))
    seg_body = seg[segment.HEADER_SIZE:]
    return [b"\x00" + split + seg, b"\x03" + split + seg + idx, b"\x06" + split + seg + idx[:-4],
            b"\x09" + struct.pack(">H", len(seg_body)) + seg_body, b"\x12" + split + seg + idx]


if __name__ == "__main__":
    run("segment", test_one_input, seeds())
