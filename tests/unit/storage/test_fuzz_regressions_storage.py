"""Regression tests for what the storage fuzzers (tests/fuzz/test_fuzz_decoders.py and the atheris
harnesses in bench/atheris/) found: corrupt files that made the segment reader or the cursor-slot
decoder raise something other than their documented error. Each uses the minimal input found."""
import json
import struct

import crc32c
import pytest
from minipulsar.storage import Position, cursor_store, segment
from minipulsar.storage.errors import LedgerCorruptionError


def _segment_with_one_record(folder) -> None:
    parts, _, _ = segment.encode_records([b"x"], segment.HEADER_SIZE)
    with open(segment.segment_path(str(folder), 0), "wb") as f:
        f.write(segment.SEG_HEADER.pack(segment.SEG_MAGIC, 0) + b"".join(parts))


def _index(folder, offsets: list[int], end_offset: int) -> None:
    """An index file whose CRC matches its (wrong) content."""
    body = segment.IDX_HEADER.pack(segment.IDX_MAGIC, 0, len(offsets), end_offset, 1)
    body += struct.pack(f"<{len(offsets)}q", *offsets)
    with open(segment.index_path(str(folder), 0), "wb") as f:
        f.write(body + segment.CRC.pack(crc32c.crc32c(body)))


@pytest.mark.parametrize("offsets", [[-1], [2**62], [16, 8]], ids=["negative", "huge", "decreasing"])
def test_index_offsets_outside_the_segment_read_as_corruption(tmp_path, offsets):
    """Offsets that passed the index CRC but lie (negative, past the end, decreasing) made the read
    fail with OSError or OverflowError from os.pread; they are LedgerCorruptionError now."""
    _segment_with_one_record(tmp_path)
    _index(tmp_path, offsets, segment.HEADER_SIZE + segment.RECORD_OVERHEAD + 1)
    idx = segment.load_index(str(tmp_path), 0)
    assert idx is not None
    with pytest.raises(LedgerCorruptionError):
        segment.read_records(str(tmp_path), idx, 0, 0)


def _slot(body_tail: bytes, n_ranges: int = 0) -> bytes:
    """A slot image with a good frame and CRC around a head claiming n_ranges and body_tail."""
    body = struct.pack("<qqqq", 5, 1, 1, n_ranges) + body_tail
    return cursor_store.FRAME.pack(cursor_store.MAGIC, crc32c.crc32c(body), len(body)) + body


MALFORMED_SLOTS = {
    "property-null": _slot(json.dumps({"name": "c", "properties": {"k": None}, "cursor_properties": {}}).encode()),
    "property-infinity": _slot(b'{"name": "c", "properties": {"k": Infinity}, "cursor_properties": {}}'),
    "meta-not-an-object": _slot(b"null"),
    "meta-without-name": _slot(b"{}"),
    "range-count-lies": _slot(b"{}", n_ranges=1),
    "deeply-nested-json": _slot(b"[" * 100_000),
}


@pytest.mark.parametrize("raw", MALFORMED_SLOTS.values(), ids=MALFORMED_SLOTS.keys())
def test_malformed_slot_body_is_a_value_error(raw):
    """A slot whose CRC matches but whose body is malformed raised TypeError, KeyError,
    struct.error, OverflowError or RecursionError; decode() documents ValueError."""
    with pytest.raises(ValueError):
        cursor_store.decode(raw)


@pytest.mark.parametrize("raw", MALFORMED_SLOTS.values(), ids=MALFORMED_SLOTS.keys())
def test_load_falls_back_past_a_malformed_newest_slot(tmp_path, raw):
    """load() crashed (TypeError, OverflowError, RecursionError) when the newest slot's JSON was
    wrong in type or depth; it falls back to the older good slot."""
    base = str(tmp_path / "c.cur")
    good = cursor_store.CursorState("c", Position(3, 4), seq=1)
    with open(f"{base}.0", "wb") as f:
        f.write(cursor_store.encode(good))
    with open(f"{base}.1", "wb") as f:
        f.write(raw)
    assert cursor_store.load(base) == (good, 0)
