"""faultfs: the FUSE file system (mfusepy, libfuse 3) and its control socket.

    python tools/faultfs MOUNTPOINT --control SOCKET [--seed N] [--log FILE] [--debug]

Serves model.Model at MOUNTPOINT in the foreground until unmounted (fusermount3 -u). The
control socket takes one command a line, in the syntax of README.md, and answers one JSON
line ({"ok": true, ...} or {"ok": false, "error": "..."}).

Every FUSE callback runs under one lock (a Condition). A mutating operation first waits while
the file system is frozen by a trap; a power loss or a shutdown wakes it with EIO, a `resume`
lets it go on.
"""
from __future__ import annotations

import argparse
import errno
import fnmatch
import json
import logging
import os
import shlex
import socketserver
import stat
import sys
import threading
import time
from dataclasses import dataclass, field

# libfuse 3 explicitly: mfusepy would take a libfuse 2 found first (find_library('fuse')).
os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
import mfusepy  # noqa: E402

try:
    from .model import FSError, Model  # noqa: E402
except ImportError:  # run as a plain script
    from model import FSError, Model  # type: ignore  # noqa: E402

log = logging.getLogger("faultfs")

# Operations that change the current state or the durable one; they block while frozen.
MUTATING = {"create", "mknod", "mkdir", "write", "truncate", "fallocate", "fsync", "fdatasync",
            "fsyncdir", "rename", "unlink", "rmdir", "link", "chmod", "chown", "utimens"}
# Names a trap or a fail rule may use: the above, plus aliases and non-mutating ones.
OP_NAMES = MUTATING | {"any", "open", "read", "opendir", "readdir", "getattr", "statfs", "flush", "release"}
FUSE_CAP_WRITEBACK_CACHE = 1 << 16


@dataclass
class Trap:
    id: int
    op: str
    glob: str
    nth: int
    before: bool
    seen: int = 0
    fired: dict | None = None


@dataclass
class FailRule:
    id: int
    op: str
    glob: str
    errno: int
    count: int  # 0: unlimited
    hits: int = 0


@dataclass
class Handle:
    ino: int
    epoch: int
    path: str
    flags: int = 0
    is_dir: bool = False


def _op_matches(rule_op: str, op: str) -> bool:
    if rule_op == op:
        return True
    if rule_op == "any":  # every mutating operation
        return op in MUTATING
    if rule_op == "fsync" and op == "fdatasync":  # `fsync` covers both
        return True
    if rule_op == "create" and op == "mknod":
        return True
    return False


@dataclass
class State:
    model: Model
    cond: threading.Condition = field(default_factory=lambda: threading.Condition(threading.RLock()))
    epoch: int = 0  # bumped by every power loss: handles and blocked ops of an older epoch get EIO
    frozen: bool = False
    blocked: int = 0
    traps: list = field(default_factory=list)
    fails: list = field(default_factory=list)
    fired: list = field(default_factory=list)  # every trap that fired (stats)
    pending: list = field(default_factory=list)  # fired since the last power loss or resume (wait-trap)
    injected: list = field(default_factory=list)
    ops: dict = field(default_factory=dict)
    handles: dict = field(default_factory=dict)
    next_id: int = 1
    mounted: bool = False
    conn: dict = field(default_factory=dict)
    shutting_down: bool = False

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def _rel(path: str | None) -> str:
    return (path or "").lstrip("/")


class FaultFS(mfusepy.Operations):
    """The FUSE operations. Paths come from libfuse (current names); with nullpath_ok an
    unlinked-but-open file's operations get path None and go by the handle."""

    use_ns = True

    def __init__(self, state: State):
        self.s = state
        self.m = state.model

    # -- gatekeeping -------------------------------------------------------------------------
    def _count(self, op: str) -> None:
        self.s.ops[op] = self.s.ops.get(op, 0) + 1

    def _wait_unfrozen(self, epoch: int) -> None:
        s = self.s
        if not s.frozen and s.epoch == epoch:
            return
        s.blocked += 1
        try:
            while s.frozen and s.epoch == epoch and not s.shutting_down:
                s.cond.wait()
        finally:
            s.blocked -= 1
        if s.epoch != epoch or s.shutting_down:
            raise FSError(errno.EIO, "power lost while this operation was blocked")

    def _fail_rule(self, op: str, paths: tuple) -> FailRule | None:
        for rule in self.s.fails:
            if rule.count and rule.hits >= rule.count:
                continue
            if _op_matches(rule.op, op) and any(fnmatch.fnmatchcase(p, rule.glob) for p in paths):
                rule.hits += 1
                self.s.injected.append({"rule": rule.id, "op": op, "path": paths[0], "errno": rule.errno,
                                        "error": errno.errorcode.get(rule.errno, str(rule.errno))})
                return rule
        return None

    def _trap(self, op: str, paths: tuple) -> Trap | None:
        for trap in self.s.traps:
            if trap.fired is not None:
                continue
            if _op_matches(trap.op, op) and any(fnmatch.fnmatchcase(p, trap.glob) for p in paths):
                trap.seen += 1
                if trap.seen == trap.nth:
                    return trap
        return None

    def _fire(self, trap: Trap, op: str, paths: tuple) -> None:
        trap.fired = {"trap": trap.id, "op": op, "path": paths[0], "paths": list(paths), "nth": trap.nth,
                      "when": "before" if trap.before else "after", "at": time.time()}
        self.s.fired.append(trap.fired)
        self.s.pending.append(trap.fired)
        self.s.frozen = True
        log.info("trap %d fired: %s %s (%s)", trap.id, op, paths, trap.fired["when"])
        self.s.cond.notify_all()

    def _mutate(self, op: str, paths: tuple, apply, on_fail=None):
        """Run ``apply()`` (under the lock) as operation ``op`` on ``paths`` (relative), honouring
        the freeze, the fail rules and the traps."""
        s = self.s
        with s.cond:
            self._count(op)
            epoch = s.epoch
            self._wait_unfrozen(epoch)
            rule = self._fail_rule(op, paths)
            if rule is not None:
                if on_fail is not None:
                    on_fail()
                raise FSError(rule.errno, "injected")
            trap = self._trap(op, paths)
            if trap is not None and trap.before:
                self._fire(trap, op, paths)
                self._wait_unfrozen(epoch)  # `resume` lets it apply; a power loss fails it
                return apply()
            result = apply()
            if trap is not None:
                self._fire(trap, op, paths)
                self._wait_unfrozen(epoch)
            return result

    def _query(self, op: str, paths: tuple, apply):
        """A non-mutating operation: counted, may be failed by a rule, never blocked."""
        with self.s.cond:
            self._count(op)
            rule = self._fail_rule(op, paths) if self.s.fails else None
            if rule is not None:
                raise FSError(rule.errno, "injected")
            return apply()

    def _handle(self, fh: int) -> Handle:
        h = self.s.handles.get(fh)
        if h is None:
            raise FSError(errno.EBADF)
        if h.epoch != self.s.epoch:
            raise FSError(errno.EIO, "handle opened before a power loss")
        return h

    def _node_of(self, path, fh):
        if fh:
            h = self._handle(fh)
            node = self.m.inodes.get(h.ino)
            if node is None:
                raise FSError(errno.EIO)
            return node
        return self.m.lookup(path)

    def _path_of(self, path, fh) -> str:
        if path is not None:
            return _rel(path)
        h = self.s.handles.get(fh)
        return h.path if h else ""

    def _open_handle(self, node, path: str, flags: int, is_dir: bool = False) -> int:
        fh = self.s.new_id()
        self.s.handles[fh] = Handle(node.ino, self.s.epoch, path, flags, is_dir)
        return fh

    # -- lifecycle ------------------------------------------------------------------------------
    def init_with_config(self, conn_info, config_3) -> None:
        if config_3 is not None:
            # No kernel caching of names or attributes, so a power loss is seen at once; no
            # kernel_cache/auto_cache: every open drops the file's cached pages.
            config_3.entry_timeout = 0.0
            config_3.negative_timeout = 0.0
            config_3.attr_timeout = 0.0
            config_3.kernel_cache = 0
            config_3.auto_cache = 0
            config_3.direct_io = 0
            config_3.hard_remove = 1  # unlink of an open file reaches us (no .fuse_hidden rename)
            config_3.use_ino = 1
            # Paths on handle operations too (libfuse knows the current name); None only for an
            # unlinked file, which then goes by its handle.
            config_3.nullpath_ok = 0
        if conn_info is not None:
            conn_info.want &= ~FUSE_CAP_WRITEBACK_CACHE  # write-through: every write reaches us
            self.s.conn = {"capable": conn_info.capable, "want": conn_info.want,
                           "max_write": conn_info.max_write,
                           "writeback_cache": bool(conn_info.want & FUSE_CAP_WRITEBACK_CACHE)}
        with self.s.cond:
            self.s.mounted = True
            self.s.cond.notify_all()
        log.info("mounted; conn %s", self.s.conn)

    def destroy(self, path) -> None:
        with self.s.cond:
            self.s.mounted = False
            self.s.shutting_down = True
            self.s.cond.notify_all()

    # -- attributes -----------------------------------------------------------------------------
    def getattr(self, path, fh=None):
        def apply():
            node = self._node_of(path, fh)
            nlink = node.nlink
            if node.is_dir:
                nlink = 2 + sum(1 for ino in node.entries.values()
                                if ino in self.m.inodes and self.m.inodes[ino].is_dir)
            size = node.size
            return {"st_mode": node.mode, "st_ino": node.ino, "st_nlink": nlink, "st_uid": node.uid,
                    "st_gid": node.gid, "st_size": size, "st_blocks": (size + 511) // 512,
                    "st_blksize": 4096, "st_atime": node.atime, "st_mtime": node.mtime,
                    "st_ctime": node.ctime}
        return self._query("getattr", (self._path_of(path, fh),), apply)

    def statfs(self, path):
        def apply():
            used = sum(len(n.data) for n in self.m.inodes.values() if not n.is_dir)
            total = 1 << 40
            free = max(total - used, 0) // 4096
            return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": total // 4096, "f_bfree": free,
                    "f_bavail": free, "f_files": 1 << 20, "f_ffree": (1 << 20) - len(self.m.inodes),
                    "f_favail": (1 << 20) - len(self.m.inodes), "f_namemax": 255}
        return self._query("statfs", (_rel(path),), apply)

    def chmod(self, path, mode, fh=None):
        def apply():
            node = self._node_of(path, fh)
            node.mode = (node.mode & ~0o7777) | (mode & 0o7777)
            node.ctime = time.time_ns()
        return self._mutate("chmod", (self._path_of(path, fh),), apply)

    def chown(self, path, uid, gid, fh=None):
        def apply():
            node = self._node_of(path, fh)
            if uid != -1:
                node.uid = uid
            if gid != -1:
                node.gid = gid
        return self._mutate("chown", (self._path_of(path, fh),), apply)

    def utimens(self, path, times=None, fh=None):
        def apply():
            node = self._node_of(path, fh)
            now = time.time_ns()
            node.atime, node.mtime = (int(times[0]), int(times[1])) if times else (now, now)
        return self._mutate("utimens", (self._path_of(path, fh),), apply)

    # -- namespace --------------------------------------------------------------------------------
    def _ctx(self) -> tuple[int, int]:
        uid, gid, _pid = mfusepy.fuse_get_context()
        return uid, gid

    def create(self, path, mode, flags=0):
        uid, gid = self._ctx()

        def apply():
            node = self.m.create(path, mode, uid, gid, exclusive=bool(flags & os.O_EXCL))
            if flags & os.O_TRUNC and node.data:
                self.m.truncate(node, 0)
            return self._open_handle(node, _rel(path), flags)
        return self._mutate("create", (_rel(path),), apply)

    def mknod(self, path, mode, dev):
        if not stat.S_ISREG(mode):
            raise FSError(errno.EPERM, "only regular files")
        uid, gid = self._ctx()
        return self._mutate("mknod", (_rel(path),),
                            lambda: self.m.create(path, mode, uid, gid, exclusive=True) and 0)

    def mkdir(self, path, mode):
        uid, gid = self._ctx()
        return self._mutate("mkdir", (_rel(path),), lambda: self.m.mkdir(path, mode, uid, gid) and 0)

    def unlink(self, path):
        return self._mutate("unlink", (_rel(path),), lambda: self.m.unlink(path) and 0)

    def rmdir(self, path):
        return self._mutate("rmdir", (_rel(path),), lambda: self.m.rmdir(path) and 0)

    def rename(self, old, new, flags=0):
        RENAME_NOREPLACE = 1
        if flags & ~RENAME_NOREPLACE:
            raise FSError(errno.EINVAL, "RENAME_EXCHANGE/WHITEOUT not modelled")
        return self._mutate("rename", (_rel(old), _rel(new)),
                            lambda: self.m.rename(old, new, noreplace=bool(flags & RENAME_NOREPLACE)))

    def link(self, target, source):
        # mfusepy: link(target=new name, source=existing)
        return self._mutate("link", (_rel(target), _rel(source)), lambda: self.m.link(source, target) and 0)

    # -- files ------------------------------------------------------------------------------------------
    def open(self, path, flags):
        rel = _rel(path)
        if flags & os.O_TRUNC and flags & (os.O_WRONLY | os.O_RDWR):
            # libfuse 3 asks for FUSE_CAP_ATOMIC_O_TRUNC: the truncation comes with the open.
            def apply():
                node = self.m.lookup(path)
                self.m.truncate(node, 0)
                return self._open_handle(node, rel, flags)
            with self.s.cond:
                self._count("open")
            return self._mutate("truncate", (rel,), apply)

        def apply():
            node = self.m.lookup(path)
            if node.is_dir and flags & (os.O_WRONLY | os.O_RDWR):
                raise FSError(errno.EISDIR)
            return self._open_handle(node, rel, flags)
        return self._query("open", (rel,), apply)

    def read(self, path, size, offset, fh):
        def apply():
            return self.m.read(self._node_of(None, fh), size, offset)
        return self._query("read", (self._path_of(path, fh),), apply)

    def write(self, path, data, offset, fh):
        def apply():
            return self.m.write(self._node_of(None, fh), data, offset)
        return self._mutate("write", (self._path_of(path, fh),), apply)

    def truncate(self, path, length, fh=None):
        def apply():
            self.m.truncate(self._node_of(path, fh), length)
        return self._mutate("truncate", (self._path_of(path, fh),), apply)

    def fallocate(self, path, mode, offset, size, fh):
        def apply():
            self.m.fallocate(self._node_of(None, fh), mode, offset, size)
        return self._mutate("fallocate", (self._path_of(path, fh),), apply)

    def flush(self, path, fh):
        with self.s.cond:
            self._count("flush")
        return 0

    def release(self, path, fh):
        with self.s.cond:
            self._count("release")
            h = self.s.handles.pop(fh, None)
            if h is not None and h.epoch == self.s.epoch:
                node = self.m.inodes.get(h.ino)
                if node is not None and node.nlink <= 0:
                    self._gc()
        return 0

    def fsync(self, path, datasync, fh):
        op = "fdatasync" if datasync else "fsync"

        def node():
            return self._node_of(None, fh)

        def on_fail():
            try:
                self.m.fsync_failed(node())
            except FSError:
                pass
        return self._mutate(op, (self._path_of(path, fh),), lambda: self.m.fsync_file(node()), on_fail)

    # -- directories --------------------------------------------------------------------------------
    def opendir(self, path):
        def apply():
            node = self.m.lookup(path)
            if not node.is_dir:
                raise FSError(errno.ENOTDIR)
            return self._open_handle(node, _rel(path), 0, is_dir=True)
        return self._query("opendir", (_rel(path),), apply)

    def readdir(self, path, fh):
        def apply():
            node = self._node_of(path if not fh else None, fh)
            if not node.is_dir:
                raise FSError(errno.ENOTDIR)
            out = [(".", {"st_mode": node.mode, "st_ino": node.ino}, 0), ("..", stat.S_IFDIR, 0)]
            for name, ino in sorted(node.entries.items()):
                child = self.m.inodes.get(ino)
                if child is not None:
                    out.append((name, {"st_mode": child.mode, "st_ino": ino}, 0))
            return out
        return self._query("readdir", (self._path_of(path, fh),), apply)

    def releasedir(self, path, fh):
        with self.s.cond:
            self._count("releasedir")
            self.s.handles.pop(fh, None)
        return 0

    def fsyncdir(self, path, datasync, fh):
        def apply():
            self.m.fsync_dir(self._node_of(None if fh else path, fh))
            self._gc()
        return self._mutate("fsyncdir", (self._path_of(path, fh),), apply)

    def _gc(self) -> None:
        self.m.gc({h.ino for h in self.s.handles.values() if h.epoch == self.s.epoch})


class FaultFUSE(mfusepy.FUSE):
    """mfusepy's FUSE, but rename keeps its flags (RENAME_NOREPLACE must not be dropped) and
    truncate/chmod/chown/utimens keep the file handle (ftruncate of an unlinked file has no path)."""

    def _dec(self, path):
        return None if path is None else path.decode(self.encoding, self.errors)

    @staticmethod
    def _fh(fip):
        return fip.contents.fh if fip else None

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        return self.operations.rename(self._dec(old), self._dec(new), flags)

    def truncate_fuse_3(self, path, length, fip):
        return self.operations.truncate(self._dec(path), length, self._fh(fip))

    def chmod_fuse_3(self, path, mode, fip):
        return self.operations.chmod(self._dec(path), mode, self._fh(fip))

    def chown_fuse_3(self, path, uid, gid, fip):
        if mfusepy.c_uid_t(uid + 1).value == 0:
            uid = -1
        if mfusepy.c_gid_t(gid + 1).value == 0:
            gid = -1
        return self.operations.chown(self._dec(path), uid, gid, self._fh(fip))

    def utimens_fuse_3(self, path, buf, fip):
        times = None
        if buf:
            times = (mfusepy.time_of_timespec(buf.contents.actime, use_ns=True),
                     mfusepy.time_of_timespec(buf.contents.modtime, use_ns=True))
        return self.operations.utimens(self._dec(path), times, self._fh(fip))


# -- the control socket ----------------------------------------------------------------------------------
def _errno_value(text: str) -> int:
    if text.isdigit():
        return int(text)
    value = getattr(errno, text.upper(), None)
    if not isinstance(value, int):
        raise ValueError(f"unknown errno {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def _parsers() -> dict:
    p = {}
    p["power-loss"] = _Parser(prog="power-loss")
    p["power-loss"].add_argument("--torn", action="store_true")
    p["power-loss"].add_argument("--seed", type=int, default=None)
    p["trap"] = _Parser(prog="trap")
    p["trap"].add_argument("op")
    p["trap"].add_argument("glob")
    p["trap"].add_argument("--nth", type=int, default=1)
    g = p["trap"].add_mutually_exclusive_group()
    g.add_argument("--before", dest="before", action="store_true", default=True)
    g.add_argument("--after", dest="before", action="store_false")
    p["fail"] = _Parser(prog="fail")
    p["fail"].add_argument("op")
    p["fail"].add_argument("glob")
    p["fail"].add_argument("errno")
    p["fail"].add_argument("--count", type=int, default=0)
    p["wait-trap"] = _Parser(prog="wait-trap")
    p["wait-trap"].add_argument("--timeout", type=float, default=30.0)
    p["tree"] = _Parser(prog="tree")
    p["tree"].add_argument("--durable", action="store_true")
    return p


class Control:
    """Executes control commands against the state; one instance shared by every connection."""

    def __init__(self, state: State, ops: FaultFS, seed: int):
        self.s = state
        self.ops = ops
        self.seed = seed
        self.parsers = _parsers()

    def execute(self, line: str) -> dict:
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        if not argv:
            return {"ok": False, "error": "empty command"}
        cmd, args = argv[0], argv[1:]
        try:
            handler = getattr(self, "cmd_" + cmd.replace("-", "_"), None)
            if handler is None:
                return {"ok": False, "error": f"unknown command {cmd!r}"}
            opts = self.parsers[cmd].parse_args(args) if cmd in self.parsers else None
            if opts is None and args:
                return {"ok": False, "error": f"{cmd} takes no arguments"}
            return {"ok": True, **(handler(opts) or {})}
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}

    def cmd_ping(self, _):
        return {"mounted": self.s.mounted, "pid": os.getpid()}

    def cmd_power_loss(self, o):
        seed = self.seed if o.seed is None else o.seed
        with self.s.cond:
            report = self.s.model.power_loss(torn=o.torn, seed=seed + self.s.model.power_losses)
            self.s.epoch += 1
            self.s.frozen = False
            self.s.pending.clear()
            # fired traps are spent; armed ones stay armed
            self.s.traps = [t for t in self.s.traps if t.fired is None]
            self.s.cond.notify_all()
            report["released_blocked"] = self.s.blocked
        log.info("power loss (torn=%s): %s", o.torn, report)
        return report

    def cmd_trap(self, o):
        if o.op not in OP_NAMES:
            raise ValueError(f"unknown operation {o.op!r}; one of {sorted(OP_NAMES)}")
        if o.nth < 1:
            raise ValueError("--nth must be >= 1")
        with self.s.cond:
            trap = Trap(self.s.new_id(), o.op, o.glob.lstrip("/"), o.nth, o.before)
            self.s.traps.append(trap)
        return {"id": trap.id}

    def cmd_wait_trap(self, o):
        deadline = time.monotonic() + o.timeout
        with self.s.cond:
            while not self.s.pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ValueError(f"no trap fired within {o.timeout}s")
                self.s.cond.wait(left)
            return {"fired": list(self.s.pending), "blocked": self.s.blocked}

    def cmd_fail(self, o):
        if o.op not in OP_NAMES:
            raise ValueError(f"unknown operation {o.op!r}; one of {sorted(OP_NAMES)}")
        code = _errno_value(o.errno)
        with self.s.cond:
            rule = FailRule(self.s.new_id(), o.op, o.glob.lstrip("/"), code, o.count)
            self.s.fails.append(rule)
        return {"id": rule.id}

    def cmd_clear(self, _):
        with self.s.cond:
            self.s.traps.clear()
            self.s.fails.clear()
        return {}

    def cmd_resume(self, _):
        with self.s.cond:
            self.s.frozen = False
            self.s.pending.clear()
            self.s.cond.notify_all()
        return {}

    def cmd_stats(self, _):
        with self.s.cond:
            m = self.s.model
            files = [n for n in m.inodes.values() if not n.is_dir]
            return {"ops": dict(sorted(self.s.ops.items())), **m.unsynced(),
                    "traps_fired": list(self.s.fired), "traps_armed": sum(t.fired is None for t in self.s.traps),
                    "failures_injected": list(self.s.injected), "power_losses": m.power_losses,
                    "frozen": self.s.frozen, "blocked": self.s.blocked, "inodes": len(m.inodes),
                    "open_handles": len(self.s.handles),
                    "bytes_current": sum(len(n.data) for n in files),
                    "bytes_durable": sum(len(n.durable_data) for n in files), "conn": self.s.conn}

    def cmd_tree(self, o):
        with self.s.cond:
            return {"tree": self.s.model.tree(durable=o.durable)}

    def cmd_shutdown(self, _):
        """Release every blocked operation with EIO (before an unmount)."""
        with self.s.cond:
            self.s.shutting_down = True
            self.s.frozen = False
            self.s.cond.notify_all()
        return {}


def serve_control(path: str, control: Control) -> socketserver.BaseServer:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            for raw in self.rfile:
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                reply = control.execute(line)
                self.wfile.write((json.dumps(reply) + "\n").encode())
                self.wfile.flush()

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    if os.path.exists(path):
        os.unlink(path)
    server = Server(path, Handler)
    threading.Thread(target=server.serve_forever, name="faultfs-control", daemon=True).start()
    return server


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="faultfs", description=__doc__.splitlines()[0])
    ap.add_argument("mountpoint")
    ap.add_argument("--control", required=True, help="Unix socket path for commands")
    ap.add_argument("--seed", type=int, default=0, help="seed of torn-write prefixes (default 0)")
    ap.add_argument("--log", help="log file (default: stderr)")
    ap.add_argument("--debug", action="store_true", help="log every FUSE call (libfuse -d)")
    ap.add_argument("--max-threads", type=int, default=32,
                    help="libfuse worker threads; each op blocked by a trap holds one")
    args = ap.parse_args(argv)
    logging.basicConfig(filename=args.log, level=logging.DEBUG if args.debug else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    state = State(Model(os.getuid(), os.getgid()))
    ops = FaultFS(state)
    server = serve_control(args.control, Control(state, ops, args.seed))
    try:
        FaultFUSE(ops, args.mountpoint, foreground=True, debug=args.debug, fsname="faultfs",
                  subtype="faultfs", max_threads=args.max_threads,
                  entry_timeout=0, attr_timeout=0, negative_timeout=0, hard_remove=True, use_ino=True)
    finally:
        server.shutdown()
        server.server_close()
        try:
            os.unlink(args.control)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
