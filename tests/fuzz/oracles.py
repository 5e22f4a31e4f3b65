"""Properties of the decoders that read untrusted bytes, as plain functions of those bytes.

Both the hypothesis tests (tests/fuzz/test_fuzz_decoders.py, in CI) and the coverage-guided atheris
harnesses (bench/atheris/, by hand) call these, so the two fuzzers check the same contract:

- the frame decoder raises only FrameError, and gives the same frames however the bytes are split;
- the segment reader (scan, index load, record reads, ledger-folder recovery) recovers cleanly from
  any file content or raises only LedgerCorruptionError, and what it recovers reads back;
- the cursor-slot decoder raises only ValueError, and loading a cursor never raises for a
  corrupt slot (it falls back to the other slot, or to no state);
- an entry opens and its batch splits (proto.entries) or they raise only FrameError or EntryError,
  a split batch holds num_messages_in_batch messages of their payload_size each, and splitting
  from a later first message gives the tail of the same split.

A property that does not hold raises AssertionError (or lets the unexpected exception through).
"""
from __future__ import annotations

import itertools
import os
import struct

import crc32c
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.entries import is_batch, open_entry, split_batch
from minipulsar.proto.errors import EntryError, FrameError
from minipulsar.proto.frames import (
    FrameDecoder,
    parse_metadata,
    split_headers_and_payload,
    verify_checksum,
)
from minipulsar.storage import cursor_store, recovery, segment
from minipulsar.storage.errors import LedgerCorruptionError

Type = api.BaseCommand.Type
MAX_FRAME = 64 * 1024


# ---- frames ---------------------------------------------------------------------------------------
def _decode_all(data: bytes, cuts: list[int]) -> tuple[list[bytes], bool]:
    """Feed data split at cuts; (each frame's command bytes + payload, whether it ended in FrameError)."""
    decoder = FrameDecoder(MAX_FRAME)
    out = []
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    try:
        for start, end in itertools.pairwise(bounds):
            for frame in decoder.feed(data[start:end]):
                _check_frame(frame)
                out.append(frame.command.SerializeToString() + (frame.headers_and_payload or b""))
    except FrameError:
        return out, True
    return out, False


def _check_frame(frame) -> None:
    """A decoded frame is a complete command; a payload frame's helpers raise only FrameError."""
    assert frame.command.IsInitialized(), frame.command
    assert (frame.headers_and_payload is not None) == (frame.command.type in (Type.SEND, Type.MESSAGE))
    if frame.headers_and_payload is not None:
        try:
            parsed = split_headers_and_payload(frame.headers_and_payload)
            verify_checksum(frame.headers_and_payload, parsed)
            parse_metadata(frame.headers_and_payload, parsed)
        except FrameError:
            pass


def check_frame_decoder(data: bytes, cuts: list[int]) -> None:
    """The frames of data fed whole equal the frames of data fed in pieces (split at cuts), and a
    FrameError in one is a FrameError in the other; nothing else is raised."""
    whole, whole_failed = _decode_all(data, [])
    pieces, pieces_failed = _decode_all(data, cuts)
    assert whole_failed == pieces_failed, (whole_failed, pieces_failed)
    if whole_failed:
        assert whole == pieces[:len(whole)], "split feeding changed the frames before the error"
    else:
        assert whole == pieces, "split feeding changed the frames"


# ---- segments -------------------------------------------------------------------------------------
def segment_image(records: list[bytes], ledger_id: int = 0) -> bytes:
    """A well-formed segment file holding records (a starting point for corruption)."""
    parts, _, _ = segment.encode_records(records, segment.HEADER_SIZE)
    return segment.SEG_HEADER.pack(segment.SEG_MAGIC, ledger_id) + b"".join(parts)


def index_image(offsets: list[int], end_offset: int, ledger_id: int = 0, sealed_at: int = 1) -> bytes:
    """An offset-index file with a valid CRC over whatever offsets it is given."""
    body = segment.IDX_HEADER.pack(segment.IDX_MAGIC, ledger_id, len(offsets), end_offset, sealed_at)
    body += struct.pack(f"<{len(offsets)}q", *offsets)
    return body + segment.CRC.pack(crc32c.crc32c(body))


def _read_every_entry(folder: str, idx: segment.SegmentIndex, must_read: bool) -> None:
    """Read each entry alone and all together: bytes back, or LedgerCorruptionError (only for a
    record the scan marked corrupt when must_read)."""
    for entry_id in range(idx.entries):
        try:
            segment.read_records(folder, idx, entry_id, entry_id)
        except LedgerCorruptionError:
            assert not must_read or entry_id in idx.corrupt, f"entry {entry_id} of a scanned segment did not read"
    if idx.entries:
        try:
            segment.read_records(folder, idx, 0, idx.entries - 1)
        except LedgerCorruptionError:
            assert not must_read or idx.corrupt, "a scanned segment without corrupt records did not read"


def check_segment_files(folder: str, seg: bytes, idx: bytes | None, cut_tail: bool) -> None:
    """Write <0>.seg (and <0>.idx) into the empty folder, then load the index, scan the segment
    and read what either finds; every step recovers or raises LedgerCorruptionError only."""
    with open(segment.segment_path(folder, 0), "wb") as f:
        f.write(seg)
    if idx is not None:
        with open(segment.index_path(folder, 0), "wb") as f:
            f.write(idx)
    loaded = segment.load_index(folder, 0)
    if loaded is not None:
        _read_every_entry(folder, loaded, must_read=False)
    scanned = segment.scan_segment(folder, 0, cut_tail)
    assert scanned.end_offset <= max(os.path.getsize(segment.segment_path(folder, 0)), segment.HEADER_SIZE)
    if cut_tail:
        assert not scanned.corrupt, "a tail-cut scan kept a corrupt record"
    _read_every_entry(folder, scanned, must_read=True)


def check_ledger_recovery(folder: str, files: dict[str, bytes]) -> None:
    """A ledger folder holding files (segments, indexes, leftovers) opens as after a crash: no
    exception, and every entry of the ledgers it keeps reads back or raises LedgerCorruptionError."""
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    ledgers, new_id = recovery.recover_ledgers(folder, sync=False)
    assert all(idx.ledger_id < new_id for idx in ledgers)
    assert os.path.exists(segment.segment_path(folder, new_id))  # the new ledger's segment is there
    for idx in ledgers:
        _read_every_entry(folder, idx, must_read=False)


# ---- cursor slots ---------------------------------------------------------------------------------
def framed_slot(body: bytes) -> bytes:
    """A cursor slot image whose magic, CRC and length are right for body (so body reaches the parser)."""
    return cursor_store.FRAME.pack(cursor_store.MAGIC, crc32c.crc32c(body), len(body)) + body


def check_cursor_slot(folder: str, raw: bytes) -> None:
    """decode raises only ValueError; what it accepts survives encode/decode unchanged; load() of a
    cursor whose newest slot is raw never raises, and falls back to the good older slot."""
    try:
        state = cursor_store.decode(raw)
    except ValueError:
        state = None
    if state is not None:
        assert cursor_store.decode(cursor_store.encode(state)) == state
    base = os.path.join(folder, "c.cur")
    good = cursor_store.CursorState("c", cursor_store.Position(1, 1), seq=-(2**63))
    with open(f"{base}.0", "wb") as f:
        f.write(raw)
    with open(f"{base}.1", "wb") as f:
        f.write(cursor_store.encode(good))
    best, slot = cursor_store.load(base)
    assert best is not None, "load() lost the good slot"
    assert slot == (1 if state is None else (0 if state.seq >= good.seq else 1))


# ---- entries --------------------------------------------------------------------------------------
def check_entry(data: bytes) -> None:
    """open_entry (with and without the checksum check) and split_batch raise only FrameError or
    EntryError; a batch that splits has num_messages_in_batch messages, each payload_size long,
    and its split from the middle on is the tail of the whole split."""
    for verify in (True, False):
        try:
            metadata, payload = open_entry(data, verify=verify)
        except (FrameError, EntryError):
            continue
        if not is_batch(metadata):
            continue
        try:
            singles, payloads = split_batch(payload, metadata.num_messages_in_batch)
        except EntryError:
            continue
        assert len(singles) == len(payloads) == max(metadata.num_messages_in_batch, 0)
        assert [len(body) for body in payloads] == [single.payload_size for single in singles]
        assert sum(map(len, payloads)) <= len(payload)
        first = len(singles) // 2
        assert split_batch(payload, len(singles), first) == (singles[first:], payloads[first:])
