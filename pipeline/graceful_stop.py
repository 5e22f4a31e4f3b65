"""Stopping streaming queries from Ctrl-C without errors, tracebacks or a StackOverflowError.

Three things go wrong when a PySpark streaming application is simply interrupted:

* PySpark's own SIGINT handler cancels every running Spark job and raises KeyboardInterrupt
  wherever the main thread happens to be. Jobs started from ``foreachBatch`` fail half-way, each
  failure is logged at ERROR with its Java and Python stack traces.
* ``StreamingQuery.stop()`` interrupts the query's thread. When that thread is inside a Python
  ``foreachBatch`` function, the function fails with a ``Py4JJavaError`` whose text holds the whole
  Java stack trace. Spark decides whether such a failure is "just the stop" by matching that text
  against a regular expression of the form ``calling((.|\\n)*)(java.lang.InterruptedException|...)``.
  Java's regex engine recurses once per character for ``(.|\\n)*``, so a text of a few thousand
  characters overflows the stack: the query thread dies with ``java.lang.StackOverflowError``.
* ``spark.stop()`` with queries still running kills them mid-batch.

So: ``StopSignal`` replaces PySpark's SIGINT handler (and handles SIGTERM) with one that only asks
for a stop; ``guard_foreach_batch`` turns a failure that happens because of the stop into a
one-line error Spark recognises as an interruption; ``stop_queries`` waits until each query is
between micro-batches (bounded) before it calls ``stop()``, so normally nothing is interrupted at
all.
"""
from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Callable, Iterable

log = logging.getLogger(__name__)

# What Spark's StreamExecution.isInterruptionException looks for in a foreachBatch failure, kept
# short so that its regular expression has next to nothing to recurse over.
INTERRUPTED_TEXT = ("py4j.protocol.Py4JJavaError: An error occurred while calling foreachBatch.\n"
                    ": java.lang.InterruptedException")


class QueryStopped(Exception):
    """A foreachBatch function failed because its query is being stopped."""


class StopSignal:
    """SIGINT / SIGTERM handlers that set ``requested`` instead of raising KeyboardInterrupt.

    A second signal while a stop is under way raises KeyboardInterrupt, for the impatient. Install
    after the SparkSession is created (PySpark installs its own SIGINT handler then); ``restore``
    puts the previous handlers back.
    """

    def __init__(self):
        self.requested = threading.Event()
        self._previous: dict[int, object] = {}

    def install(self) -> "StopSignal":
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested.is_set():
            raise KeyboardInterrupt
        log.info("%s: stopping after the current micro-batches", signal.Signals(signum).name)
        self.requested.set()

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


def guard_foreach_batch(function: Callable, stopping: threading.Event) -> Callable:
    """function(batch_df, batch_id), where a failure while ``stopping`` is set raises QueryStopped
    with INTERRUPTED_TEXT (no chained cause, so the traceback Spark sees stays a few lines long).
    Failures while not stopping propagate unchanged: they are real."""
    def guarded(batch_df, batch_id):
        try:
            function(batch_df, batch_id)
        except Exception:
            if not stopping.is_set():
                raise
            raise QueryStopped(INTERRUPTED_TEXT) from None
    return guarded


def wait_until_idle(query, timeout: float) -> bool:
    """Wait (at most timeout seconds) until query runs no micro-batch; False on timeout."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status["isTriggerActive"]:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)  # the poll interval of this deadline-bounded wait for the trigger to end
    return True


def stop_queries(queries: Iterable, stopping: threading.Event, timeout: float = 30.0) -> None:
    """Set stopping, then stop each query once it is between micro-batches (or after timeout)."""
    stopping.set()
    for query in queries:
        if not wait_until_idle(query, timeout):
            log.warning("query %s still busy after %.0f s; interrupting it", query.name, timeout)
        query.stop()
