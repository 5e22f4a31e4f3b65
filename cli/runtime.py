"""What every verb of the `minipulsar` command line shares: logging set-up, uvloop, and running a
verb's coroutine so that a failure ends as one line on stderr, never a traceback.

Exit statuses of `run_verb`: the coroutine's own result (0 on success), 1 when it raises, 2 on a
UsageError, 130 when SIGINT/SIGTERM interrupts a verb that does not treat that as a normal end.
Also here: RateLimiter, the msg/s pacing of the client and perf verbs (0 = unthrottled), and the
argparse types of their numeric flags.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from typing import Awaitable, Callable

log = logging.getLogger(__name__)

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Flags that argparse accepts but that make no sense together (exit status 2)."""


def configure_logging(level: str, quiet_asyncio: bool = False, stream=None) -> None:
    """Log records at `level` (DEBUG, INFO, WARNING, ERROR) and above go to stream (default
    stderr; `standalone` logs to stdout, as Pulsar's standalone does).

    With quiet_asyncio (the client-side verbs) and a level above DEBUG, asyncio's own logger is
    kept to CRITICAL: its "exception was never retrieved" reports about the client's internal
    futures are noise for a command-line user."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=stream)
    if quiet_asyncio and logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)


def install_uvloop() -> None:
    """Use uvloop's event loop where it is installed (it is optional)."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def describe(exc: BaseException) -> str:
    """One line naming an error: 'ExceptionClass: reason'."""
    reason = " ".join(str(exc).split()) or "(no details)"
    return f"{type(exc).__name__}: {reason}"


def run_verb(name: str, main: Callable[[], Awaitable[int]]) -> int:
    """Run main() on a fresh event loop and return the process exit status.

    SIGINT (Ctrl-C) and SIGTERM cancel main's task: a verb that catches the CancelledError ends as
    it chooses (the perf verbs print their summary and return 0); otherwise the status is 130.
    Any exception becomes 'minipulsar NAME: ExceptionClass: reason' on stderr and status 1 (the
    traceback is logged at DEBUG only); a UsageError gives status 2.
    """
    install_uvloop()
    try:
        return asyncio.run(_cancel_on_sigterm(main))
    except (KeyboardInterrupt, asyncio.CancelledError):
        return EXIT_INTERRUPTED
    except UsageError as exc:
        print(f"minipulsar {name}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # the command line's last resort: one line, never a traceback
        log.debug("%s failed", name, exc_info=True)
        print(f"minipulsar {name}: {describe(exc)}", file=sys.stderr)
        return EXIT_FAILURE


async def _cancel_on_sigterm(main: Callable[[], Awaitable[int]]) -> int:
    # asyncio.run already turns the first SIGINT into a cancellation of this task.
    task = asyncio.current_task()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await main()


class RateLimiter:
    """Paces acquire() to at most `rate` calls per second over every task that shares it, as
    Guava's RateLimiter paces pulsar-client and pulsar-perf. rate <= 0 means no limit.

    Waits shorter than a millisecond are not slept (the event loop's timers are not that fine);
    the schedule still advances, so the long-run rate holds."""

    _MIN_SLEEP = 0.001

    def __init__(self, rate: float):
        self._interval = 1.0 / rate if rate > 0 else 0.0
        self._next = 0.0

    async def acquire(self) -> None:
        if not self._interval:
            return
        now = time.monotonic()
        slot = max(now, self._next)
        self._next = slot + self._interval
        if slot - now >= self._MIN_SLEEP:
            await asyncio.sleep(slot - now)


# argparse types: each raises ArgumentTypeError, which argparse reports (exit status 2)
def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value
