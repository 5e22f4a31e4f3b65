"""Exponential back-off between reconnection attempts.

Delays start at `initial` seconds (0.1) and double up to `maximum` (60), with up to 10 % random
jitter subtracted so that many clients do not reconnect in lock-step. Source: Pulsar's C++ Backoff
(initial 100 ms, max 60 s).
"""
from __future__ import annotations

import random


class Backoff:
    """next() -> seconds to wait before the next attempt; reset() after a success."""

    def __init__(self, initial: float = 0.1, maximum: float = 60.0):
        self.initial = initial
        self.maximum = maximum
        self._next = initial

    def next(self) -> float:
        current = self._next
        self._next = min(self._next * 2, self.maximum)
        return max(self.initial, current - random.uniform(0, current * 0.1))

    def reset(self) -> None:
        self._next = self.initial
