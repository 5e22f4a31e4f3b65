"""Names the storage threads carry in the operating system (``top -H``, ``/proc/<pid>/task/*/comm``).

Python names its threads only for itself; the kernel sees every one as the interpreter. With
their own names, the journal and the ledger storage threads can be told apart when measuring
where a broker spends its CPU. Linux only (prctl PR_SET_NAME, at most 15 bytes); elsewhere a no-op.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

_PR_SET_NAME = 15
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform.startswith("linux") else None


def name_this_thread(name: str) -> None:
    """Give the calling thread `name` (cut to 15 bytes) in the operating system."""
    if _libc is not None:
        _libc.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)
