"""Crash states: what the disk may hold after a power loss at a given point of a recorded run.

Crash points. A crash point ``c`` means: ops ``[0, c)`` have completed, op ``c`` (if any) has not.
By default the crash points are every sync op (fsync, fdatasync, sync, a DSYNC write), i.e. the
last moment before that sync returns, the place of every acknowledgement the workload wrote, and
the end of the trace. Nothing becomes durable between two syncs, so a crash anywhere between sync
``s`` and the next one ``t`` leaves a subset of what point ``t`` allows, and point ``t`` has seen
every acknowledgement given before it; the points at acknowledgements add the moments right after
an ACK and before the next INTENT (an intent relaxes what may be found: a crash between "ACK
delete" and "INTENT open" of the same name must not find the ledger). ``thorough`` mode adds a
crash point after every op.

Durable and unsynced ops at ``c`` (POSIX, no file-system-specific ordering):

* a data op on file F (write, truncate) is durable when it was a DSYNC write, or an fsync or
  fdatasync of F, or a sync, completed after it and before ``c``;
* a directory op (create, mkdir, link, unlink, rmdir, rename) is durable when every directory
  whose entries it changes was fsynced after it and before ``c`` (fsync of a *file* does not make
  its name durable; fsync of a directory does not make its parent's entry for it durable);
* everything else before ``c`` is unsynced and may or may not be on disk; a DSYNC write in
  flight at ``c`` is unsynced too (it may be partly on disk).

A crash state = initial state + durable ops + a chosen subset of the unsynced ops, replayed in
trace order (so the writes to one file keep their order). Exploring every subset explodes, so,
following ALICE (Pillai et al., OSDI 2014), each crash point yields:

* ``all``     every unsynced op applied (what kill -9 leaves: the page cache survives),
* ``none``    none of them (only what syncs guaranteed),
* ``prefix``  each in-order prefix of the unsynced ops,
* ``omit``    all but one unsynced directory op (directory ops reordered by the disk),
* ``torn``    all, with the last unsynced write of one file torn: only its first half on disk,
* ``dirs``    every unsynced directory op but no unsynced data (a rename reaching the disk
  before the renamed file's data, the classic ext4 delayed-allocation case).

``thorough`` mode adds: crash points after every op, torn writes whose second half reads as zeros,
torn last writes of every prefix, per-file prefixes of the unsynced data (files written back
independently), every pair of directory ops left out, and every subset when at most
``exhaustive_limit`` ops are unsynced.

States with the same content (hash of the reachable tree) are checked once
(:func:`build_states` groups their origins).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .fsmodel import FS, Op


@dataclass(frozen=True)
class Candidate:
    """One way the disk may look at crash point ``crash``: the ops ``applied`` (indices, in
    order), ``torn`` = (op index, "half"|"zero") for a partly applied write, ``lost`` = the
    unsynced ops left out."""

    crash: int
    kind: str
    detail: str
    applied: tuple[int, ...]
    lost: tuple[int, ...]
    torn: tuple[int, str] | None = None

    @property
    def inflight(self) -> bool:
        """Applies (part of) the write in flight at the crash point: that write began after
        everything the workload wrote before it completed."""
        return self.crash in self.applied


@dataclass
class State:
    """One distinct disk content and every candidate that produces it."""

    digest: str
    fs: FS
    origins: list[Candidate] = field(default_factory=list)


@dataclass
class Options:
    thorough: bool = False
    exhaustive_limit: int = 10     # thorough: every subset when at most this many ops are unsynced
    max_candidates_per_point: int = 5000


def crash_points(ops: list[Op], every_op: bool = False, extra=()) -> list[int]:
    """Indices ``c`` (ops [0, c) completed): each sync op, each of ``extra`` (the positions of
    the workload's acknowledgements: a crash right after one sees it and none of the intents
    written after it) and the end; with ``every_op`` all."""
    if every_op:
        return list(range(len(ops) + 1))
    return sorted({op.idx for op in ops if op.is_sync} | {int(x) for x in extra if 0 <= x <= len(ops)} | {len(ops)})


def split(ops: list[Op], c: int) -> tuple[list[int], list[int]]:
    """(durable op indices, unsynced op indices) at crash point ``c``; both in trace order. Sync
    ops themselves are in neither (they change no content)."""
    last_sync: dict[int, int] = {}
    sync_all = -1
    for op in ops[:c]:
        if op.kind == "fsync":
            last_sync[op.ino] = op.idx
        elif op.kind == "sync":
            sync_all = op.idx
    durable, unsynced = [], []
    for op in ops[:c]:
        if op.is_data:
            ok = (op.kind == "write" and op.durable) or last_sync.get(op.ino, -1) > op.idx or sync_all > op.idx
        elif op.is_dir_op:
            ok = all(last_sync.get(d, -1) > op.idx for d in op.dirs()) or sync_all > op.idx
        else:
            continue
        (durable if ok else unsynced).append(op.idx)
    if c < len(ops) and ops[c].kind == "write":  # a DSYNC write in flight: maybe partly on disk
        unsynced.append(c)
    return durable, unsynced


def candidates(ops: list[Op], c: int, opts: Options | None = None):
    """The crash states of crash point ``c`` (see the module docstring); may repeat contents."""
    opts = opts or Options()
    durable, unsynced = split(ops, c)
    U = unsynced

    def cand(kind, detail, chosen, torn=None):
        chosen_set = set(chosen)
        applied = tuple(sorted(durable + list(chosen_set)))
        lost = tuple(i for i in U if i not in chosen_set)
        return Candidate(c, kind, detail, applied, lost, torn)

    yield cand("all", "every unsynced op applied", U)
    if not U:
        return
    yield cand("none", "no unsynced op applied", [])
    for i in range(1, len(U)):
        yield cand("prefix", f"unsynced ops up to #{U[i - 1]} applied, from #{U[i]} on lost", U[:i])
    dir_ops = [i for i in U if ops[i].is_dir_op]
    for j in dir_ops:
        yield cand("omit", f"only #{j} lost ({ops[j].desc})", [i for i in U if i != j])
    last_write: dict[int, int] = {}
    for i in U:
        if ops[i].kind == "write":
            last_write[ops[i].ino] = i
    modes = ("half", "zero") if opts.thorough else ("half",)
    for j in sorted(last_write.values()):
        for how in modes:
            yield cand("torn", f"#{j} torn ({how}: {ops[j].desc})", U, torn=(j, how))
    data_ops = [i for i in U if ops[i].is_data]
    if dir_ops and data_ops:
        yield cand("dirs", "unsynced directory ops applied, unsynced data lost", dir_ops)
    if not opts.thorough:
        return
    # -- thorough extras --------------------------------------------------------------
    n = 0
    for i in range(1, len(U) + 1):  # torn end of each prefix
        j = U[i - 1]
        if ops[j].kind == "write":
            for how in ("half", "zero"):
                yield cand("prefix-torn", f"unsynced ops up to #{j} applied, #{j} torn ({how})", U[:i], torn=(j, how))
    by_file: dict[int, list[int]] = {}
    for i in data_ops:
        by_file.setdefault(ops[i].ino, []).append(i)
    for ino, file_ops in by_file.items():  # one file's unsynced data cut short, the rest applied
        for k in range(len(file_ops)):
            keep = set(file_ops[:k])
            yield cand("file-prefix", f"data of {ops[file_ops[0]].desc.split(' [')[0]}: first {k} of "
                       f"{len(file_ops)} unsynced ops", [i for i in U if ops[i].ino != ino or not ops[i].is_data or i in keep])
    for a, b in itertools.combinations(dir_ops, 2):
        yield cand("omit2", f"#{a} and #{b} lost", [i for i in U if i not in (a, b)])
    if len(U) <= opts.exhaustive_limit:
        files = {ino: ops_ for ino, ops_ in by_file.items()}
        choices = [[("d", j, keep) for keep in (False, True)] for j in dir_ops]
        choices += [[("f", ino, k) for k in range(len(f) + 1)] for ino, f in files.items()]
        for combo in itertools.product(*choices):
            chosen = []
            for tag, key, val in combo:
                if tag == "d" and val:
                    chosen.append(key)
                elif tag == "f":
                    chosen.extend(files[key][:val])
            n += 1
            if n > opts.max_candidates_per_point:
                break
            yield cand("subset", "subset " + ",".join(f"#{i}" for i in sorted(chosen)), chosen)


def replay(initial: FS, ops: list[Op], kinds: dict[int, str], cand: Candidate) -> FS:
    fs = initial.copy()
    torn_idx, how = cand.torn if cand.torn else (-1, None)
    for i in cand.applied:
        fs.apply(ops[i], kinds, torn=how if i == torn_idx else None)
    return fs


def build_states(initial: FS, ops: list[Op], kinds: dict[int, str], opts: Options | None = None,
                 ack_positions=()) -> tuple[list[State], int]:
    """Every distinct crash state of the run, with its origins; and how many candidates were built.
    ``ack_positions``: extra crash points (see :func:`crash_points`)."""
    opts = opts or Options()
    states: dict[str, State] = {}
    total = 0
    for c in crash_points(ops, every_op=opts.thorough, extra=ack_positions):
        for cand in candidates(ops, c, opts):
            total += 1
            fs = replay(initial, ops, kinds, cand)
            digest = fs.digest()
            st = states.get(digest)
            if st is None:
                st = states[digest] = State(digest, fs)
            st.origins.append(cand)
    return list(states.values()), total
