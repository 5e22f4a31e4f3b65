"""Client side of faultfs: mount one in a child process and drive it over its control socket.

    from faultfs.control import FaultFS     # with tools/ on sys.path

    with FaultFS() as ffs:                  # mounted on a fresh temp dir, unmounted at exit
        path = ffs.mountpoint / "data"
        ...
        ffs.trap("fsync", "data/ledgers/*.seg", nth=3, when="before")
        ffs.wait_trap(timeout=10)           # the 3rd fsync of a segment was not applied; FS frozen
        proc.kill()                         # SIGKILL the program under test
        ffs.power_loss()                    # then lose everything unsynced; blocked ops get EIO
        proc.wait()

Also a command line: ``python tools/faultfs/control.py SOCKET COMMAND [ARGS...]`` sends one
command (README.md lists them) and prints the JSON reply.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


class FaultFSError(RuntimeError):
    """The file system refused a command, or could not be mounted or unmounted."""


def fuse_unavailable_reason() -> str | None:
    """Why faultfs cannot be mounted here (None when it can): /dev/fuse or fusermount3 missing."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (no FUSE in this kernel or container)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is missing (Debian package fuse3)"
    return None


class FaultFS:
    """A faultfs mounted in a child process. ``mountpoint``: a Path (a temp dir when not given);
    ``seed``: the torn-write seed; ``start_timeout``: seconds to wait for the mount."""

    def __init__(self, mountpoint: str | os.PathLike | None = None, *, seed: int = 0,
                 start_timeout: float = 15.0, debug: bool = False):
        self._own_dir = None
        self._requested = mountpoint
        self.seed = seed
        self.start_timeout = start_timeout
        self.debug = debug
        self.proc: subprocess.Popen | None = None
        self.mountpoint: Path | None = None
        self.socket_path: str | None = None
        self.log_path: Path | None = None
        self._sock: socket.socket | None = None
        self._file = None
        self._lock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------------------
    def __enter__(self) -> "FaultFS":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        reason = fuse_unavailable_reason()
        if reason:
            raise FaultFSError(reason)
        self._own_dir = Path(tempfile.mkdtemp(prefix="faultfs-"))
        self.mountpoint = Path(self._requested) if self._requested else self._own_dir / "mnt"
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        # A Unix socket path must stay under ~108 bytes: keep it in the (short) temp dir.
        self.socket_path = str(self._own_dir / "control.sock")
        self.log_path = self._own_dir / "faultfs.log"
        cmd = [sys.executable, str(HERE), str(self.mountpoint), "--control", self.socket_path,
               "--seed", str(self.seed), "--log", str(self.log_path)]
        if self.debug:
            cmd.append("--debug")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self._own_dir / "faultfs.stderr", "wb"))
        deadline = time.monotonic() + self.start_timeout
        try:
            while True:
                if self.proc.poll() is not None:
                    raise FaultFSError(f"faultfs exited with {self.proc.returncode} before mounting:\n"
                                       + self.log_tail())
                if os.path.exists(self.socket_path) and os.path.ismount(self.mountpoint):
                    try:
                        if self.command("ping").get("mounted"):
                            return
                    except OSError:
                        self._disconnect()
                if time.monotonic() > deadline:
                    raise FaultFSError(f"faultfs not mounted within {self.start_timeout}s:\n" + self.log_tail())
                time.sleep(0.02)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release blocked operations, unmount (lazily if busy), stop the child, remove the temp dir."""
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                try:
                    self.command("shutdown")
                except (OSError, FaultFSError, ValueError):
                    pass
            self._disconnect()
            if self.mountpoint is not None and os.path.ismount(self.mountpoint):
                r = subprocess.run(["fusermount3", "-u", str(self.mountpoint)], capture_output=True)
                if r.returncode != 0:  # busy (a process still has a file open): detach it
                    subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True)
        finally:
            self.proc = None
            if self._own_dir is not None:
                shutil.rmtree(self._own_dir, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        out = []
        for name in ("faultfs.stderr", "faultfs.log"):
            try:
                text = (self._own_dir / name).read_text(errors="replace")
            except (OSError, TypeError):
                continue
            out.extend(text.splitlines()[-lines:])
        return "\n".join(out)

    # -- the control socket -------------------------------------------------------------------------
    def _disconnect(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self._sock = self._file = None

    def command(self, line: str, timeout: float = 60.0) -> dict:
        """Send one command line; the reply as a dict. Raises FaultFSError when it failed."""
        with self._lock:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._sock.connect(self.socket_path)
                self._file = self._sock.makefile("rb")
            self._sock.settimeout(timeout)
            self._sock.sendall(line.encode() + b"\n")
            raw = self._file.readline()
        if not raw:
            self._disconnect()
            raise FaultFSError(f"faultfs closed the control socket on {line!r}")
        reply = json.loads(raw)
        if not reply.pop("ok"):
            raise FaultFSError(f"{line!r}: {reply.get('error')}")
        return reply

    def power_loss(self, torn: bool = False, seed: int | None = None) -> dict:
        """The durable state becomes the current one; every blocked operation fails with EIO.
        SIGKILL the processes using the mount first. Returns lost_paths, dropped_bytes, torn."""
        cmd = "power-loss" + (" --torn" if torn else "") + (f" --seed {seed}" if seed is not None else "")
        return self.command(cmd)

    def trap(self, op: str, glob: str = "*", nth: int = 1, when: str = "before") -> int:
        """Freeze the FS at the nth ``op`` on a path matching ``glob`` (relative to the mount;
        ``*`` crosses ``/``). when="before": the op is not applied; "after": it is. Either way it,
        and every later mutating op, blocks until ``power_loss`` (EIO) or ``resume``."""
        if when not in ("before", "after"):
            raise ValueError("when is 'before' or 'after'")
        return self.command(f"trap {op} {_quote(glob)} --nth {nth} --{when}")["id"]

    def wait_trap(self, timeout: float = 30.0) -> list[dict]:
        """Block until a trap has fired (FaultFSError after ``timeout`` s); the fired traps."""
        return self.command(f"wait-trap --timeout {timeout}", timeout=timeout + 10)["fired"]

    def fail(self, op: str, glob: str, err: str | int = "EIO", count: int | None = None) -> int:
        """Make matching operations fail with ``err`` (name or number), ``count`` times (None: always)."""
        return self.command(f"fail {op} {_quote(glob)} {err}" + (f" --count {count}" if count else ""))["id"]

    def clear(self) -> None:
        """Remove every trap and fail rule."""
        self.command("clear")

    def resume(self) -> None:
        """Unfreeze without a power loss: blocked operations go on."""
        self.command("resume")

    def stats(self) -> dict:
        return self.command("stats")

    def tree(self, durable: bool = False) -> dict[str, int | None]:
        """{relative path: size (None for a directory, whose path ends in '/')} of either state."""
        items = self.command("tree" + (" --durable" if durable else ""))["tree"]
        return {item["path"]: item.get("size") for item in items}


def _quote(text: str) -> str:
    import shlex
    return shlex.quote(text)


def _cli(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        return 2
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(argv[0])
    import shlex
    sock.sendall((" ".join(shlex.quote(a) for a in argv[1:]) + "\n").encode())
    reply = sock.makefile("rb").readline()
    print(reply.decode().strip())
    return 0 if json.loads(reply).get("ok") else 1


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
