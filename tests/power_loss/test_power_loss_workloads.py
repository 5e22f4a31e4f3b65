"""One test per workload: record -> build the crash states -> recovery on each -> invariants.

A test marked xfail(strict=True) fails today because of the product bug its reason names; when
storage is fixed it passes, strict turns that into a failure, and the mark is to be removed.
"""
from __future__ import annotations

import dataclasses
import os

import pytest

from tools.crashstates.explore import check_recording, mutate

JOBS = int(os.environ.get("CRASHSTATES_JOBS", "1"))  # recoveries in parallel; 1 keeps the CPU modest

FIRST_BOOT_NOT_DURABLE = (
    "first boot is not durable: ManagedLedgerFactory.start() (storage/factory.py) creates <data_dir> and "
    "<data_dir>/ledgers with os.makedirs and never fsyncs their parent directories, and MetadataStore._write "
    "(broker/metadata_store.py) mkdirs <data_dir>/metadata and fsyncs it but not <data_dir>; after an "
    "acknowledged first metadata save, topic creation or append, a power loss can drop the directory entry "
    "of data/, data/ledgers or data/metadata: the metadata file or the whole ledger (entries, cursor) is lost")
DELETE_NOT_DURABLE = (
    "topic deletion is not durable: ManagedLedgerFactory.delete / ManagedLedger.delete remove the ledger "
    "folder with shutil.rmtree and fsync neither data/ledgers nor the folder before returning; after an "
    "acknowledged delete a power loss brings the deleted ledger back with its entries and cursor, and a topic "
    "re-created under the same name comes up with the old entries until data/ledgers is next fsynced")
CURSOR_DELETE_NOT_DURABLE = (
    "subscription deletion is not durable: storage/cursor_store.remove (ManagedLedger.delete_cursor) unlinks "
    "the cursor's slot files without fsyncing the cursors/ folder; after an acknowledged delete_cursor a power "
    "loss brings the deleted subscription back")

WORKLOADS = [
    pytest.param("w1", marks=pytest.mark.xfail(strict=True, reason=FIRST_BOOT_NOT_DURABLE)),
    "w2",
    "w3",
    "w4",
    pytest.param("w5", marks=pytest.mark.xfail(strict=True, reason=DELETE_NOT_DURABLE)),
    pytest.param("w6", marks=pytest.mark.xfail(strict=True, reason=CURSOR_DELETE_NOT_DURABLE)),
]


@pytest.mark.parametrize("name", WORKLOADS)
def test_no_crash_state_breaks_an_invariant(name, recordings, capsys):
    res = check_recording(recordings(name), jobs=JOBS)
    with capsys.disabled():
        print(f"\n[power-loss] {res.stats_line()}")
    assert res.states and res.checked_origins >= len(res.states)
    assert res.ok, res.report()


# The explorer itself: with a sync taken out of a real recording, it must find the damage.
def _no_fsync_of(fragment):
    return lambda op: not (op.kind == "fsync" and fragment in op.desc)


def test_a_metadata_save_without_fsync_before_rename_is_caught(recordings):
    rec = mutate(recordings("w4"), keep=_no_fsync_of(".tmp "))
    res = check_recording(rec, jobs=JOBS)
    assert {v.category for f in res.findings for v in f.violations} >= {"metadata-corrupt"}


def test_appends_without_dsync_are_caught(recordings):
    plain = lambda op: dataclasses.replace(op, durable=False) if op.kind == "write" else op  # noqa: E731
    res = check_recording(mutate(recordings("w2"), change=plain), jobs=JOBS)
    assert "entry-lost" in {v.category for f in res.findings for v in f.violations}


def test_cursor_persists_without_fdatasync_are_caught(recordings):
    res = check_recording(mutate(recordings("w3"), keep=_no_fsync_of(".cur.")), jobs=JOBS)
    cats = {v.category for f in res.findings for v in f.violations}
    assert {"cursor-behind", "cursor-lost"} & cats
