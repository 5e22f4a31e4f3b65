"""Segment indexes built by hand, for the storage tests that need a ledger map without files."""
from __future__ import annotations

from array import array

from minipulsar.storage.segment import HEADER_SIZE, RECORD_OVERHEAD, SegmentIndex


def index(ledger_id: int, sizes: list[int], sealed_at_ms: int = 0) -> SegmentIndex:
    """The SegmentIndex of a segment holding records of these payload sizes."""
    offsets, offset = array("q"), HEADER_SIZE
    for size in sizes:
        offsets.append(offset)
        offset += RECORD_OVERHEAD + size
    return SegmentIndex(ledger_id, offsets, offset, sealed_at_ms)
