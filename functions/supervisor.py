"""One instance process, kept running: Pulsar's process runtime and its RuntimeSpawner.

The supervisor starts `python -m minipulsar.functions.instance` with this interpreter, in a
session of its own (a Ctrl-C on the broker's terminal does not reach it: the worker stops it),
writes its InstanceSpec on its stdin and keeps stdin open (end of file tells the instance its
worker is gone). The instance reports on a pipe of its own (minipulsar.functions.instance.stats):
`running` once subscribed, its stats while they change, a fatal `error` before it exits.

Its stdout and stderr (print() and logging alike) are appended to its log file,
<functions>/logs/<tenant>/<namespace>/<name>/<name>-<instance>.log (Pulsar's layout under
logs/functions/), through aiofiles; past LOG_ROTATE_BYTES the file is moved to `.1` and a new
one begun.

When the process exits without being asked to, the supervisor records why (the reported error,
else the exit status or signal), waits a back-off (RESTART_BACKOFF_MIN_SECONDS, doubling up to
RESTART_BACKOFF_MAX_SECONDS; back to the minimum after a run of RESTART_HEALTHY_SECONDS) and starts
it again, counting numRestarts. stop() sends SIGTERM (the instance flushes its outputs and closes
its consumers) and SIGKILL after STOP_TIMEOUT_SECONDS.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import aiofiles
import aiofiles.os

from minipulsar.functions.spec import InstanceSpec

log = logging.getLogger(__name__)

RESTART_BACKOFF_MIN_SECONDS = 1.0
RESTART_BACKOFF_MAX_SECONDS = 60.0
RESTART_HEALTHY_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 20.0
LOG_ROTATE_BYTES = 64 << 20
READ_CHUNK = 1 << 16
INSTANCE_MODULE = "minipulsar.functions.instance"


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"instance process killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"instance process killed by signal {-code}"
    return f"instance process exited with status {code}"


class InstanceSupervisor:
    """spec: what to run; log_path: where its output goes (None: this process's stdout, as
    localrun shows it)."""

    def __init__(self, spec: InstanceSpec, log_path: Path | None):
        self.spec = spec
        self.log_path = log_path
        self.running = False  # the process reported it is subscribed, and has not exited since
        self.error = ""  # why the last process ended, until a new one runs
        self.restarts = 0
        self.stats: dict = {}  # the latest report of the current process
        self.process: asyncio.subprocess.Process | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._fatal = ""

    @property
    def pid(self) -> int | None:
        """The current process's id (None between runs)."""
        return self.process.pid if self.process is not None and self.process.returncode is None else None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"instance {self.spec.fqfn}")

    async def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL) and the supervision; safe to call twice."""
        self._stopping.set()
        await self._terminate()
        if self._task is not None:
            await self._task

    async def _terminate(self) -> None:
        process = self.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            log.warning("%s instance %d did not stop within %.0f s: killed", self.spec.fqfn, self.spec.instance_id,
                        STOP_TIMEOUT_SECONDS)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()

    async def _supervise(self) -> None:
        backoff = RESTART_BACKOFF_MIN_SECONDS
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                code = await self._run_once()
            except Exception as exc:  # noqa: BLE001 - the interpreter could not be started at all; retried
                code, self._fatal = -1, f"cannot start the instance process: {exc}"
            self.running = False
            if self._stopping.is_set():
                return
            self.error = self._fatal or describe_exit(code)
            if time.monotonic() - started >= RESTART_HEALTHY_SECONDS:  # before the log: it says the wait
                backoff = RESTART_BACKOFF_MIN_SECONDS
            log.warning("%s instance %d: %s; restarting in %.0f s", self.spec.fqfn, self.spec.instance_id,
                        self.error.splitlines()[-1] if self.error else "", backoff)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), backoff)
            backoff = min(backoff * 2, RESTART_BACKOFF_MAX_SECONDS)
            if not self._stopping.is_set():
                self.restarts += 1

    async def _run_once(self) -> int:
        """Start the process, follow it until it exits; returns its exit status."""
        self._fatal, self.stats = "", {}
        await asyncio.get_running_loop().run_in_executor(None, _fresh_folder, Path(self.spec.work_dir))
        read_end, write_end = os.pipe()
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", INSTANCE_MODULE, "--report-fd", str(write_end),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                pass_fds=(write_end,), cwd=self.spec.work_dir, start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        if self._stopping.is_set():  # stop() came while the process was being created
            self.process.terminate()
        self.process.stdin.write(self.spec.to_line())
        with contextlib.suppress(ConnectionError):  # a process that died at once: its status says why
            await self.process.stdin.drain()
        readers = [asyncio.ensure_future(self._read_reports(read_end)), asyncio.ensure_future(self._copy_output())]
        code = await self.process.wait()
        await asyncio.gather(*readers, return_exceptions=True)
        self.process.stdin.close()
        return code

    async def _read_reports(self, fd: int) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 24)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb"))
        try:
            while line := await reader.readline():
                self._on_report(line)
        finally:
            transport.close()

    def _on_report(self, line: bytes) -> None:
        try:
            report = json.loads(line)
        except ValueError:
            return
        event = report.get("event")
        if event == "running":
            self.running, self.error = True, ""
        elif event == "stats":
            self.stats = report.get("stats") or {}
        elif event == "error":
            self._fatal = str(report.get("error") or "")

    async def _copy_output(self) -> None:
        if self.log_path is None:
            while chunk := await self.process.stdout.read(READ_CHUNK):
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
            return
        await aiofiles.os.makedirs(self.log_path.parent, exist_ok=True)
        stream = self.process.stdout
        log_file = await aiofiles.open(self.log_path, "ab")
        try:
            while chunk := await stream.read(READ_CHUNK):
                if await log_file.tell() > LOG_ROTATE_BYTES:
                    await log_file.close()
                    await aiofiles.os.replace(self.log_path, self.log_path.with_name(self.log_path.name + ".1"))
                    log_file = await aiofiles.open(self.log_path, "ab")
                await log_file.write(chunk)
                await log_file.flush()
        finally:
            await log_file.close()


def _fresh_folder(folder: Path) -> None:
    """An empty work folder for a new process (archives are unpacked there again)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
