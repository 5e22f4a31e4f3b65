"""Storage crash tests. The crash-state workloads record a workload under strace, build every crash
state the method allows (tools/crashstates, the ALICE method without FUSE), run recovery on each
and check the invariants.

strace is needed for the workload tests (.ci/run installs it). Without it they are skipped, unless
CI_REQUIRE_STRACE=1 (set by .ci/run), which turns the skip into a failure.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def _strace_problem() -> str | None:
    exe = shutil.which("strace")
    if exe is None:
        return "strace is not installed (apt-get install strace; .ci/run installs it)"
    proc = subprocess.run([exe, "-f", "-qq", "-e", "trace=none", "true"], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"strace cannot trace here: {proc.stderr.strip()[:300]}"
    return None


@pytest.fixture(scope="session")
def strace_ok():
    problem = _strace_problem()
    if problem:
        if os.environ.get("CI_REQUIRE_STRACE") == "1":
            pytest.fail(problem + " (CI_REQUIRE_STRACE=1)")
        pytest.skip(problem)


@pytest.fixture(scope="session")
def recordings(strace_ok, tmp_path_factory):
    """recordings(name) -> the Recording of workload ``name`` (recorded once per session)."""
    from tools.crashstates.recorder import record
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = record(name, str(tmp_path_factory.mktemp(f"rec-{name}") / "run"))
        return cache[name]
    return get
