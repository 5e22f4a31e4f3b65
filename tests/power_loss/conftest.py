"""Power-loss tests on faultfs (tools/faultfs): a FUSE file system that keeps unsynced data and
directory entries in memory and drops them on command.

Every test that mounts one (the `ffs` fixture) is skipped, with the reason, only when /dev/fuse
or fusermount3 is missing; any other failure to mount fails the test."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

from faultfs.control import FaultFS, fuse_unavailable_reason  # noqa: E402

_REASON = fuse_unavailable_reason()


def pytest_collection_modifyitems(config, items):
    if _REASON is None:
        return
    for item in items:  # the tests that mount one (the model's own tests run anyway)
        if "ffs" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.skip(reason=f"faultfs needs FUSE: {_REASON}"))


@pytest.fixture
def ffs(request):
    """A faultfs mounted on a temp dir for one test; its log tail is printed when the test fails."""
    fs = FaultFS()
    fs.start()
    yield fs
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        print("--- faultfs log tail ---\n" + fs.log_tail())
    fs.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
