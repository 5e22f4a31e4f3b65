"""An instance's counters and how they reach the worker.

InstanceStats counts what Pulsar's Python instance counts (function_stats.Stats): messages
received, processed successfully, user and system exceptions (the last ten of each with their
time, cleared with the one-minute window as Pulsar does), process latency in milliseconds, the last
invocation time, the same over the current one-minute window, and the user metrics of
Context.record_metric (`user_metric_<name>_sum` / `_count`). It is thread-safe: the official
client's callback thread records send failures while the main thread processes.

Reporter writes JSON lines on the report pipe the worker gave the process (a file descriptor):
{"event": "running"} once the inputs are subscribed, {"event": "stats", "stats": {...}} at most
every REPORT_INTERVAL_SECONDS while something changed, {"event": "error", "error": "..."} before
the process exits on a fatal error. The worker answers status and stats REST calls from the last
report, so they never wait on a busy instance.
"""
from __future__ import annotations

import json
import os
import threading
import time
import traceback
from collections import deque

WINDOW_SECONDS = 60.0  # Pulsar resets the 1min figures and the latest exceptions every minute
LATEST_EXCEPTIONS = 10
REPORT_INTERVAL_SECONDS = 0.2


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class _Counts:
    """The figures of one period: totals since start, or the current minute."""

    def __init__(self):
        self.received = self.processed = self.user_exceptions = self.system_exceptions = 0
        self.latency_sum_ms = 0.0
        self.latency_count = 0

    def json(self) -> dict:
        average = self.latency_sum_ms / self.latency_count if self.latency_count else 0.0
        return {"receivedTotal": self.received, "processedSuccessfullyTotal": self.processed,
                "systemExceptionsTotal": self.system_exceptions, "userExceptionsTotal": self.user_exceptions,
                "avgProcessLatency": average}


class InstanceStats:
    """Counters of one instance process since it started."""

    def __init__(self):
        self._lock = threading.Lock()
        self.total = _Counts()
        self.minute = _Counts()
        self._minute_start = time.monotonic()
        self.last_invocation_ms = 0
        self.user_exceptions: deque = deque(maxlen=LATEST_EXCEPTIONS)
        self.system_exceptions: deque = deque(maxlen=LATEST_EXCEPTIONS)
        self.user_metrics: dict[str, list[float]] = {}  # name -> [sum, count]
        self.changed = False  # something was counted since the last snapshot (a plain flag: cheap per message)

    def _both(self):
        if time.monotonic() - self._minute_start >= WINDOW_SECONDS:
            self.minute = _Counts()
            self._minute_start = time.monotonic()
            self.user_exceptions.clear()
            self.system_exceptions.clear()
        self.changed = True
        return self.total, self.minute

    def received(self) -> None:
        with self._lock:
            for counts in self._both():
                counts.received += 1

    def invoked(self) -> None:
        with self._lock:
            self.last_invocation_ms = now_ms()
            self._both()

    def processed(self, latency_ms: float) -> None:
        with self._lock:
            for counts in self._both():
                counts.processed += 1
                counts.latency_sum_ms += latency_ms
                counts.latency_count += 1

    def user_exception(self, text: str) -> None:
        with self._lock:
            for counts in self._both():
                counts.user_exceptions += 1
            self.user_exceptions.append({"exceptionString": text, "timestampMs": now_ms()})

    def system_exception(self, text: str) -> None:
        with self._lock:
            for counts in self._both():
                counts.system_exceptions += 1
            self.system_exceptions.append({"exceptionString": text, "timestampMs": now_ms()})

    def record_metric(self, name: str, value: float) -> None:
        with self._lock:
            entry = self.user_metrics.setdefault(str(name), [0.0, 0])
            entry[0] += float(value)
            entry[1] += 1
            self.changed = True

    def snapshot(self) -> dict:
        """Everything, as the JSON the worker builds FunctionStatus and FunctionStats from."""
        with self._lock:
            self._both()
            self.changed = False
            figures = self.total.json()
            user = {}
            for name, (total, count) in self.user_metrics.items():
                user[f"user_metric_{name}_sum"] = total
                user[f"user_metric_{name}_count"] = count
            return {**figures, "1min": self.minute.json(), "lastInvocation": self.last_invocation_ms,
                    "latencySumMs": self.total.latency_sum_ms, "latencyCount": self.total.latency_count,
                    "latestUserExceptions": list(self.user_exceptions),
                    "latestSystemExceptions": list(self.system_exceptions), "userMetrics": user}


def exception_text() -> str:
    """The current exception as Pulsar reports it (traceback.format_exc())."""
    return traceback.format_exc()


class Reporter:
    """Writes events on the report pipe `fd` (None: a process without a worker, e.g. a test)."""

    def __init__(self, fd: int | None, stats: InstanceStats):
        self._fd = fd
        self._stats = stats
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def send(self, event: dict) -> None:
        if self._fd is None:
            return
        line = json.dumps(event).encode() + b"\n"
        with self._lock:
            try:
                os.write(self._fd, line)
            except OSError:  # the worker is gone; the parent watch ends the process
                self._fd = None

    def running(self) -> None:
        self.send({"event": "running"})

    def error(self, text: str) -> None:
        self.send({"event": "error", "error": text})

    def start(self) -> None:
        """Report the stats while they change, until stop()."""
        threading.Thread(target=self._loop, name="stats-reporter", daemon=True).start()

    def _loop(self) -> None:
        while not self._stop.wait(REPORT_INTERVAL_SECONDS):
            if self._stats.changed:
                self.send({"event": "stats", "stats": self._stats.snapshot()})

    def stop(self) -> None:
        """Stop the loop and send the final figures."""
        self._stop.set()
        self.send({"event": "stats", "stats": self._stats.snapshot()})
