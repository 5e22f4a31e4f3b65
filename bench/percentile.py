"""The nearest-rank percentile every bench prints (p50, p99, ...), in one place so their figures
mean the same thing."""
from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """The value at rank int(q * n) of the sorted values (q in [0, 1]); nan when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")
