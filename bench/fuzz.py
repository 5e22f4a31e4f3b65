"""Fuzz the broker for as long as asked (run by hand): the properties of the bounded CI run
(tests/fuzz/harness.py) over the same strategies (tests/fuzz/strategies.py), batch after batch.

    python bench/fuzz.py --minutes 10 [--property commands|payloads|pairs|raw|all] [--batch 300]

Prints, per property, the sessions tried, the failures found (each with the falsifying session:
the commands and bytes that broke a property) and the rate. A failure restarts the broker, so one
finding does not hide the next. Exits 1 when anything failed.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.fuzz import strategies
from tests.fuzz.harness import MAX_FRAME, FuzzTarget, run_sessions

Type = strategies.Type
PAYLOAD_TYPES = (Type.SEND, Type.SEND, Type.SEND, Type.ACK, Type.FLOW, Type.SEEK,
                 Type.REDELIVER_UNACKNOWLEDGED_MESSAGES, Type.GET_LAST_MESSAGE_ID, Type.CONSUMER_STATS)
PROPERTIES = {
    "commands": lambda: strategies.sessions(MAX_FRAME),
    "payloads": lambda: strategies.sessions(MAX_FRAME, types=PAYLOAD_TYPES, max_frames=8),
    "pairs": lambda: strategies.pair_sessions(MAX_FRAME),
    "raw": strategies.raw_sessions,
}


def _failure_text(exc: BaseException) -> str:
    """The failure and hypothesis' notes (the falsifying session), without the long traceback."""
    notes = "\n".join(dict.fromkeys(getattr(exc, "__notes__", [])))  # hypothesis may repeat a note
    last = traceback.format_exception_only(type(exc), exc)
    return "".join(last).strip() + ("\n" + notes if notes else "")


def fuzz(name: str, seconds: float, batch: int, work: Path) -> tuple[int, list[str]]:
    """Run property name for about seconds; returns (sessions tried, failure reports)."""
    strategy = PROPERTIES[name]()
    deadline = time.monotonic() + seconds
    tried, failures, brokers = 0, [], 0
    outcomes = collections.Counter()
    while time.monotonic() < deadline:
        brokers += 1
        target = FuzzTarget(work / f"{name}-{brokers}")
        try:
            while time.monotonic() < deadline:
                run_sessions(target, strategy, batch, database=None)
            target.finish()
        except Exception as exc:  # noqa: BLE001  (a broken property: report it, then a fresh broker)
            failures.append(_failure_text(exc))
            print(f"[{name}] FAILURE {len(failures)} after {tried + target.sessions} sessions:\n"
                  f"{failures[-1]}\n", flush=True)
        finally:
            target.close()
            tried += target.sessions
            outcomes.update(target.outcomes)
    print(f"[{name}] how sessions ended: {dict(outcomes.most_common())}", flush=True)
    return tried, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="total time, split between the properties")
    parser.add_argument("--property", choices=[*PROPERTIES, "all"], default="all")
    parser.add_argument("--batch", type=int, default=300, help="hypothesis examples per batch")
    args = parser.parse_args()
    names = list(PROPERTIES) if args.property == "all" else [args.property]
    total_failures = 0
    with tempfile.TemporaryDirectory(prefix="minipulsar-fuzz-") as work:
        for name in names:
            started = time.monotonic()
            tried, failures = fuzz(name, args.minutes * 60 / len(names), args.batch, Path(work))
            elapsed = time.monotonic() - started
            total_failures += len(failures)
            print(f"{name}: {tried} sessions in {elapsed:.0f} s ({tried / elapsed:.1f}/s), "
                  f"{len(failures)} failure(s)", flush=True)
    print(f"total: {total_failures} failure(s)")
    return 1 if total_failures else 0


if __name__ == "__main__":
    sys.exit(main())
