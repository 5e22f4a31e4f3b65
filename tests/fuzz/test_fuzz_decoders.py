"""Bounded hypothesis runs over the decoders of untrusted bytes (no sockets): the frame decoder,
the entry opener and batch splitter, the segment reader and ledger recovery, and the cursor-slot
decoder (properties: tests/fuzz/oracles.py).
The coverage-guided harnesses in bench/atheris/ check the same properties for as long as asked."""
import json
import struct
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from minipulsar.storage import Position, cursor_store, segment

from tests.fuzz import oracles, strategies
from tests.fuzz.harness import MAX_FRAME

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def corrupted(draw, data: bytes) -> bytes:
    """data with a few bytes flipped, a cut, or random bytes spliced in."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(("flip", "cut", "splice")))
        if kind == "flip" and buf:
            buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del buf[draw(st.integers(0, len(buf))):]
        else:
            at = draw(st.integers(0, len(buf)))
            buf[at:at] = draw(st.binary(max_size=12))
    return bytes(buf)


def _frames_stream(frames) -> bytes:
    return b"".join(frame.data for frame in frames)


@FAST
@given(st.lists(st.one_of(strategies.wire_frames(MAX_FRAME), strategies.raw_chunks()), max_size=5).map(_frames_stream),
       st.lists(st.integers(0, 2000), max_size=6))
def test_frame_decoder_raises_only_frame_error_and_ignores_how_bytes_are_split(data, cuts):
    oracles.check_frame_decoder(data, cuts)


@FAST
@given(st.binary(max_size=512), st.lists(st.integers(0, 512), max_size=4))
def test_frame_decoder_on_arbitrary_bytes(data, cuts):
    oracles.check_frame_decoder(data, cuts)


entries = st.tuples(strategies.message_parts(), st.sampled_from(("good", "bad", "none"))).map(
    lambda parts: strategies.headers_and_payload(*parts[0], parts[1]))


@FAST
@given(st.one_of(entries, entries.flatmap(corrupted), st.binary(max_size=64)))
def test_entry_opener_and_batch_splitter_raise_only_entry_errors(data):
    oracles.check_entry(data)


records = st.lists(st.binary(max_size=40), max_size=6)


@st.composite
def segment_files(draw):
    """(segment bytes, index bytes or None): a real segment and index, then corrupted; the index's
    CRC is recomputed half the time, so its offsets themselves are wrong and still reach the reader."""
    entries = draw(records)
    seg = oracles.segment_image(entries)
    parts_offsets = [segment.HEADER_SIZE]
    for data in entries[:-1]:
        parts_offsets.append(parts_offsets[-1] + segment.RECORD_OVERHEAD + len(data))
    offsets = parts_offsets[:len(entries)]
    idx = None
    if draw(st.booleans()):
        if draw(st.booleans()):
            offsets = draw(st.lists(st.one_of(st.sampled_from(offsets or [0]), st.integers(-(2**63), 2**63 - 1),
                                              st.integers(-4, len(seg) + 8)), max_size=len(offsets) + 2))
            idx = oracles.index_image(offsets, draw(st.one_of(st.just(len(seg)), st.integers(-8, len(seg) + 8))))
        else:
            idx = draw(corrupted(oracles.index_image(offsets, len(seg))))
    return draw(corrupted(seg)), idx


@FAST
@given(segment_files(), st.booleans())
def test_segment_reader_recovers_or_raises_ledger_corruption(files, cut_tail):
    seg, idx = files
    with tempfile.TemporaryDirectory() as folder:
        oracles.check_segment_files(folder, seg, idx, cut_tail)


@FAST
@given(st.lists(st.tuples(st.integers(0, 3), segment_files()), min_size=1, max_size=3),
       st.lists(st.sampled_from(("000000000009.idx", "000000000001.idx.tmp", "000000000002.seg")), max_size=2))
def test_ledger_folder_recovery_opens_any_corruption(ledgers, leftovers):
    files = {}
    for ledger_id, (seg, idx) in ledgers:
        files[segment.segment_path("", ledger_id)] = seg
        if idx is not None:
            files[segment.index_path("", ledger_id)] = idx
    for name in leftovers:
        files.setdefault(name, b"")
    with tempfile.TemporaryDirectory() as folder:
        oracles.check_ledger_recovery(folder, files)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=3), max_leaves=8)


@st.composite
def slot_bodies(draw) -> bytes:
    """A cursor-slot body: the fixed head, ranges (their count may lie), then JSON that may be anything."""
    n = draw(st.one_of(st.integers(0, 3), st.integers(-(2**63), 2**63 - 1)))
    head = struct.pack("<qqqq", draw(st.integers(-(2**63), 2**63 - 1)), 3, 4, n)
    ranges = b"".join(struct.pack("<qqqq", 1, 2, 3, 4) for _ in range(draw(st.integers(0, 3))))
    meta = draw(st.one_of(
        st.fixed_dictionaries({"name": st.text(max_size=8), "properties": st.dictionaries(st.text(max_size=4),
                              json_values, max_size=2), "cursor_properties": st.dictionaries(
                              st.text(max_size=4), json_values, max_size=2)}),
        json_values))
    text = json.dumps(meta).encode() if draw(st.integers(0, 7)) else draw(st.binary(max_size=16))
    return head + ranges + text


@FAST
@given(st.one_of(slot_bodies().map(oracles.framed_slot),
                 st.builds(lambda state: cursor_store.encode(state), st.builds(
                     cursor_store.CursorState, st.text(max_size=8), st.builds(Position, st.integers(-1, 9), st.integers(-1, 9)),
                     seq=st.integers(-(2**63), 2**63 - 1))).flatmap(corrupted),
                 st.binary(max_size=64)))
def test_cursor_slot_decoder_raises_only_value_error(raw):
    with tempfile.TemporaryDirectory() as folder:
        oracles.check_cursor_slot(folder, raw)

