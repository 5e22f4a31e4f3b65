"""Recovery from the journal: what the journal made durable goes into the segments before any
managed ledger opens.

From the checkpoint on (storage.journal_format), every journal file is read in order; each
file names the ledger folders its records are about (NAME). Per managed ledger, only the records
after its last DELETE count, and a folder that is gone was deleted. Per ledger of it:

* a TRIM record: the ledger was trimmed; its files go (again);
* ENTRY records: the segment is scanned (CRC by CRC, its torn tail cut) and every journaled
  entry it lacks is appended, in order; a segment that is missing is created (its creation was
  lost); a journal that resumes past the segment's end means entries synced before the
  checkpoint were lost: that is logged as an error and the ledger keeps what it has;
* a SEAL record (a fence after a failed write): the segment is cut to the entries it keeps.

Touched segments lose their offset index (the ledger's open rebuilds it) and are synced with
their folders; then a checkpoint past every replayed record is written, and the old journal
files go. Blocking; run in an executor, before the journal thread starts.
Source: BookKeeper Bookie.replay (journal replay from lastMark into ledger storage).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from . import journal_format as jf
from . import segment
from .journal_format import Mark
from .segment import fsync_dir

log = logging.getLogger(__name__)


@dataclass
class _LedgerRecords:
    """One ledger's records in the replayed part of the journal."""

    entries: list[tuple[int, bytes]] = field(default_factory=list)  # (entry id, segment record)
    kept: int | None = None  # SEAL: entries it keeps
    trimmed: bool = False


@dataclass
class ReplayResult:
    """next_seq: the journal file to write next; entries: appended to segments; ledgers: touched."""

    next_seq: int
    entries: int = 0
    ledgers: int = 0


def replay(journal_folder: str, ledgers_dir: str, sync: bool) -> ReplayResult:
    """Replay the journal into the segments under ledgers_dir; returns where to go on. Raises
    OSError when the journal or a segment cannot be read or written."""
    files = jf.list_files(journal_folder)
    checkpoint = jf.read_checkpoint(journal_folder) or Mark(files[0] if files else 0, 0)
    folders: dict[str, dict[int, _LedgerRecords]] = {}
    for seq in (s for s in files if s >= checkpoint.seq):
        _read_file(jf.file_path(journal_folder, seq), checkpoint.offset if seq == checkpoint.seq else None, folders)
    result = ReplayResult(next_seq=max(files[-1] + 1 if files else 0, checkpoint.seq))
    for folder_name, ledgers in folders.items():
        folder = os.path.join(ledgers_dir, folder_name)
        if not os.path.isdir(folder):
            log.info("journal: %s was deleted; its journaled entries are not wanted", folder_name)
            continue
        result.entries += _replay_folder(folder, ledgers, sync)
        result.ledgers += len(ledgers)
    jf.write_checkpoint(journal_folder, Mark(result.next_seq, jf.FILE_HEADER.size))
    for seq in files:
        os.unlink(jf.file_path(journal_folder, seq))
    if result.entries:
        log.info("journal: %d entries of %d ledgers replayed into their segments", result.entries, result.ledgers)
    return result


def _read_file(path: str, start: int | None, folders: dict[str, dict[int, _LedgerRecords]]) -> None:
    """Collect the file's records from offset start on; its names are read from the beginning
    (a record after the checkpoint may use an id declared before it)."""
    names: dict[int, str] = {}
    for record in jf.read_records(path):
        if record.kind == jf.NAME:
            names[record.topic] = record.payload.decode()
            continue
        if start is not None and record.end <= start:
            continue
        name = names.get(record.topic)
        if name is None:
            log.error("journal %s: a record names ledger folder id %d, which the file never declared", path, record.topic)
            continue
        if record.kind == jf.DELETE:
            folders[name] = {}  # what came before is not wanted
            continue
        ledger = folders.setdefault(name, {}).setdefault(record.ledger_id, _LedgerRecords())
        if record.kind == jf.ENTRY:
            ledger.entries.append((record.entry_id, record.payload))
        elif record.kind == jf.SEAL:
            ledger.kept = record.entry_id if ledger.kept is None else min(ledger.kept, record.entry_id)
        else:
            ledger.trimmed = True


def _replay_folder(folder: str, ledgers: dict[int, _LedgerRecords], sync: bool) -> int:
    """Bring each journaled ledger's segment up to the journal; returns entries appended."""
    appended, created = 0, False
    for ledger_id, records in sorted(ledgers.items()):
        seg_path = segment.segment_path(folder, ledger_id)
        for path in (segment.index_path(folder, ledger_id),) + ((seg_path,) if records.trimmed else ()):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        if records.trimmed:
            continue
        if not os.path.exists(seg_path):
            os.close(segment.create_segment(folder, ledger_id, sync=False))
            created = True
        appended += _replay_ledger(folder, ledger_id, records, sync)
    if sync and (created or appended):
        fsync_dir(folder)
    return appended


def _replay_ledger(folder: str, ledger_id: int, records: _LedgerRecords, sync: bool) -> int:
    index = segment.scan_segment(folder, ledger_id, cut_tail=True)
    have, parts = index.entries, []
    for entry_id, record in records.entries:
        if entry_id > have:
            log.error("journal replay: ledger %d of %s: the journal resumes at entry %d but the segment "
                      "holds %d: entries synced before the checkpoint are missing", ledger_id, folder, entry_id, have)
            break
        if entry_id == have:
            parts.append(record)
            have += 1
    fd = os.open(segment.segment_path(folder, ledger_id), os.O_WRONLY)
    try:
        if parts:
            segment.pwritev_all(fd, parts if len(parts) <= segment.IOV_MAX else [b"".join(parts)], index.end_offset)
        if records.kept is not None and records.kept < have:
            cut = index.offsets[records.kept] if records.kept < index.entries else _offset_after(
                index.end_offset, parts, records.kept - index.entries)
            os.ftruncate(fd, cut)
            log.warning("ledger %s: ledger %d fenced at %d entries (a write of unknown outcome)", folder,
                        ledger_id, records.kept)
        if sync:
            os.fdatasync(fd)
    finally:
        os.close(fd)
    return len(parts)


def _offset_after(start: int, records: list[bytes], count: int) -> int:
    """The offset after the first `count` of records written from start."""
    return start + sum(len(r) for r in records[:count])
