"""The example pipeline: per-key message counts in event-time windows, from one topic.

    python -m minipulsar.pipeline.example --service-url pulsar://127.0.0.1:6650 --topic events

One Structured Streaming query (checkpoint under ``<output-dir>/checkpoint``) counts messages per
``(window, key)`` and per window, output mode ``update``. Each micro-batch writes what changed:

* **counts** — the changed ``(window, key)`` counts, appended to Parquet under
  ``<output-dir>/counts`` with the ``batchId`` (the running result: the row with the highest
  ``batchId`` of a ``(window, key)`` is its current count).
* **totals** — the changed per-window totals, published to ``--output-topic`` (default
  ``<topic>-window-totals``) by the "pulsar" batch sink: key = window start (ISO-8601, UTC),
  value = JSON ``{"windowStart", "windowEnd", "count"}``, eventTime = the window end.

Both go through ``foreachBatch`` because Spark's Python streaming sinks refuse ``update`` mode.
A message's time is its ``eventTime``, else its ``publishTime``. Windows are tumbling,
``--window`` long; state is kept for ``--watermark`` after the newest time seen.

``--output-dir`` defaults to a new temporary directory, printed at start. The CLI prints a line
per micro-batch and runs until Ctrl-C (or ``--run-seconds``); it then lets the query catch up with
what the topic held when asked to stop (at most ``--drain-seconds``), stops it between
micro-batches and exits with status 0. ``--demo-rate N`` also publishes N messages a second with
keys ``key-0..key-4`` to the input topic, so the command shows something on an empty broker.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path

from minipulsar.pipeline.example_query import build_query
from minipulsar.pipeline.graceful_stop import StopSignal, stop_queries

log = logging.getLogger(__name__)

# Session settings of the example: a streaming-only application on one machine.
EXAMPLE_CONF = {
    "spark.ui.showConsoleProgress": "false",  # the progress bar fights with the per-batch lines
    # Streaming queries never use adaptive execution; leaving it on only earns a warning per query.
    "spark.sql.adaptive.enabled": "false",
    # The state is a few windows times a few keys: one state store task per micro-batch costs less
    # than two (a checkpoint keeps the number it was started with).
    "spark.sql.shuffle.partitions": "1",
}
# Loggers whose warnings are facts of every run of this example, not news (at ERROR they still
# report failures). Spark's "falling behind" warning (ProcessingTimeExecutor) stays on.
EXAMPLE_QUIET_LOGGERS = {
    # "Disabling AQE since AQE is not supported in stateful workloads", once per query, always.
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution": "ERROR",
    # State snapshots are uploaded by a maintenance task every minute, so a query at one
    # micro-batch a second always "lags" by tens of versions: a diagnostic for cluster operators.
    "org.apache.spark.sql.execution.streaming.state.StateStoreCoordinator": "ERROR",
    # "Failed to cancel job group ... Cannot find active jobs": stop() cancels the query's jobs
    # even when, as here, it waited for them to finish.
    "org.apache.spark.scheduler.DAGScheduler": "ERROR",
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minipulsar.pipeline.example",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--service-url", default="pulsar://127.0.0.1:6650")
    parser.add_argument("--topic", required=True, help="input topic")
    parser.add_argument("--output-topic", help="per-window totals go here (default <topic>-window-totals)")
    parser.add_argument("--output-dir", help="counts (Parquet) and the checkpoint go here; reuse it to resume "
                                             "(default: a new temporary directory)")
    parser.add_argument("--window", default="10 seconds")
    parser.add_argument("--watermark", default="30 seconds")
    parser.add_argument("--trigger", default="1 second", help="micro-batch interval")
    parser.add_argument("--starting-offsets", default="earliest", help="for a new checkpoint: earliest | latest")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--log-level", default="WARN", help="Spark's log level (ERROR, WARN, INFO, ...)")
    parser.add_argument("--run-seconds", type=float, default=0, help="stop after this long (0 = until Ctrl-C)")
    parser.add_argument("--drain-seconds", type=float, default=30,
                        help="when stopping, wait at most this long for the query to catch up")
    parser.add_argument("--demo-rate", type=float, default=0, help="also publish N demo messages a second")
    args = parser.parse_args(argv)
    if not args.output_topic:
        args.output_topic = f"{args.topic}-window-totals"
    return args


def output_dir(path: str | None) -> Path:
    """The directory the user named (created if missing), else a new temporary one."""
    if path is None:
        return Path(tempfile.mkdtemp(prefix="minipulsar-example-"))
    out = Path(path).resolve()
    out.mkdir(parents=True, exist_ok=True)
    return out


def report_progress(query, seen: int) -> int:
    """Print one line per micro-batch that read messages and was not printed yet; the last
    batch id printed."""
    for p in query.recentProgress:
        if p["batchId"] > seen:
            seen = p["batchId"]
            if p["numInputRows"]:
                print(f"batch {p['batchId']}: {p['numInputRows']} messages in "
                      f"{p['durationMs'].get('triggerExecution', 0)} ms", flush=True)
    return seen


def wait_for_first_batch(query, requested: threading.Event, timeout: float = 300) -> None:
    """Wait until query has run a micro-batch (or ended, or a stop is requested, or timeout)."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.lastProgress is None and not requested.is_set() and time.monotonic() < deadline:
        requested.wait(0.2)  # the poll interval of this deadline-bounded wait; a stop request ends it


def run_until_stopped(query, requested: threading.Event, run_seconds: float) -> int:
    """Print progress until a stop is requested, run_seconds pass, or the query ends; the last
    batch id printed."""
    deadline = time.monotonic() + run_seconds if run_seconds else None
    seen = -1
    while query.isActive and not requested.is_set() and (deadline is None or time.monotonic() < deadline):
        seen = report_progress(query, seen)
        requested.wait(0.5)  # progress is printed twice a second; a stop request ends the wait
    return report_progress(query, seen)


def caught_up(query, target: dict) -> bool:
    """True once query's last micro-batch ended at or after target's position in every partition."""
    from minipulsar.pipeline.offsets import offsets_from_json

    progress = query.lastProgress
    if not progress or not progress["sources"]:
        return False
    end = progress["sources"][0]["endOffset"]
    reached = offsets_from_json(json.loads(end) if isinstance(end, str) else end or {})
    return all(p in reached and reached[p] >= position for p, position in target.items()
               if position.entry_id >= 0)


def drain(query, args, timeout: float) -> None:
    """Wait (at most timeout seconds) until query has read what the topic holds now."""
    from minipulsar.pipeline import broker_queries as q

    async def lasts(c):
        return await q.last_positions(c, await q.topic_partitions(c, [args.topic]))

    try:
        target = q.run_with_client(args.service_url, 10, lasts)
    except Exception as exc:  # noqa: BLE001 - the broker is gone: stop without catching up
        print(f"cannot ask {args.service_url} for the last message ids ({exc}); stopping now", flush=True)
        return
    deadline = time.monotonic() + timeout
    while query.isActive and not caught_up(query, target):
        if time.monotonic() >= deadline:
            print(f"stopping before the query caught up ({timeout:.0f} s)", flush=True)
            return
        time.sleep(0.2)  # the poll interval of this deadline-bounded wait for the last micro-batch


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from minipulsar.pipeline.demo_producer import DemoProducer
    from minipulsar.pipeline.session import local_session, stop_session

    output = output_dir(args.output_dir)
    spark = local_session("minipulsar-example", args.master, log_level=args.log_level,
                          quiet_loggers=EXAMPLE_QUIET_LOGGERS, **EXAMPLE_CONF)
    signals = StopSignal().install()  # after the session: PySpark installs its own SIGINT handler
    stopping = threading.Event()
    query = build_query(spark, args, output, stopping)
    print(f"reading {args.topic} from {args.service_url}; output in {output} (Parquet counts in counts/), "
          f"window totals to {args.output_topic}; Ctrl-C stops", flush=True)
    demo = None
    try:
        if args.demo_rate > 0:
            # Publishing starts once the first micro-batch (Spark's warm-up, seconds long) is over,
            # so the demo does not begin with a backlog to catch up on.
            wait_for_first_batch(query, signals.requested)
            demo = DemoProducer(args.service_url, args.topic, args.demo_rate).start()
        seen = run_until_stopped(query, signals.requested, args.run_seconds)
        if demo is not None:
            print(f"demo producer: {demo.stop()} messages published", flush=True)
        if query.isActive:
            drain(query, args, args.drain_seconds)
        stop_queries([query], stopping)
        report_progress(query, seen)
    except KeyboardInterrupt:  # a second Ctrl-C: stop now, whatever is running
        print("interrupted", file=sys.stderr, flush=True)
        return 130
    finally:
        stop_session(spark)
        signals.restore()
    if query.exception() is not None:
        log.error("the query failed: %s", query.exception())
        return 1
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
