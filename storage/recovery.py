"""Opening a ledger folder after a clean stop or a crash (after the journal was replayed into it).

Every segment but the last should have a sealed offset index (``.idx``); it is loaded,
not rescanned, which is what makes opening 1 GiB of entries fast. The last segment
(open at the crash) is scanned record by record, its torn or partial tail is cut, and
it is sealed. Then the segment of a new ledger is created (Pulsar also rolls a new ledger on
every open), unsynced: its entries are in the journal, and the ledger storage syncs the folder
before it removes an older segment. Only after that are empty ledgers removed, so the highest
ledger id on disk never goes backwards (a cursor may stand at ``(id, -1)`` of the ledger that
was current). Blocking; run in an executor.
"""
from __future__ import annotations

import logging
import os
import re

from . import segment
from .segment import SegmentIndex

log = logging.getLogger(__name__)

_SEG = re.compile(r"^(\d+)\.seg$")
_IDX = re.compile(r"^(\d+)\.idx(\.tmp)?$")


def _ids(folder: str) -> tuple[list[int], list[str]]:
    seg_ids, idx_files = [], []
    for fname in os.listdir(folder):
        if m := _SEG.match(fname):
            seg_ids.append(int(m.group(1)))
        elif _IDX.match(fname):
            idx_files.append(fname)
    return sorted(seg_ids), idx_files


def recover_ledgers(folder: str, sync: bool) -> tuple[list[SegmentIndex], int]:
    """Return (sealed ledgers with entries, the new current ledger id)."""
    seg_ids, idx_files = _ids(folder)
    present = set(seg_ids)
    for fname in idx_files:  # leftovers of a trim or of an interrupted index write
        lid = int(fname.split(".")[0])
        if lid not in present or fname.endswith(".tmp"):
            os.unlink(os.path.join(folder, fname))
    sealed = [_open_segment(folder, lid, lid == seg_ids[-1], sync) for lid in seg_ids]
    new_id = seg_ids[-1] + 1 if seg_ids else 0
    os.close(segment.create_segment(folder, new_id, sync=False))
    kept = [idx for idx in sealed if idx.entries]
    if sync and len(kept) < len(sealed):
        segment.fsync_dir(folder)  # the new segment outlives the empty ones removed next
    for idx in sealed:
        if idx.entries == 0:
            for path in (segment.segment_path(folder, idx.ledger_id), segment.index_path(folder, idx.ledger_id)):
                os.unlink(path)
    return kept, new_id


def _open_segment(folder: str, ledger_id: int, is_last: bool, sync: bool) -> SegmentIndex:
    idx = segment.load_index(folder, ledger_id)
    if idx is not None:
        return idx
    if not is_last:
        log.warning("ledger %s: sealed ledger %d has no valid index; rescanning it", folder, ledger_id)
    idx = segment.scan_segment(folder, ledger_id, cut_tail=is_last)
    if idx.corrupt:
        log.error("ledger %s: ledger %d holds %d corrupt record(s): %s", folder, ledger_id,
                  len(idx.corrupt), sorted(idx.corrupt)[:10])
    segment.write_index(folder, idx, sync)
    return idx
