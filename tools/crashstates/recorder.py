"""Record a workload's file-system operations with strace and turn them into model ops and facts.

:func:`record` runs the workload's setup phase untraced (its result is the durable state the run
starts from), then its run phase as a child of ``strace``, and converts the trace with
:class:`TraceConverter`: every call on a path under the workload's root becomes an
:class:`~tools.crashstates.fsmodel.Op`; every ``ACK``/``INTENT`` line the workload writes to its
acknowledgement file (outside the root) becomes a :class:`Fact` placed between the ops around it.
Everything else (the interpreter's own files, sockets, pipes, /proc) is ignored. At the end the
model's tree must equal the real one on disk: a call the recorder does not follow would show there.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

from .fsmodel import DIR, FILE, FS, ModelError, OpLog
from .strace_parse import Atom, StraceParser, Syscall

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Every call that can change a file's bytes or size or a directory's entries, make them durable,
# or move/copy/close the file descriptors they go through. "?" = not an error on an architecture
# without that call (aarch64 has no open/creat/rename/mkdir/...).
TRACED = (
    "?open", "?openat", "?openat2", "?creat", "?close", "?dup", "?dup2", "?dup3", "?fcntl",
    "?write", "?pwrite64", "?writev", "?pwritev", "?pwritev2", "?read", "?readv", "?lseek",
    "?ftruncate", "?truncate", "?fallocate", "?fsync", "?fdatasync", "?sync_file_range", "?sync", "?syncfs",
    "?rename", "?renameat", "?renameat2", "?unlink", "?unlinkat", "?mkdir", "?mkdirat", "?rmdir",
    "?link", "?linkat", "?symlink", "?symlinkat", "?clone", "?clone3", "?fork", "?vfork",
    "?mmap", "?sendfile", "?copy_file_range", "?splice",
)
STRING_LIMIT = 1 << 22  # -s: longer writes are refused (TruncatedString), never silently cut


class RecordError(RuntimeError):
    """The workload failed, strace could not run, or the trace cannot be modelled."""


@dataclass
class Fact:
    """One line the workload wrote to its acknowledgement file: ``ACK <id> <json>`` once an
    operation was acknowledged to its caller, ``INTENT <id> <json>`` before it was started.
    ``pos``: how many ops had completed when it was written (-1 for the setup phase: before all)."""

    tag: str
    id: int
    kind: str
    f: dict
    pos: int

    def __str__(self) -> str:
        return f"{self.tag} #{self.id} {self.kind} {json.dumps(self.f, sort_keys=True)[:160]}"


def parse_fact_line(line: str, pos: int) -> Fact | None:
    parts = line.split(" ", 2)
    if len(parts) < 3 or parts[0] not in ("ACK", "INTENT"):
        return None
    body = json.loads(parts[2])
    return Fact(parts[0], int(parts[1]), body.pop("kind"), body, pos)


@dataclass
class _OFD:
    """An open file description: shared by dup'ed descriptors (offset included)."""

    ino: int
    offset: int = 0
    append: bool = False
    dsync: bool = False


@dataclass
class Recording:
    """What a run left: the durable starting state and what happened after it."""

    workload: str
    root: str
    log: OpLog
    facts: list[Fact]
    syscalls: int = 0
    trace_lines: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ops(self):
        return self.log.ops


class TraceConverter:
    """Feeds completed syscalls into an :class:`OpLog` (paths under ``root``) and collects facts
    (writes to ``ack_path``)."""

    def __init__(self, root: str, ack_path: str, initial: FS | None = None, cwd: str | None = None):
        self.root = os.path.normpath(root)
        self.ack_path = os.path.normpath(ack_path)
        self.cwd = cwd or os.getcwd()
        self.log = OpLog(initial)
        self.facts: list[Fact] = []
        self.fds: dict[int, _OFD] = {}
        self.forked: set[int] = set()
        self.notes: list[str] = []
        self._ack_buf = b""
        self.count = 0

    # -- paths -------------------------------------------------------------------------
    def rel(self, path: str | None) -> str | None:
        """``path`` relative to the root ('' for the root itself), None when outside it."""
        if path is None:
            return None
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        path = os.path.normpath(path)
        if path == self.root:
            return ""
        if path.startswith(self.root + os.sep):
            return path[len(self.root) + 1:]
        return None

    def _abs(self, dirfd: Atom | None, path: bytes) -> str:
        p = path.decode("utf-8", "surrogateescape")
        if os.path.isabs(p):
            return os.path.normpath(p)
        if dirfd is None or dirfd.text == "AT_FDCWD":
            base = dirfd.path if dirfd is not None and dirfd.path else self.cwd
        else:
            base = dirfd.path
            if base is None:
                raise ModelError(f"relative path {p!r} against a directory fd without a -y path")
            if base.endswith(" (deleted)"):
                base = base[: -len(" (deleted)")]
        return os.path.normpath(os.path.join(base, p))

    def _ofd(self, atom: Atom, sc: Syscall) -> _OFD | None:
        """The open file of fd argument ``atom`` when it is one of the root's, else None."""
        try:
            fd = atom.int()
        except ValueError:
            return None
        ofd = self.fds.get(fd)
        inside = self.rel(atom.path) is not None if atom.path is not None else None
        if ofd is None:
            if inside:
                raise ModelError(f"line {sc.lineno}: {sc.name} on fd {fd} ({atom.path}) that was never seen opened")
            return None
        if inside is False:  # the number was reused for something we did not see opened
            del self.fds[fd]
            return None
        return ofd

    def _desc(self, sc: Syscall, what: str) -> str:
        return f"{sc.name} {what} [tid {sc.tid}, trace line {sc.lineno}]"

    # -- acks ----------------------------------------------------------------------------
    def _ack_write(self, data: bytes) -> None:
        self._ack_buf += data
        while b"\n" in self._ack_buf:
            line, self._ack_buf = self._ack_buf.split(b"\n", 1)
            fact = parse_fact_line(line.decode(), len(self.log.ops))
            if fact is not None:
                self.facts.append(fact)

    # -- the calls -------------------------------------------------------------------------
    def feed(self, sc: Syscall) -> None:
        self.count += 1
        handler = getattr(self, "_sc_" + sc.name, None)
        if handler is None:
            return
        if sc.ret is None:  # strace could not tell the result (thread killed): refuse if it is ours
            if any(self._touches(a) for a in sc.args):
                raise ModelError(f"line {sc.lineno}: {sc.name} on the data dir without a result")
            return
        if sc.tid in self.forked and any(self._touches(a) for a in sc.args):
            raise ModelError(f"line {sc.lineno}: a forked child process writes under the root; "
                             "per-process descriptor tables are not modelled")
        handler(sc)

    def _touches(self, a) -> bool:
        if isinstance(a, Atom):
            return self.rel(a.path) is not None or (a.path is None and a.text.isdigit() and int(a.text) in self.fds)
        if isinstance(a, bytes):
            try:
                return self.rel(self._abs(None, a)) is not None
            except ModelError:
                return False
        return False

    def _open(self, sc: Syscall, dirfd: Atom | None, path: bytes, flags: set[str]) -> None:
        if not sc.ok:
            return
        fd = sc.ret
        self.fds.pop(fd, None)
        target = sc.ret_path if sc.ret_path and sc.ret_path.startswith("/") else self._abs(dirfd, path)
        rel = self.rel(target)
        if rel is None:
            return
        if "O_TMPFILE" in flags or "__O_TMPFILE" in flags:
            raise ModelError(f"line {sc.lineno}: O_TMPFILE is not modelled")
        log = self.log
        ino = log.lookup(rel)
        if ino is None:
            if "O_CREAT" not in flags:
                raise ModelError(f"line {sc.lineno}: opened {rel!r}, which the model does not have")
            ino = log.create(rel, desc=self._desc(sc, f"O_CREAT {rel}"))
        elif "O_TRUNC" in flags and log.kind(ino) == FILE and log.size(ino) > 0 and "O_RDONLY" not in flags:
            log.truncate(ino, 0, desc=self._desc(sc, f"O_TRUNC {rel}"))
        self.fds[fd] = _OFD(ino, 0, "O_APPEND" in flags, bool(flags & {"O_DSYNC", "O_SYNC", "__O_SYNC"}))

    def _sc_open(self, sc):
        self._open(sc, None, sc.args[0], sc.args[1].flags())

    def _sc_creat(self, sc):
        self._open(sc, None, sc.args[0], {"O_CREAT", "O_WRONLY", "O_TRUNC"})

    def _sc_openat(self, sc):
        self._open(sc, sc.args[0], sc.args[1], sc.args[2].flags())

    def _sc_openat2(self, sc):
        how = sc.args[2] if isinstance(sc.args[2], dict) else {}
        flags = how.get("flags")
        self._open(sc, sc.args[0], sc.args[1], flags.flags() if isinstance(flags, Atom) else set())

    def _sc_close(self, sc):
        try:
            self.fds.pop(sc.args[0].int(), None)
        except ValueError:
            pass

    def _dup_to(self, sc, old: Atom) -> None:
        if not sc.ok:
            return
        ofd = self._ofd(old, sc)
        self.fds.pop(sc.ret, None)
        if ofd is not None:
            self.fds[sc.ret] = ofd

    def _sc_dup(self, sc):
        self._dup_to(sc, sc.args[0])

    _sc_dup2 = _sc_dup3 = _sc_dup

    def _sc_fcntl(self, sc):
        if len(sc.args) >= 2 and sc.args[1].text in ("F_DUPFD", "F_DUPFD_CLOEXEC"):
            self._dup_to(sc, sc.args[0])

    def _write(self, sc, fd: Atom, data: bytes, offset: int | None, dsync_flag: bool = False, append_flag=False):
        if fd.path is not None and os.path.normpath(fd.path) == self.ack_path:
            if sc.ok:
                self._ack_write(data[: sc.ret])
            return
        ofd = self._ofd(fd, sc)
        if ofd is None or not sc.ok:
            return
        n = sc.ret
        data = data[:n]
        positional = offset is not None and offset >= 0
        if ofd.append or append_flag:
            at = self.log.size(ofd.ino)
        else:
            at = offset if positional else ofd.offset
        durable = ofd.dsync or dsync_flag
        self.log.write(ofd.ino, at, data, durable,
                       desc=self._desc(sc, f"{self.log.path_of(ofd.ino)} @{at} +{n}{' DSYNC' if durable else ''}"))
        if not positional:
            ofd.offset = at + n

    @staticmethod
    def _iov(arg) -> bytes:
        if not isinstance(arg, list):
            raise ModelError(f"unexpected iovec {arg!r}")
        out = []
        for item in arg:
            if not isinstance(item, dict) or not isinstance(item.get("iov_base"), bytes):
                raise ModelError("strace abbreviated an iovec array; raise -s")
            out.append(item["iov_base"])
        return b"".join(out)

    def _sc_write(self, sc):
        self._write(sc, sc.args[0], sc.args[1], None)

    def _sc_pwrite64(self, sc):
        self._write(sc, sc.args[0], sc.args[1], sc.args[3].int())

    def _sc_writev(self, sc):
        self._write(sc, sc.args[0], self._iov(sc.args[1]), None)

    def _sc_pwritev(self, sc):
        self._write(sc, sc.args[0], self._iov(sc.args[1]), sc.args[3].int())

    def _sc_pwritev2(self, sc):
        flags = sc.args[4].flags() if len(sc.args) > 4 else set()
        self._write(sc, sc.args[0], self._iov(sc.args[1]), sc.args[3].int(),
                    dsync_flag=bool(flags & {"RWF_DSYNC", "RWF_SYNC"}), append_flag="RWF_APPEND" in flags)

    def _sc_read(self, sc):
        ofd = self._ofd(sc.args[0], sc)
        if ofd is not None and sc.ok:
            ofd.offset += sc.ret

    _sc_readv = _sc_read

    def _sc_lseek(self, sc):
        ofd = self._ofd(sc.args[0], sc)
        if ofd is not None and sc.ok:
            ofd.offset = sc.ret

    def _sc_ftruncate(self, sc):
        ofd = self._ofd(sc.args[0], sc)
        if ofd is not None and sc.ok:
            size = sc.args[1].int()
            self.log.truncate(ofd.ino, size, desc=self._desc(sc, f"{self.log.path_of(ofd.ino)} to {size}"))

    def _sc_truncate(self, sc):
        rel = self.rel(self._abs(None, sc.args[0]))
        if rel is not None and sc.ok:
            ino = self.log.lookup(rel)
            size = sc.args[1].int()
            self.log.truncate(ino, size, desc=self._desc(sc, f"{rel} to {size}"))

    def _sc_fallocate(self, sc):
        ofd = self._ofd(sc.args[0], sc)
        if ofd is None or not sc.ok:
            return
        mode, off, length = sc.args[1].flags(), sc.args[2].int(), sc.args[3].int()
        size = self.log.size(ofd.ino)
        desc = self._desc(sc, f"{self.log.path_of(ofd.ino)} {'|'.join(sorted(mode))} @{off} +{length}")
        if mode & {"FALLOC_FL_COLLAPSE_RANGE", "FALLOC_FL_INSERT_RANGE"}:
            raise ModelError(f"line {sc.lineno}: fallocate {mode} is not modelled")
        if mode & {"FALLOC_FL_PUNCH_HOLE", "FALLOC_FL_ZERO_RANGE"}:
            end = min(off + length, size) if "FALLOC_FL_KEEP_SIZE" in mode else off + length
            if end > off:
                self.log.write(ofd.ino, off, bytes(end - off), desc=desc)
        elif "FALLOC_FL_KEEP_SIZE" not in mode and off + length > size:
            self.log.truncate(ofd.ino, off + length, desc=desc)

    def _sc_fsync(self, sc):
        ofd = self._ofd(sc.args[0], sc)
        if ofd is not None and sc.ok:
            self.log.fsync(ofd.ino, desc=self._desc(sc, self.log.path_of(ofd.ino) + ("/" if self.log.kind(ofd.ino) == DIR else "")))

    _sc_fdatasync = _sc_fsync

    def _sc_sync_file_range(self, sc):
        if self._ofd(sc.args[0], sc) is not None and "sync_file_range" not in " ".join(self.notes):
            self.notes.append("sync_file_range seen: modelled as making nothing durable (it syncs no metadata)")

    def _sc_sync(self, sc):
        if sc.ok:
            self.log.sync_all(desc=self._desc(sc, ""))

    def _sc_syncfs(self, sc):
        if sc.ok:
            self.log.sync_all(desc=self._desc(sc, ""))

    def _two_paths(self, sc, d1, p1, d2, p2):
        r1, r2 = self.rel(self._abs(d1, p1)), self.rel(self._abs(d2, p2))
        if (r1 is None) != (r2 is None):
            raise ModelError(f"line {sc.lineno}: {sc.name} across the root's boundary is not modelled")
        return r1, r2

    def _rename(self, sc, d1, p1, d2, p2, flags=frozenset()):
        if not sc.ok:
            return
        r1, r2 = self._two_paths(sc, d1, p1, d2, p2)
        if r1 is None:
            return
        if "RENAME_EXCHANGE" in flags or "RENAME_WHITEOUT" in flags:
            raise ModelError(f"line {sc.lineno}: renameat2 {flags} is not modelled")
        self.log.rename(r1, r2, desc=self._desc(sc, f"{r1} -> {r2}"))

    def _sc_rename(self, sc):
        self._rename(sc, None, sc.args[0], None, sc.args[1])

    def _sc_renameat(self, sc):
        self._rename(sc, sc.args[0], sc.args[1], sc.args[2], sc.args[3])

    def _sc_renameat2(self, sc):
        self._rename(sc, sc.args[0], sc.args[1], sc.args[2], sc.args[3], sc.args[4].flags())

    def _unlink(self, sc, dirfd, path):
        if not sc.ok:
            return
        rel = self.rel(self._abs(dirfd, path))
        if rel is not None:
            self.log.unlink(rel, desc=self._desc(sc, rel))

    def _sc_unlink(self, sc):
        self._unlink(sc, None, sc.args[0])

    _sc_rmdir = _sc_unlink

    def _sc_unlinkat(self, sc):
        self._unlink(sc, sc.args[0], sc.args[1])

    def _mkdir(self, sc, dirfd, path):
        if not sc.ok:
            return
        rel = self.rel(self._abs(dirfd, path))
        if rel is not None:
            self.log.mkdir(rel, desc=self._desc(sc, rel))

    def _sc_mkdir(self, sc):
        self._mkdir(sc, None, sc.args[0])

    def _sc_mkdirat(self, sc):
        self._mkdir(sc, sc.args[0], sc.args[1])

    def _link(self, sc, d1, p1, d2, p2):
        if not sc.ok:
            return
        r1, r2 = self._two_paths(sc, d1, p1, d2, p2)
        if r1 is not None:
            self.log.link(r1, r2, desc=self._desc(sc, f"{r1} -> {r2}"))

    def _sc_link(self, sc):
        self._link(sc, None, sc.args[0], None, sc.args[1])

    def _sc_linkat(self, sc):
        self._link(sc, sc.args[0], sc.args[1], sc.args[2], sc.args[3])

    def _sc_symlink(self, sc):
        if sc.ok and self.rel(self._abs(None, sc.args[1])) is not None:
            raise ModelError(f"line {sc.lineno}: symlinks are not modelled")

    def _sc_symlinkat(self, sc):
        if sc.ok and self.rel(self._abs(sc.args[1], sc.args[2])) is not None:
            raise ModelError(f"line {sc.lineno}: symlinks are not modelled")

    def _sc_clone(self, sc):
        flags = ""
        for a in sc.args:
            if isinstance(a, dict) and isinstance(a.get("flags"), Atom):
                flags = a["flags"].text
            elif isinstance(a, Atom) and a.text.startswith("flags="):
                flags = a.text
        if sc.ok and sc.ret > 0 and "CLONE_THREAD" not in flags:
            self.forked.add(sc.ret)

    _sc_clone3 = _sc_clone

    def _sc_fork(self, sc):
        if sc.ok and sc.ret > 0:
            self.forked.add(sc.ret)

    _sc_vfork = _sc_fork

    def _sc_mmap(self, sc):
        if len(sc.args) >= 5 and self._ofd(sc.args[4], sc) is not None:
            if "MAP_SHARED" in sc.args[3].flags() and "PROT_WRITE" in sc.args[2].flags():
                raise ModelError(f"line {sc.lineno}: writes through a shared mapping are not modelled")

    def _sc_sendfile(self, sc):
        if self._ofd(sc.args[0], sc) is not None:
            raise ModelError(f"line {sc.lineno}: sendfile into a data file is not modelled")

    def _sc_copy_file_range(self, sc):
        if self._ofd(sc.args[2], sc) is not None:
            raise ModelError(f"line {sc.lineno}: copy_file_range into a data file is not modelled")

    def _sc_splice(self, sc):
        if len(sc.args) > 2 and self._ofd(sc.args[2], sc) is not None:
            raise ModelError(f"line {sc.lineno}: splice into a data file is not modelled")


def convert(lines, root: str, ack_path: str, initial: FS | None = None, cwd: str | None = None) -> TraceConverter:
    """Convert strace output lines; returns the converter (``.log`` ops, ``.facts``)."""
    conv = TraceConverter(root, ack_path, initial, cwd)
    root_hex = "".join(f"\\x{b:02x}" for b in conv.root.encode())
    ack_hex = "".join(f"\\x{b:02x}" for b in conv.ack_path.encode())

    def keep(text: str) -> bool:
        # Cheap pre-filter: a call matters if it names the root or the ack file (-y paths and
        # string arguments are all \xNN with -xx), or uses/moves/creates descriptors.
        return (root_hex in text or ack_hex in text or
                text.startswith(("close(", "dup", "fcntl(", "clone", "fork(", "vfork(", "read(", "readv(",
                                 "lseek(", "sync(", "syncfs(")) or "\\x" not in text)

    parser = StraceParser(keep)
    for line in lines:
        sc = parser.feed(line)
        if sc is not None:
            conv.feed(sc)
    return conv


def strace_available() -> str | None:
    """Path of strace, or None."""
    return shutil.which("strace")


def _runner_cmd(phase: str, workload: str, root: str, ack_path: str) -> list[str]:
    return [sys.executable, "-m", "tools.crashstates.runner", phase, workload, root, ack_path]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def record(workload: str, workdir: str, timeout: float = 60.0) -> Recording:
    """Set up and run ``workload`` in ``workdir`` (created; must be empty), return the recording.

    Layout: ``workdir/root`` is the workload's root (its data dir is ``root/data``), the
    acknowledgement files and the trace live next to it, outside the root.
    """
    strace = strace_available()
    if strace is None:
        raise RecordError("strace is not installed (apt-get install strace)")
    workdir = os.path.realpath(workdir)
    root = os.path.join(workdir, "root")
    os.makedirs(root)
    setup_acks = os.path.join(workdir, "acks-setup.log")
    run_acks = os.path.join(workdir, "acks.log")
    trace = os.path.join(workdir, "trace.txt")
    env = _env()
    t0 = time.monotonic()
    proc = subprocess.run(_runner_cmd("setup", workload, root, setup_acks), cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RecordError(f"setup of {workload} failed:\n{proc.stderr[-4000:]}")
    initial = FS.from_disk(root)
    setup_facts = []
    if os.path.exists(setup_acks):
        with open(setup_acks) as f:
            setup_facts = [fact for fact in (parse_fact_line(line.rstrip("\n"), -1) for line in f) if fact]
    base = [strace, "-f", "-qq", "-y", "-xx", "-s", str(STRING_LIMIT), "-e", "signal=none",
            "-e", "raw=read,readv", "-e", "trace=" + ",".join(TRACED), "-o", trace]
    cmd = _runner_cmd("run", workload, root, run_acks)
    proc = subprocess.run(base[:1] + ["--seccomp-bpf"] + base[1:] + cmd, cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 and "seccomp" in proc.stderr:  # an strace or kernel without it
        shutil.rmtree(root)
        os.makedirs(root)
        raise RecordError("strace --seccomp-bpf unsupported here:\n" + proc.stderr[-2000:])
    if proc.returncode != 0:
        raise RecordError(f"run of {workload} under strace failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    with open(trace, encoding="latin-1") as f:
        conv = convert(f, root, run_acks, initial, cwd=workdir)
    lines = conv.count
    # The model must have followed every change: its tree is the real one.
    real = FS.from_disk(root)
    if real.tree() != conv.log.live.tree():
        mine, theirs = conv.log.live.tree(), real.tree()
        diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k, 0) != theirs.get(k, 0))
        raise RecordError(f"{workload}: the recorded model disagrees with the disk after the run at {diff[:10]}")
    # Every fact of the run was seen in the trace, in the file's order.
    with open(run_acks) as f:
        file_ids = [fact.id for fact in (parse_fact_line(line.rstrip("\n"), 0) for line in f) if fact]
    if [fact.id for fact in conv.facts] != file_ids:
        raise RecordError(f"{workload}: acknowledgements in the trace differ from the ack file")
    rec = Recording(workload, root, conv.log, setup_facts + conv.facts, syscalls=lines,
                    seconds=time.monotonic() - t0, notes=conv.notes)
    with open(trace, encoding="latin-1") as f:
        rec.trace_lines = sum(1 for _ in f)
    return rec
