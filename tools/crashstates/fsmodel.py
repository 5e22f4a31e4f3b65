"""A small model of a POSIX file system with inodes, and the operations a workload performs on it.

The recorder (recorder.py) turns system calls into :class:`Op` records on *inodes*, resolving every
path against a live copy of the model (:class:`OpLog`), so that an op replays the same way whatever
subset of the other ops a crash state keeps: a write goes to its inode even when the create that
named the inode is not in the state (the inode is then unreachable: the file is lost), an unlink
removes a name only if it still names that inode, a rename is one atomic step.

Kinds of op:

* data ops on a file inode: ``write`` (offset, bytes; ``durable`` for O_DSYNC/O_SYNC files and
  RWF_DSYNC/RWF_SYNC writes, made durable by the call itself) and ``trunc`` (new size);
* directory ops: ``link`` (a name in a directory for an inode: a create, a mkdir when ``new``,
  or a hard link), ``unlink`` (also rmdir) and ``rename`` (source and destination directory);
* sync ops: ``fsync`` of an inode (fsync and fdatasync alike: a file's data and size, or a
  directory's entries) and ``sync`` (sync(2)/syncfs(2): everything).

Only the tree reachable from the root inode (the workload's root folder, which exists and is
durable before the workload starts) is part of a state. Modes, owners, times, xattrs, symlinks and
mmap writes are not modelled (the recorder refuses the last two).
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field

FILE, DIR = "f", "d"
ROOT = 0


class ModelError(RuntimeError):
    """The trace does something the model cannot follow (or contradicts it)."""


@dataclass
class Op:
    """One operation, on inodes. ``idx`` is its place in the trace (completion order)."""

    idx: int
    kind: str                 # write | trunc | link | unlink | rename | fsync | sync
    ino: int | None = None    # data ops: the file; link/unlink/rename: the inode named; fsync: the synced inode
    off: int = 0
    data: bytes = b""
    size: int = 0
    parent: int | None = None   # link/unlink: the directory; rename: the source directory
    name: str = ""
    parent2: int | None = None  # rename: the destination directory
    name2: str = ""
    new: bool = False           # link: creates the inode (create/mkdir) rather than a hard link
    durable: bool = False       # write: durable when the call returned (O_DSYNC, RWF_DSYNC, ...)
    zeros: bool = False         # write: every byte is zero (a preallocation, as the journal's)
    desc: str = ""              # human-readable: the call and its path relative to the root

    @property
    def is_data(self) -> bool:
        return self.kind in ("write", "trunc")

    @property
    def is_dir_op(self) -> bool:
        return self.kind in ("link", "unlink", "rename")

    @property
    def is_sync(self) -> bool:
        return self.kind in ("fsync", "sync") or (self.kind == "write" and self.durable)

    def dirs(self) -> tuple[int, ...]:
        """Directories whose entries this op changes (a directory op is durable once every one of
        them has been fsynced after it)."""
        if self.kind == "rename":
            return (self.parent,) if self.parent == self.parent2 else (self.parent, self.parent2)
        if self.kind in ("link", "unlink"):
            return (self.parent,)
        return ()

    def __str__(self) -> str:
        return f"#{self.idx} {self.desc or self.kind}"


@dataclass
class FS:
    """Inodes: kind, file bytes, directory entries. Inode 0 is the root.

    A file is ``data[ino]`` followed by zeros up to ``sizes[ino]``: zeros written past the bytes
    held (a preallocated 16 MiB journal file) only grow the size, so the many copies a state
    build makes and the digests it takes cost what the files hold, not their length."""

    kinds: dict[int, str] = field(default_factory=lambda: {ROOT: DIR})
    data: dict[int, bytearray] = field(default_factory=dict)
    entries: dict[int, dict[str, int]] = field(default_factory=lambda: {ROOT: {}})
    sizes: dict[int, int] = field(default_factory=dict)

    def copy(self) -> "FS":
        return FS(dict(self.kinds), {i: bytearray(b) for i, b in self.data.items()},
                  {i: dict(e) for i, e in self.entries.items()}, dict(self.sizes))

    def size(self, ino: int) -> int:
        """The file's length in bytes, zeros past ``data[ino]`` included."""
        return self.sizes.get(ino, 0)

    def content(self, ino: int) -> bytes:
        """The file's whole content."""
        held = self.data.get(ino, b"")
        return bytes(held) + bytes(self.size(ino) - len(held))

    # -- replay ------------------------------------------------------------------
    def ensure(self, ino: int, kind: str) -> None:
        if ino not in self.kinds:
            self.kinds[ino] = kind
            if kind == DIR:
                self.entries[ino] = {}
            else:
                self.data[ino] = bytearray()
                self.sizes[ino] = 0

    def apply(self, op: Op, kinds: dict[int, str], torn: str | None = None) -> None:
        """Apply ``op``; ``kinds`` gives every inode's kind (inodes are made on first use).
        ``torn``: apply a write only partly, ``"half"`` (its first half reaches the disk) or
        ``"zero"`` (the file grows by the whole write but its second half reads as zeros)."""
        k = op.kind
        if k == "write":
            self.ensure(op.ino, FILE)
            data = op.data
            if torn == "half":
                data = data[: len(data) // 2]
            elif torn == "zero":
                data = data[: len(data) // 2] + bytes(len(data) - len(data) // 2)
            buf = self.data[op.ino]
            end = op.off + len(data)
            if not (op.zeros and op.off >= len(buf)):  # zeros past the bytes held are implied
                if op.off > len(buf):
                    buf.extend(bytes(op.off - len(buf)))
                buf[op.off:end] = data
            self.sizes[op.ino] = max(self.sizes[op.ino], end)
        elif k == "trunc":
            self.ensure(op.ino, FILE)
            del self.data[op.ino][op.size:]
            self.sizes[op.ino] = op.size
        elif k == "link":
            self.ensure(op.parent, DIR)
            self.ensure(op.ino, kinds[op.ino])
            self.entries[op.parent][op.name] = op.ino
        elif k == "unlink":
            self.ensure(op.parent, DIR)
            if self.entries[op.parent].get(op.name) == op.ino:
                del self.entries[op.parent][op.name]
        elif k == "rename":
            self.ensure(op.parent, DIR)
            self.ensure(op.parent2, DIR)
            self.ensure(op.ino, kinds[op.ino])
            if self.entries[op.parent].get(op.name) == op.ino:
                del self.entries[op.parent][op.name]
            self.entries[op.parent2][op.name2] = op.ino
        elif k in ("fsync", "sync"):
            pass
        else:
            raise ModelError(f"unknown op kind {k!r}")

    # -- the reachable tree ------------------------------------------------------
    def walk(self):
        """(relative path, kind, inode) of everything reachable from the root, parents first,
        names sorted. A directory reachable twice (possible only in odd replays) is walked once."""
        seen = {ROOT}
        stack = [("", ROOT)]
        while stack:
            path, ino = stack.pop()
            for name in sorted(self.entries.get(ino, {}), reverse=True):
                child = self.entries[ino][name]
                rel = f"{path}/{name}" if path else name
                kind = self.kinds.get(child, FILE)
                yield rel, kind, child
                if kind == DIR and child not in seen:
                    seen.add(child)
                    stack.append((rel, child))

    def tree(self) -> dict[str, bytes | None]:
        """``{path: bytes}`` for files and ``{path: None}`` for directories, reachable ones only."""
        out: dict[str, bytes | None] = {}
        for rel, kind, ino in self.walk():
            out[rel] = None if kind == DIR else self.content(ino)
        return out

    def digest(self) -> str:
        h = hashlib.sha256()
        for rel, kind, ino in sorted(self.walk()):
            h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + kind.encode())
            if kind == FILE:  # the length, then the bytes held without trailing zeros: one file, one digest
                h.update(self.size(ino).to_bytes(8, "little"))
                h.update(self.data.get(ino, b"").rstrip(b"\0"))
        return h.hexdigest()

    def materialize(self, dest: str) -> None:
        """Write the reachable tree under ``dest`` (which must exist and be empty)."""
        for rel, kind, ino in sorted(self.walk(), key=lambda t: t[0].count("/")):
            path = os.path.join(dest, rel)
            if kind == DIR:
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(self.data.get(ino, b""))
                    f.truncate(self.size(ino))  # the zeros past the bytes held, as a hole

    def listing(self) -> list[str]:
        """One line per reachable path: ``dir/`` or ``file (N bytes)``."""
        return [f"{rel}/" if kind == DIR else f"{rel} ({self.size(ino)} bytes)"
                for rel, kind, ino in sorted(self.walk())]

    @classmethod
    def from_disk(cls, root: str) -> "FS":
        """The tree under ``root`` as it is now (the durable state a workload starts from)."""
        fs = cls()
        by_stino: dict[tuple[int, int], int] = {}
        next_ino = 1
        stack = [(root, ROOT)]
        while stack:
            path, ino = stack.pop()
            for entry in sorted(os.scandir(path), key=lambda e: e.name):
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    raise ModelError(f"symlinks are not modelled: {entry.path}")
                key = (st.st_dev, st.st_ino)
                child = by_stino.get(key)
                if child is None:
                    child = by_stino[key] = next_ino
                    next_ino += 1
                    if stat.S_ISDIR(st.st_mode):
                        fs.kinds[child] = DIR
                        fs.entries[child] = {}
                        stack.append((entry.path, child))
                    elif stat.S_ISREG(st.st_mode):
                        fs.kinds[child] = FILE
                        with open(entry.path, "rb") as f:
                            content = f.read()
                        fs.data[child] = bytearray(content.rstrip(b"\0"))
                        fs.sizes[child] = len(content)
                    else:
                        raise ModelError(f"only files and directories are modelled: {entry.path}")
                fs.entries[ino][entry.name] = child
        return fs


class OpLog:
    """The live model of a running workload: resolves paths (relative to the root) to inodes and
    records each change as an :class:`Op`. Acknowledgements are recorded between ops: an ack at
    ``pos`` was given after ops ``[0, pos)`` had completed."""

    def __init__(self, initial: FS | None = None):
        self.initial = initial.copy() if initial is not None else FS()
        self.live = self.initial.copy()
        self.kinds: dict[int, str] = dict(self.initial.kinds)
        self.ops: list[Op] = []
        self.facts: list = []   # filled by the recorder: (pos, Fact)
        self._next_ino = max(self.kinds) + 1
        self._names: dict[int, str] = {ROOT: "."}
        for rel, _, ino in self.initial.walk():
            self._names[ino] = rel

    # -- paths ---------------------------------------------------------------------
    def path_of(self, ino: int) -> str:
        return self._names.get(ino, f"<inode {ino}>")

    def lookup(self, rel: str) -> int | None:
        ino = ROOT
        for part in _parts(rel):
            if self.kinds.get(ino) != DIR:
                return None
            ino = self.live.entries[ino].get(part)
            if ino is None:
                return None
        return ino

    def parent(self, rel: str) -> tuple[int, str]:
        parts = _parts(rel)
        if not parts:
            raise ModelError("the root itself has no parent in the model")
        dir_rel = "/".join(parts[:-1])
        d = self.lookup(dir_rel)
        if d is None or self.kinds[d] != DIR:
            raise ModelError(f"parent directory of {rel!r} is not in the model")
        return d, parts[-1]

    def _emit(self, **kw) -> Op:
        op = Op(idx=len(self.ops), **kw)
        self.live.apply(op, self.kinds)
        self.ops.append(op)
        return op

    def _new_ino(self, kind: str) -> int:
        ino = self._next_ino
        self._next_ino += 1
        self.kinds[ino] = kind
        return ino

    # -- operations by path ----------------------------------------------------------
    def create(self, rel: str, desc: str = "") -> int:
        """A new, empty file at ``rel`` (open with O_CREAT of a missing name)."""
        d, name = self.parent(rel)
        if name in self.live.entries[d]:
            raise ModelError(f"create of existing {rel!r}")
        ino = self._new_ino(FILE)
        self._names[ino] = _norm(rel)
        self._emit(kind="link", ino=ino, parent=d, name=name, new=True, desc=desc or f"create {_norm(rel)}")
        return ino

    def mkdir(self, rel: str, desc: str = "") -> int:
        d, name = self.parent(rel)
        if name in self.live.entries[d]:
            raise ModelError(f"mkdir of existing {rel!r}")
        ino = self._new_ino(DIR)
        self._names[ino] = _norm(rel)
        self._emit(kind="link", ino=ino, parent=d, name=name, new=True, desc=desc or f"mkdir {_norm(rel)}")
        return ino

    def link(self, src: str, dst: str, desc: str = "") -> None:
        ino = self._existing(src)
        d, name = self.parent(dst)
        self._emit(kind="link", ino=ino, parent=d, name=name, desc=desc or f"link {_norm(src)} -> {_norm(dst)}")

    def unlink(self, rel: str, desc: str = "") -> None:
        """unlink(2) or rmdir(2) of ``rel``."""
        ino = self._existing(rel)
        d, name = self.parent(rel)
        kind = "rmdir" if self.kinds[ino] == DIR else "unlink"
        self._emit(kind="unlink", ino=ino, parent=d, name=name, desc=desc or f"{kind} {_norm(rel)}")

    def rename(self, src: str, dst: str, desc: str = "") -> None:
        ino = self._existing(src)
        d1, n1 = self.parent(src)
        d2, n2 = self.parent(dst)
        self._names[ino] = _norm(dst)
        self._emit(kind="rename", ino=ino, parent=d1, name=n1, parent2=d2, name2=n2,
                   desc=desc or f"rename {_norm(src)} -> {_norm(dst)}")

    def _existing(self, rel: str) -> int:
        ino = self.lookup(rel)
        if ino is None:
            raise ModelError(f"{rel!r} is not in the model")
        return ino

    # -- operations by inode ---------------------------------------------------------
    def write(self, ino: int, off: int, data: bytes, durable: bool = False, desc: str = "") -> None:
        if not data:
            return
        data = bytes(data)
        self._emit(kind="write", ino=ino, off=off, data=data, durable=durable, zeros=data.count(0) == len(data),
                   desc=desc or f"write {self.path_of(ino)} @{off} +{len(data)}{' (dsync)' if durable else ''}")

    def truncate(self, ino: int, size: int, desc: str = "") -> None:
        self._emit(kind="trunc", ino=ino, size=size, desc=desc or f"truncate {self.path_of(ino)} to {size}")

    def fsync(self, ino: int, desc: str = "") -> None:
        self._emit(kind="fsync", ino=ino, desc=desc or f"fsync {self.path_of(ino)}")

    def sync_all(self, desc: str = "") -> None:
        self._emit(kind="sync", desc=desc or "sync")

    def size(self, ino: int) -> int:
        return self.live.size(ino)

    def kind(self, ino: int) -> str:
        return self.kinds[ino]


def _parts(rel: str) -> list[str]:
    return [p for p in rel.replace("\\", "/").split("/") if p and p != "."]


def _norm(rel: str) -> str:
    return "/".join(_parts(rel))
