"""record -> build -> check for one workload, and a report of what broke and why."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field

from . import workloads
from .checker import FactIndex, Violation, check_states, verify
from .fsmodel import Op
from .recorder import Recording, record
from .states import Candidate, Options, State, build_states, crash_points


@dataclass
class Finding:
    """A crash state that breaks an invariant at one of its crash points."""

    state: State
    origin: Candidate
    violations: list[Violation]
    seen: int = 0  # how many of the workload's facts the crash came after
    logs: list = field(default_factory=list)  # WARNING+ lines recovery logged on this state


@dataclass
class Result:
    workload: str
    recording: Recording
    states: list[State]
    candidates: int
    crash_points: int
    checked_origins: int
    findings: list[Finding]
    seconds: dict = field(default_factory=dict)

    @property
    def ops(self) -> list[Op]:
        return self.recording.ops

    @property
    def ok(self) -> bool:
        return not self.findings

    def stats_line(self) -> str:
        s = self.seconds
        return (f"{self.workload}: {len(self.ops)} ops, {len(self.recording.facts)} facts, "
                f"{self.crash_points} crash points, {self.candidates} candidate states, "
                f"{len(self.states)} distinct states explored ({self.checked_origins} state/crash-point "
                f"pairs verified), {len(self.findings)} violating; record {s.get('record', 0):.1f}s "
                f"build {s.get('build', 0):.1f}s check {s.get('check', 0):.1f}s")

    # -- explanations ----------------------------------------------------------------------
    def missing_sync(self, op: Op, crash: int) -> str:
        """Why an unsynced op was not durable at ``crash``: the fsync it lacked."""
        log = self.recording.log
        if op.is_dir_op:
            parts = []
            for d in op.dirs():
                later = [o.idx for o in self.ops[op.idx + 1:] if o.kind == "fsync" and o.ino == d]
                where = (f"not fsynced before the crash point (next fsync of it: #{later[0]})" if later
                         else "never fsynced after it in this run")
                parts.append(f"directory {log.path_of(d)}/ {where}")
            return "; ".join(parts)
        if op.is_data:
            later = [o.idx for o in self.ops[op.idx + 1:] if o.kind == "fsync" and o.ino == op.ino]
            return (f"file {log.path_of(op.ino)} not fsynced before the crash point"
                    + (f" (next fsync: #{later[0]})" if later else " (never fsynced after it)"))
        return ""

    def acks_before(self, fnd: Finding, n: int = 3) -> list[str]:
        """The last ``n`` acknowledgements given before the crash of ``fnd``."""
        acks = [f for f in self.recording.facts[:fnd.seen] if f.tag == "ACK"]
        return [str(f) for f in acks[-n:]]

    def unsynced_dirs(self, fnds: list[Finding]) -> list[str]:
        """For states that break only when several unsynced directory ops are lost together: the
        directories those ops changed, with the fsync each lacked."""
        dirs: dict[int, set[int]] = defaultdict(set)
        for f in fnds:
            for i in f.origin.lost:
                op = self.ops[i]
                if op.is_dir_op:
                    for d in op.dirs():
                        dirs[d].add(i)
        out = []
        for d, idxs in sorted(dirs.items(), key=lambda t: min(t[1])):
            first = self.ops[min(idxs)]
            out.append(f"{len(idxs)} unsynced op(s) in {self.recording.log.path_of(d)}/ (first {first}): "
                       + self.missing_sync(first, 0).split("; ")[[x for x in first.dirs()].index(d)])
        return out

    def culprits(self) -> dict[int, list[Finding]]:
        """Unsynced ops whose loss alone (an ``omit`` or ``torn`` state) breaks an invariant."""
        out: dict[int, list[Finding]] = defaultdict(list)
        for fnd in self.findings:
            if fnd.origin.kind == "omit" and len(fnd.origin.lost) == 1:
                out[fnd.origin.lost[0]].append(fnd)
            elif fnd.origin.kind == "torn" and fnd.origin.torn:  # everything else applied: the tear did it
                out[fnd.origin.torn[0]].append(fnd)
        return dict(out)

    def report(self, max_examples: int = 3) -> str:
        lines = [self.stats_line()]
        if self.recording.notes:
            lines += [f"  note: {n}" for n in self.recording.notes]
        if self.ok:
            lines.append("  no violations")
            return "\n".join(lines)
        by_cat: dict[str, int] = defaultdict(int)
        for fnd in self.findings:
            for viol in fnd.violations:
                by_cat[viol.category] += 1
        lines.append("  violations by category: " + ", ".join(f"{k} {n}" for k, n in sorted(by_cat.items())))
        culprits = self.culprits()
        explained = set()
        for idx in sorted(culprits):
            fnds = culprits[idx]
            op = self.ops[idx]
            first = min(fnds, key=lambda f: f.origin.crash)
            explained.update(id(f) for f in fnds)
            points = sorted({f.origin.crash for f in fnds})
            lines.append(f"  * losing op {op} alone breaks invariants at {len(points)} crash point(s) "
                         f"(first: #{first.origin.crash} {self._point(first.origin.crash)})")
            lines.append(f"      missing sync: {self.missing_sync(op, first.origin.crash)}")
            for msg in sorted({viol.message for viol in first.violations})[:max_examples]:
                lines.append(f"      - {msg}")
            for a in self.acks_before(first, 2):
                lines.append(f"      (acked before the crash: {a})")
        rest = [f for f in self.findings if id(f) not in explained]
        if rest:
            kinds = defaultdict(int)
            for f in rest:
                kinds[f.origin.kind] += 1
            lines.append(f"  * {len(rest)} violating state/crash-point pairs that no single lost op explains ("
                         + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + "); lost directory ops in them:")
            for line in self.unsynced_dirs(rest):
                lines.append(f"      {line}")
            lines.append("    e.g.:")
            for f in sorted(rest, key=lambda f: f.origin.crash)[:max_examples]:
                lost = ", ".join(str(self.ops[i]) for i in f.origin.lost[:4])
                lines.append(f"      crash #{f.origin.crash} {self._point(f.origin.crash)}; state {f.origin.kind}: "
                             f"{f.origin.detail}; lost: {lost or '-'}")
                for msg in sorted({viol.message for viol in f.violations})[:max_examples]:
                    lines.append(f"        - {msg}")
        return "\n".join(lines)

    def _point(self, c: int) -> str:
        return f"before {self.ops[c]}" if c < len(self.ops) else "at the end"

    def to_json(self) -> dict:
        return {
            "workload": self.workload, "ops": len(self.ops), "facts": len(self.recording.facts),
            "crash_points": self.crash_points, "candidates": self.candidates, "states": len(self.states),
            "verified": self.checked_origins, "seconds": self.seconds,
            "findings": [{"crash": f.origin.crash, "kind": f.origin.kind, "detail": f.origin.detail,
                          "lost": list(f.origin.lost), "violations": [v.message for v in f.violations],
                          "files": f.state.fs.listing(), "recovery_log": f.logs} for f in self.findings],
        }


def _initial_meta(rec: Recording, paths: list[str]) -> dict:
    tree = rec.log.initial.tree()
    out = {}
    for rel in paths:
        raw = tree.get(f"{workloads.DATA}/{rel}")
        try:
            out[rel] = json.loads(raw) if raw is not None else None
        except ValueError:
            out[rel] = "<unparseable>"
    return out


def fast_tmp() -> str | None:
    """A writable tmpfs (/dev/shm) to materialize states in: recovery fsyncs, and on tmpfs an
    fsync costs nothing, which makes a check about three times faster than on a disk."""
    d = "/dev/shm"
    return d if os.path.isdir(d) and os.access(d, os.W_OK) else None


def mutate(rec: Recording, keep=lambda op: True, change=lambda op: op) -> Recording:
    """A copy of ``rec`` with the ops ``keep`` rejects removed and the others passed through
    ``change`` (e.g. a DSYNC write made plain): what the run would have been with a sync missing.
    Used to show that the explorer catches a missing sync."""
    import copy
    from dataclasses import replace
    kept = [op for op in rec.ops if keep(op)]
    new_idx = {op.idx: n for n, op in enumerate(kept)}
    log = copy.copy(rec.log)
    log.ops = [replace(change(op), idx=new_idx[op.idx]) for op in kept]

    def remap(pos: int) -> int:
        return pos if pos < 0 else sum(1 for op in rec.ops[:pos] if op.idx in new_idx)
    facts = [replace(f, pos=remap(f.pos)) for f in rec.facts]
    return replace(rec, log=log, facts=facts)


def check_recording(rec: Recording, opts: Options | None = None, jobs: int = 1, spawn: bool = False,
                    max_states: int | None = None, check_dir: str | None = None, seconds: dict | None = None) -> Result:
    """Build the crash states of a recording, run recovery on each, verify the invariants."""
    opts = opts or Options()
    name = rec.workload
    t1 = time.monotonic()
    ack_positions = {f.pos for f in rec.facts if f.tag == "ACK"}
    states, ncand = build_states(rec.log.initial, rec.ops, rec.log.kinds, opts, ack_positions)
    if max_states is not None:
        states = states[:max_states]
    t2 = time.monotonic()
    wl = workloads.get(name)
    index = FactIndex(rec.facts)
    index.initial_meta = _initial_meta(rec, index.meta_paths)
    spec = index.spec(wl.config, workloads.DATA)
    base = check_dir or fast_tmp()
    cdir = tempfile.mkdtemp(prefix=f"crashstates-{name}-check-", dir=base)
    try:
        observations = check_states(states, spec, cdir, jobs=jobs, spawn=spawn)
    finally:
        shutil.rmtree(cdir, ignore_errors=True)
    t3 = time.monotonic()
    findings = []
    verified = 0
    for st, obs in zip(states, observations):
        for origin in st.origins:
            for seen in index.cuts(origin.crash, origin.inflight):
                verified += 1
                viol = verify(obs, index, seen)
                if viol:
                    findings.append(Finding(st, origin, viol, seen, obs.get("logs", [])))
                    break  # one finding per state and crash point is enough
    return Result(name, rec, states, ncand, len(crash_points(rec.ops, opts.thorough, ack_positions)), verified,
                  findings, {"record": rec.seconds, **(seconds or {}), "build": t2 - t1, "check": t3 - t2})


def explore(name: str, workdir: str | None = None, opts: Options | None = None, jobs: int = 1,
            spawn: bool = False, keep: bool = False, max_states: int | None = None,
            check_dir: str | None = None) -> Result:
    """Record workload ``name`` (in ``workdir``, a new temp dir by default), build its crash
    states, run recovery on each (materialized under ``check_dir``: /dev/shm when available), verify."""
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix=f"crashstates-{name}-")
    try:
        t0 = time.monotonic()
        rec = record(name, os.path.join(workdir, "run"))
        return check_recording(rec, opts, jobs, spawn, max_states, check_dir, {"record": time.monotonic() - t0})
    finally:
        if own and not keep:
            shutil.rmtree(workdir, ignore_errors=True)
