"""`python -m minipulsar.functions.instance [--report-fd N]`: one function instance process,
Pulsar's process runtime (python_instance_main) for minipulsar.

The process reads its InstanceSpec (minipulsar.functions.spec) as the first line of stdin, then
keeps stdin open: end of file means the worker is gone (killed with the broker), and the instance
stops, so no orphan keeps consuming after a broker crash (Pulsar's instances kill themselves when
the worker's health checks stop). SIGTERM and SIGINT stop it cleanly: outputs flushed, consumers
closed, exit status 0. A stop that has not finished after STOP_GRACE_SECONDS ends the process.

Exit statuses: 0 stopped on request; 2 the user's code or the pulsar package cannot be loaded (the
error is reported); 1 any other failure (reported with its traceback); 4 process() outlived
timeoutMs. Logs go to stderr, which the worker captures; the function's logger also publishes to
logTopic when the function has one.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

from minipulsar.functions.errors import UserCodeError
from minipulsar.functions.instance.stats import InstanceStats, Reporter
from minipulsar.functions.spec import InstanceSpec

STOP_GRACE_SECONDS = 15.0
EXIT_USER_CODE, EXIT_FAILURE = 2, 1
NO_PULSAR = ("the pulsar-client package is not installed in the broker's Python environment; functions run on "
             "it and import it (pulsar.Function, pulsar.functions.context.Context): "
             "pip install 'minipulsar[functions]'")
LOG_FORMAT = "%(asctime)s.%(msecs)03d [%(threadName)s] %(levelname)s %(name)s - %(message)s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minipulsar.functions.instance")
    parser.add_argument("--report-fd", type=int, default=None, help="pipe for the worker's status reports")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, datefmt="%H:%M:%S", stream=sys.stderr)
    spec = InstanceSpec.from_line(_read_line(0))
    stats = InstanceStats()
    reporter = Reporter(args.report_fd, stats)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: _request_stop(stop))
    threading.Thread(target=_watch_parent, args=(stop,), name="parent-watch", daemon=True).start()
    try:
        return _run(spec, stats, reporter, stop)
    except UserCodeError as exc:
        logging.getLogger(spec.fqfn).error("%s", exc)
        reporter.error(str(exc))
        return EXIT_USER_CODE
    except Exception:  # noqa: BLE001 - anything else ends this instance, reported; the worker restarts it
        text = traceback.format_exc()
        logging.getLogger(spec.fqfn).error("instance failed: %s", text)
        reporter.error(text.strip().splitlines()[-1])
        return EXIT_FAILURE
    finally:
        reporter.stop()


def _run(spec: InstanceSpec, stats: InstanceStats, reporter: Reporter, stop: threading.Event) -> int:
    try:
        import pulsar  # noqa: F401 - checked here so the error names the missing package
    except ImportError:
        raise UserCodeError(NO_PULSAR) from None
    from minipulsar.functions.instance.loader import prepare
    from minipulsar.functions.instance.logs import function_logger
    from minipulsar.functions.instance.runner import InstanceRunner
    from minipulsar.functions.instance.session import connect

    prepare(Path(spec.package), Path(spec.work_dir))
    client = connect(spec)
    try:
        logger = function_logger(spec, client)
        runner = InstanceRunner(spec, client, stats, reporter, stop, logger)
        reporter.start()
        runner.run()
    finally:
        client.close()
    return 0


def _read_line(fd: int) -> bytes:
    """The first line on fd, read a byte at a time so nothing after it is taken from the pipe."""
    line = bytearray()
    while (byte := os.read(fd, 1)) and byte != b"\n":
        line += byte
    return bytes(line)


def _request_stop(stop: threading.Event) -> None:
    """Ask the loop to end; if it has not ended within the grace period, end the process."""
    if stop.is_set():
        return
    stop.set()
    timer = threading.Timer(STOP_GRACE_SECONDS, os._exit, args=(EXIT_FAILURE,))
    timer.daemon = True
    timer.start()


def _watch_parent(stop: threading.Event) -> None:
    """Read stdin to its end: the worker closed it, or died. The file descriptor is read directly:
    a thread blocked in the buffered sys.stdin would hold its lock while the interpreter exits."""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    _request_stop(stop)


if __name__ == "__main__":
    sys.exit(main())
