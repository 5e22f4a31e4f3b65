"""The in-memory state of faultfs: inodes in two states, CURRENT and DURABLE.

No FUSE here; fs.py calls these methods under its one lock, and so can a unit test.

* A directory inode maps names to inode numbers twice: ``entries`` (what processes see now) and
  ``durable_entries`` (what survives a power loss). Only ``fsync_dir`` copies the first into the
  second; create, mkdir, rename in or out, unlink, rmdir and link change ``entries`` alone. Each
  directory is durable on its own: a rename between two directories is made durable by fsyncing
  both (fsyncing one alone can leave the file under both names, or under none).
* A regular-file inode has ``data`` (current bytes) and ``durable_data``. Every byte range that
  a write or truncate changed since the last sync is in ``dirty``; ``fsync_file`` (fsync,
  fdatasync, an O_DSYNC/RWF_DSYNC write) sets the durable size to the current size and copies
  the dirty ranges, so after it ``durable_data == data``.
* ``fsync_failed`` models a failed writeback as Linux does it: the dirty pages are marked clean
  with an error recorded, so the bytes stay visible (the page cache still holds them) but are
  NOT durable, and a later successful fsync does not write them either (it only sets the size;
  where they extended the file, the durable file reads zeros there).
* ``power_loss`` replaces the current state by the durable one: starting at the root, every
  inode reachable through durable entries survives with its durable bytes; everything else
  (inodes whose name never became durable included, even with synced data) is garbage.
  With ``torn``, each file's last write since its last sync survives in part first: a prefix
  of its bytes, of a length drawn from ``random.Random(seed)``, lands on the durable bytes.
* Mode, owner and times are not versioned: a surviving inode keeps its current ones.
"""
from __future__ import annotations

import errno
import random
import stat
import time
from dataclasses import dataclass, field

ROOT_INO = 1


class FSError(OSError):
    """An errno for the caller (fs.py turns it into the FUSE reply)."""

    def __init__(self, code: int, what: str = ""):
        super().__init__(code, what or errno.errorcode.get(code, str(code)))


def _now() -> int:
    return time.time_ns()


@dataclass(eq=False)
class Inode:
    ino: int
    mode: int  # st_mode with the type bits
    uid: int = 0
    gid: int = 0
    nlink: int = 0  # names in the CURRENT tree (a directory counts its "." too: see fs.getattr)
    # regular files
    data: bytearray = field(default_factory=bytearray)
    durable_data: bytearray = field(default_factory=bytearray)
    dirty: list = field(default_factory=list)  # [start, end) ranges changed since the last sync, merged
    unsynced_bytes: int = 0  # bytes written or truncated since the last sync (for stats)
    last_write: tuple | None = None  # (offset, bytes) of the last write since the last sync (torn mode)
    # directories
    entries: dict = field(default_factory=dict)
    durable_entries: dict = field(default_factory=dict)
    dir_dirty: bool = False
    # times (ns), not versioned
    atime: int = field(default_factory=_now)
    mtime: int = field(default_factory=_now)
    ctime: int = field(default_factory=_now)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def size(self) -> int:
        return len(self.entries) if self.is_dir else len(self.data)

    def mark_dirty(self, start: int, end: int) -> None:
        if end <= start:
            return
        merged = []
        for s, e in self.dirty:
            if e < start or s > end:
                merged.append((s, e))
            else:
                start, end = min(s, start), max(e, end)
        merged.append((start, end))
        merged.sort()
        self.dirty = merged


def split(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


class Model:
    """The file tree. Every method may raise FSError; none blocks."""

    def __init__(self, uid: int = 0, gid: int = 0):
        self.inodes: dict[int, Inode] = {}
        self._next_ino = ROOT_INO
        root = self._new(stat.S_IFDIR | 0o755, uid, gid)
        root.nlink = 1
        self.power_losses = 0

    # -- lookups ---------------------------------------------------------------------------
    def _new(self, mode: int, uid: int, gid: int) -> Inode:
        node = Inode(self._next_ino, mode, uid, gid)
        self.inodes[node.ino] = node
        self._next_ino += 1
        return node

    @property
    def root(self) -> Inode:
        return self.inodes[ROOT_INO]

    def lookup(self, path: str) -> Inode:
        node = self.root
        for name in split(path):
            if not node.is_dir:
                raise FSError(errno.ENOTDIR)
            ino = node.entries.get(name)
            if ino is None:
                raise FSError(errno.ENOENT)
            node = self.inodes[ino]
        return node

    def _parent(self, path: str) -> tuple[Inode, str]:
        parts = split(path)
        if not parts:
            raise FSError(errno.EBUSY, "the root has no parent")
        parent = self.lookup("/".join(parts[:-1]))
        if not parent.is_dir:
            raise FSError(errno.ENOTDIR)
        return parent, parts[-1]

    def _touch_dir(self, d: Inode) -> None:
        d.dir_dirty = True
        d.mtime = d.ctime = _now()

    # -- namespace operations (change CURRENT entries only) ---------------------------------
    def create(self, path: str, mode: int, uid: int = 0, gid: int = 0, exclusive: bool = False) -> Inode:
        parent, name = self._parent(path)
        if name in parent.entries:
            if exclusive:
                raise FSError(errno.EEXIST)
            return self.inodes[parent.entries[name]]
        node = self._new(stat.S_IFREG | (mode & 0o7777), uid, gid)
        node.nlink = 1
        parent.entries[name] = node.ino
        self._touch_dir(parent)
        return node

    def mkdir(self, path: str, mode: int, uid: int = 0, gid: int = 0) -> Inode:
        parent, name = self._parent(path)
        if name in parent.entries:
            raise FSError(errno.EEXIST)
        node = self._new(stat.S_IFDIR | (mode & 0o7777), uid, gid)
        node.nlink = 1
        parent.entries[name] = node.ino
        self._touch_dir(parent)
        return node

    def unlink(self, path: str) -> Inode:
        parent, name = self._parent(path)
        ino = parent.entries.get(name)
        if ino is None:
            raise FSError(errno.ENOENT)
        node = self.inodes[ino]
        if node.is_dir:
            raise FSError(errno.EISDIR)
        del parent.entries[name]
        node.nlink -= 1
        node.ctime = _now()
        self._touch_dir(parent)
        return node

    def rmdir(self, path: str) -> Inode:
        parent, name = self._parent(path)
        ino = parent.entries.get(name)
        if ino is None:
            raise FSError(errno.ENOENT)
        node = self.inodes[ino]
        if not node.is_dir:
            raise FSError(errno.ENOTDIR)
        if node.entries:
            raise FSError(errno.ENOTEMPTY)
        del parent.entries[name]
        node.nlink -= 1
        self._touch_dir(parent)
        return node

    def link(self, existing: str, new: str) -> Inode:
        node = self.lookup(existing)
        if node.is_dir:
            raise FSError(errno.EPERM)
        parent, name = self._parent(new)
        if name in parent.entries:
            raise FSError(errno.EEXIST)
        parent.entries[name] = node.ino
        node.nlink += 1
        node.ctime = _now()
        self._touch_dir(parent)
        return node

    def rename(self, old: str, new: str, noreplace: bool = False) -> None:
        """rename(2): replaces ``new`` atomically in the CURRENT tree (POSIX rules for the types)."""
        src_parent, src_name = self._parent(old)
        ino = src_parent.entries.get(src_name)
        if ino is None:
            raise FSError(errno.ENOENT)
        node = self.inodes[ino]
        dst_parent, dst_name = self._parent(new)
        if node.is_dir:  # no directory into its own subtree
            walk = split(new)[:-1]
            cur = self.root
            for part in walk:
                if cur.ino == node.ino:
                    raise FSError(errno.EINVAL)
                cur = self.inodes[cur.entries[part]]
            if cur.ino == node.ino:
                raise FSError(errno.EINVAL)
        target_ino = dst_parent.entries.get(dst_name)
        if target_ino == ino:
            return  # same inode: rename does nothing
        if target_ino is not None:
            if noreplace:
                raise FSError(errno.EEXIST)
            target = self.inodes[target_ino]
            if node.is_dir and not target.is_dir:
                raise FSError(errno.ENOTDIR)
            if not node.is_dir and target.is_dir:
                raise FSError(errno.EISDIR)
            if target.is_dir and target.entries:
                raise FSError(errno.ENOTEMPTY)
            target.nlink -= 1
        del src_parent.entries[src_name]
        dst_parent.entries[dst_name] = ino
        node.ctime = _now()
        self._touch_dir(src_parent)
        self._touch_dir(dst_parent)

    # -- file data (changes CURRENT bytes only) -------------------------------------------
    def write(self, node: Inode, data: bytes, offset: int) -> int:
        if node.is_dir:
            raise FSError(errno.EISDIR)
        old_len = len(node.data)
        if offset > old_len:
            node.data.extend(bytes(offset - old_len))
        node.data[offset:offset + len(data)] = data
        node.mark_dirty(min(offset, old_len), offset + len(data))
        node.unsynced_bytes += len(data)
        node.last_write = (offset, bytes(data))
        node.mtime = node.ctime = _now()
        return len(data)

    def read(self, node: Inode, size: int, offset: int) -> bytes:
        if node.is_dir:
            raise FSError(errno.EISDIR)
        return bytes(node.data[offset:offset + size])

    def truncate(self, node: Inode, length: int) -> None:
        if node.is_dir:
            raise FSError(errno.EISDIR)
        if length < 0:
            raise FSError(errno.EINVAL)
        old_len = len(node.data)
        if length < old_len:
            del node.data[length:]
        elif length > old_len:
            node.data.extend(bytes(length - old_len))
        node.mark_dirty(min(length, old_len), max(length, old_len))
        node.unsynced_bytes += abs(length - old_len)
        node.mtime = node.ctime = _now()

    def fallocate(self, node: Inode, mode: int, offset: int, length: int) -> None:
        keep_size = 0x01  # FALLOC_FL_KEEP_SIZE
        if mode & ~keep_size:
            raise FSError(errno.EOPNOTSUPP)  # punch hole, collapse, zero range: not modelled
        if not mode & keep_size and offset + length > len(node.data):
            self.truncate(node, offset + length)

    # -- durability --------------------------------------------------------------------------
    def fsync_file(self, node: Inode) -> None:
        """fsync/fdatasync of a regular file: its bytes and size become durable (not its name)."""
        if node.is_dir:
            self.fsync_dir(node)
            return
        durable, cur = node.durable_data, node.data
        if len(durable) > len(cur):
            del durable[len(cur):]
        elif len(durable) < len(cur):
            durable.extend(bytes(len(cur) - len(durable)))
        for start, end in node.dirty:
            end = min(end, len(cur))
            if start < end:
                durable[start:end] = cur[start:end]
        node.dirty = []
        node.unsynced_bytes = 0
        node.last_write = None

    def fsync_failed(self, node: Inode) -> None:
        """A failed fsync (injected EIO): Linux marks the dirty pages clean and records the error.
        The bytes stay visible but never become durable; a later fsync will not retry them."""
        if node.is_dir:
            return  # a failed directory sync keeps its entries unsynced (they may be retried)
        node.dirty = []
        node.last_write = None

    def fsync_dir(self, node: Inode) -> None:
        """fsync of a directory: its current entries become its durable entries."""
        if not node.is_dir:
            raise FSError(errno.ENOTDIR)
        node.durable_entries = dict(node.entries)
        node.dir_dirty = False

    # -- power loss ---------------------------------------------------------------------------
    def power_loss(self, torn: bool = False, seed: int = 0) -> dict:
        """The durable state becomes the current state. Returns what was dropped (paths are
        relative, capped at 200 entries each)."""
        rng = random.Random(seed)
        before = dict(self.paths(durable=False))
        torn_report = []
        if torn:
            for node in sorted(self.inodes.values(), key=lambda n: n.ino):
                if node.is_dir or node.last_write is None:
                    continue
                offset, data = node.last_write
                keep = rng.randint(1, len(data) - 1) if len(data) > 1 else 0
                durable = node.durable_data
                if keep:
                    if offset > len(durable):
                        durable.extend(bytes(offset - len(durable)))
                    durable[offset:offset + keep] = data[:keep]
                torn_report.append({"ino": node.ino, "offset": offset, "kept": keep, "of": len(data)})
        dropped = sum(len(n.data) for n in self.inodes.values() if not n.is_dir)
        # What survives: everything reachable from the root through durable entries.
        survivors: dict[int, Inode] = {}
        nlinks: dict[int, int] = {ROOT_INO: 1}
        stack = [self.root]
        survivors[ROOT_INO] = self.root
        while stack:
            d = stack.pop()
            for ino in d.durable_entries.values():
                nlinks[ino] = nlinks.get(ino, 0) + 1
                if ino not in survivors:
                    survivors[ino] = self.inodes[ino]
                    if survivors[ino].is_dir:
                        stack.append(survivors[ino])
        for node in survivors.values():
            node.nlink = nlinks[node.ino]
            if node.is_dir:
                node.entries = dict(node.durable_entries)
                node.dir_dirty = False
            else:
                node.data = bytearray(node.durable_data)
                node.dirty = []
                node.unsynced_bytes = 0
                node.last_write = None
        self.inodes = survivors
        self.power_losses += 1
        after = dict(self.paths(durable=False))
        dropped -= sum(len(n.data) for n in survivors.values() if not n.is_dir)
        for item in torn_report:
            item["path"] = next((p for p, ino in after.items() if ino == item["ino"]), None)
        lost = sorted(p for p, ino in before.items() if after.get(p) != ino)
        return {"lost_paths": lost[:200], "lost_count": len(lost), "dropped_bytes": max(dropped, 0),
                "torn": torn_report}

    def gc(self, keep: set[int] = frozenset()) -> int:
        """Forget inodes reachable neither through current nor durable entries (nor in ``keep``,
        the inodes of open handles). Returns how many were dropped."""
        live = {ROOT_INO} | set(keep)
        stack = list(live)
        while stack:
            node = self.inodes.get(stack.pop())
            if node is None or not node.is_dir:
                continue
            for ino in (*node.entries.values(), *node.durable_entries.values()):
                if ino not in live:
                    live.add(ino)
                    stack.append(ino)
        dead = [ino for ino in self.inodes if ino not in live]
        for ino in dead:
            del self.inodes[ino]
        return len(dead)

    # -- inspection ---------------------------------------------------------------------------
    def paths(self, durable: bool = False):
        """(relative path, ino) of every name in the current (or durable) tree, depth first."""
        stack = [("", self.root)]
        seen = set()
        while stack:
            prefix, d = stack.pop()
            if d.ino in seen:
                continue
            seen.add(d.ino)
            entries = d.durable_entries if durable else d.entries
            for name in sorted(entries, reverse=True):
                ino = entries[name]
                path = f"{prefix}{name}"
                yield path, ino
                node = self.inodes.get(ino)
                if node is not None and node.is_dir:
                    stack.append((path + "/", node))

    def tree(self, durable: bool = False) -> list[dict]:
        out = []
        for path, ino in self.paths(durable):
            node = self.inodes.get(ino)
            if node is None:
                continue
            if node.is_dir:
                out.append({"path": path + "/", "ino": ino})
            else:
                size = len(node.durable_data if durable else node.data)
                out.append({"path": path, "ino": ino, "size": size})
        return sorted(out, key=lambda x: x["path"])

    def unsynced(self) -> dict:
        files = [n for n in self.inodes.values() if not n.is_dir and n.dirty]
        dirs = [n for n in self.inodes.values() if n.is_dir and n.dir_dirty]
        return {"bytes_unsynced": sum(n.unsynced_bytes for n in files), "files_unsynced": len(files),
                "dirs_unsynced": len(dirs)}
