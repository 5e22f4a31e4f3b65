"""One test per workload: record -> build the crash states -> recovery on each -> invariants."""
from __future__ import annotations

import dataclasses
import os

import pytest

from tools.crashstates.explore import check_recording, mutate

# Recoveries in parallel, one per core (up to 4): on two cores two at once check w2 and w7 in
# half the time one does. CRASHSTATES_JOBS=1 keeps the CPU modest.
JOBS = int(os.environ.get("CRASHSTATES_JOBS", min(4, os.cpu_count() or 1)))


WORKLOADS = ["w1", "w2", "w3", "w4", "w5", "w6", "w7"]


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
