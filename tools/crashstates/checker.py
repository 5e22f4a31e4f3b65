"""Check crash states: run recovery on each in a fresh process, then test the invariants.

Observation (:func:`observe`, in a child process): open the data dir with a
``ManagedLedgerFactory`` (the workload's config, retention made unlimited so that the open itself
trims nothing and we see every entry that survived), open every ledger the workload used or that
is on disk, read all entries and the durable cursors' state, close; load each broker metadata file
the workload saved with ``MetadataStore``. A ledger the workload used that no longer exists is then
opened once more, as a broker re-creating the topic would, to see whether the new ledger comes up
with entries of the old one. Everything is returned as JSON; nothing is judged in the child.

Children come from a fork server (``python -m tools.crashstates.checker serve``): one process that
imports storage once and forks a fresh child per state (a new process, a new event loop, no state
shared with other states), so a state costs tens of milliseconds instead of an interpreter start.
``spawn=True`` starts a new interpreter per state instead.

Verification (:func:`verify`, in the parent) compares an observation with the facts the workload had
written before the crash point (see workloads.Ctx):

* recovery raised nothing (opening, reading, closing, loading metadata);
* every acknowledged entry of a live ledger is at its position with its bytes, unless every durable
  cursor found has consumed it (it may have been trimmed); every entry found is one the workload
  appended to this incarnation of the ledger (no garbage, nothing of a deleted incarnation), in
  append order;
* a ledger whose creation was acknowledged exists; one whose deletion was acknowledged does not
  (nor do its entries come back when it is created again);
* a cursor whose creation or persist was acknowledged exists, its mark-delete is at or after the
  last acknowledged persist and every individual ack persisted then is still acknowledged; it
  acknowledges no entry that no consumer acknowledged before the crash;
* each metadata file holds the last acknowledged save or a later one started before the crash.
"""
from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field

from .recorder import REPO, Fact

TIMEOUT = 30.0


# ----------------------------------------------------------------------------------------------
# observation (child side)
# ----------------------------------------------------------------------------------------------
class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record):
        if len(self.lines) < 30:
            self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}"[:300])


async def _read_ledger(ml) -> dict:
    from minipulsar.storage import Position
    out = {"entries": [], "cursors": {}}
    try:
        pos = Position(-1, -1)
        while True:
            batch = await ml.read_entries(pos, 1000, max_bytes=1 << 40)
            if not batch:
                break
            out["entries"].extend([e.position.ledger_id, e.position.entry_id, e.data.hex()] for e in batch)
            last = batch[-1].position
            pos = Position(last.ledger_id, last.entry_id + 1)
    except Exception as exc:
        out["error"] = f"reading entries: {type(exc).__name__}: {exc}"
    for name, cur in sorted(ml.cursors.items()):
        md = cur.mark_delete_position
        out["cursors"][name] = {
            "md": [md.ledger_id, md.entry_id],
            "ranges": [[lo.ledger_id, lo.entry_id, up.ledger_id, up.entry_id] for lo, up in cur.individually_deleted_ranges()],
        }
    lac = ml.last_confirmed_position
    out["lac"] = [lac.ledger_id, lac.entry_id]
    return out


async def _observe(data_dir: str, spec: dict) -> dict:
    from minipulsar.broker.metadata_store import MetadataStore
    from minipulsar.storage import ManagedLedgerConfig, ManagedLedgerFactory
    obs: dict = {"ledgers": {}, "missing": [], "probe": {}, "metadata": {}, "errors": []}
    for rel in spec.get("metadata", []):
        path = os.path.join(data_dir, rel)
        try:
            exists = os.path.exists(path)
            store = MetadataStore(path)
            store.load()
            obs["metadata"][rel] = {"exists": exists, "data": store.data}
        except Exception as exc:
            obs["metadata"][rel] = {"error": f"{type(exc).__name__}: {exc}"}
    cfg = dict(spec.get("config", {}))
    cfg.update(retention_time_minutes=-1, retention_size_mb=-1)  # observe: the open trims nothing
    factory = ManagedLedgerFactory(data_dir, ManagedLedgerConfig(**cfg))
    try:
        await factory.start()
    except Exception as exc:
        obs["errors"].append(f"factory.start: {type(exc).__name__}: {exc}")
        return obs
    try:
        names = factory.list_names()
        obs["names_on_disk"] = names
        for name in sorted(set(names) | set(spec.get("ledgers", []))):
            if not factory.exists(name):
                obs["missing"].append(name)
                continue
            try:
                obs["ledgers"][name] = await _read_ledger(await factory.open(name))
            except Exception as exc:
                obs["errors"].append(f"opening ledger {name}: {type(exc).__name__}: {exc}")
        for name in obs["missing"]:  # a broker creating the topic again
            try:
                obs["probe"][name] = await _read_ledger(await factory.open(name))
            except Exception as exc:
                obs["errors"].append(f"re-creating ledger {name}: {type(exc).__name__}: {exc}")
    finally:
        try:
            await factory.close()
        except Exception as exc:
            obs["errors"].append(f"factory.close: {type(exc).__name__}: {exc}")
    return obs


def observe(data_dir: str, spec: dict) -> dict:
    """Run recovery on ``data_dir`` and describe what it holds (call in a fresh process)."""
    import asyncio
    cap = _Capture()
    root = logging.getLogger()
    root.addHandler(cap)
    root.setLevel(logging.WARNING)
    try:
        obs = asyncio.run(_observe(data_dir, spec))
    except BaseException as exc:  # anything escaping is a failed recovery
        obs = {"errors": [f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"]}
    obs["logs"] = cap.lines
    return obs


def _serve() -> int:
    """Fork server: one JSON request per stdin line ({"dir", "spec"}), one JSON answer per line."""
    import minipulsar.broker.metadata_store  # noqa: F401  (imported once, inherited by every child)
    import minipulsar.storage  # noqa: F401
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    out = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: one recovery, then _exit
            os.close(r)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)  # nothing the storage code prints may reach the answer stream
            os.dup2(devnull, 2)
            try:
                data = json.dumps(observe(req["dir"], req["spec"])).encode()
            except BaseException as exc:
                data = json.dumps({"errors": [f"observer crashed: {exc!r}"]}).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
            os._exit(0)
        os.close(w)
        chunks = []
        deadline = time.monotonic() + req.get("timeout", TIMEOUT)
        timed_out = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([r], [], [], left)
            if not ready:
                continue
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(r)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        if timed_out:
            answer = {"errors": [f"recovery did not finish within {req.get('timeout', TIMEOUT)} s (hung)"]}
        elif not chunks:
            answer = {"errors": [f"recovery process died (wait status {status})"]}
        else:
            answer = json.loads(b"".join(chunks))
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


class ForkServer:
    def __init__(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-m", "tools.crashstates.checker", "serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)

    def check(self, data_dir: str, spec: dict) -> dict:
        self.proc.stdin.write(json.dumps({"dir": data_dir, "spec": spec}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the checker's fork server died")
        return json.loads(line)

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(10)
        except Exception:
            self.proc.kill()


def check_spawn(data_dir: str, spec: dict) -> dict:
    """One new interpreter for one state (slow; for doubting the fork server)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.run([sys.executable, "-m", "tools.crashstates.checker", "observe", data_dir, json.dumps(spec)],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"errors": [f"recovery did not finish within {TIMEOUT} s (hung)"]}
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"errors": [f"recovery process failed ({proc.returncode}): {proc.stderr[-1500:]}"]}
    return json.loads(proc.stdout.splitlines()[-1])


def check_states(states, spec: dict, workdir: str, jobs: int = 1, spawn: bool = False) -> list[dict]:
    """Materialize each state under ``workdir`` and observe it; returns observations in order."""
    results: list[dict | None] = [None] * len(states)
    lock = threading.Lock()
    todo = list(range(len(states)))

    def worker(slot: int):
        server = None if spawn else ForkServer()
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    i = todo.pop(0)
                d = os.path.join(workdir, f"state-{slot}")
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                states[i].fs.materialize(d)
                data_dir = os.path.join(d, spec["data"])
                results[i] = check_spawn(data_dir, spec) if spawn else server.check(data_dir, spec)
                shutil.rmtree(d, ignore_errors=True)
        finally:
            if server is not None:
                server.close()

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


# ----------------------------------------------------------------------------------------------
# verification (parent side)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Violation:
    category: str
    message: str


def _t(p) -> tuple[int, int]:
    return (int(p[0]), int(p[1]))


def _deleted(cur: dict, p: tuple[int, int]) -> bool:
    if p <= _t(cur["md"]):
        return True
    return any((lo_l, lo_e) < p <= (up_l, up_e) for lo_l, lo_e, up_l, up_e in cur["ranges"])


@dataclass
class FactIndex:
    """The facts of one recording, pre-sorted for :func:`verify`."""

    facts: list[Fact]
    initial_meta: dict = field(default_factory=dict)   # metadata rel path -> content at the start (None: absent)

    def __post_init__(self):
        self.ledgers = sorted({f.f["ledger"] for f in self.facts if "ledger" in f.f})
        self.meta_paths = sorted({f.f["path"] for f in self.facts if f.kind == "meta"})

    def cuts(self, c: int, inflight: bool = False) -> range:
        """Fact prefixes (lengths) a crash at point ``c`` may have seen: every fact written before op
        ``c - 1`` completed, plus any prefix of those written between ops ``c - 1`` and ``c``. With
        ``inflight`` (the state holds part of op ``c``) only all of them: op ``c`` may have been
        started by the last of them (an INTENT add before the append's write)."""
        lo = sum(1 for f in self.facts if f.pos < c)
        hi = sum(1 for f in self.facts if f.pos <= c)
        return range(hi, hi + 1) if inflight else range(lo, hi + 1)

    def spec(self, config: dict, data: str) -> dict:
        return {"config": config, "ledgers": self.ledgers, "metadata": self.meta_paths, "data": data}


def verify(obs: dict, index: FactIndex, seen: int) -> list[Violation]:
    """Violations of the invariants by observation ``obs`` for a crash after the first ``seen``
    facts were written (see FactIndex.cuts)."""
    v: list[Violation] = []
    for err in obs.get("errors", []):
        v.append(Violation("recovery-error", f"recovery failed: {err.splitlines()[0] if err else err}"))
    F = index.facts[:seen]
    for name in index.ledgers:
        _verify_ledger(v, obs, index, F, name)
    for rel in index.meta_paths:
        _verify_metadata(v, obs, F, index, rel)
    return v


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _verify_ledger(v, obs, index: FactIndex, F: list[Fact], name: str) -> None:
    mine = [f for f in F if f.f.get("ledger") == name]
    allmine = [f for f in index.facts if f.f.get("ledger") == name]
    acked_deletes = [i for i, f in enumerate(mine) if f.tag == "ACK" and f.kind == "delete"]
    start = acked_deletes[-1] + 1 if acked_deletes else 0
    cur_facts = mine[start:]
    old_data = {f.f["data"] for f in mine[:start] if f.kind == "add"}
    delete_in_flight = any(f.tag == "INTENT" and f.kind == "delete" for f in cur_facts)
    recreating = any(f.tag == "INTENT" and f.kind == "open" for f in cur_facts)
    led = obs.get("ledgers", {}).get(name)
    short = _short(name)
    if acked_deletes and not recreating:
        del_fact = mine[acked_deletes[-1]]
        if led is not None:
            v.append(Violation("ledger-resurrected",
                               f"ledger {short} deleted (ACK #{del_fact.id}) is back with {len(led['entries'])} entries"))
        probe = obs.get("probe", {}).get(name)
        if probe and probe["entries"]:
            v.append(Violation("ledger-resurrected",
                               f"ledger {short} deleted (ACK #{del_fact.id}): creating it again brings back "
                               f"{len(probe['entries'])} of its old entries"))
        return
    if delete_in_flight:
        return  # anything between the old and no ledger is allowed; garbage is caught below anyway
    required = [f for f in cur_facts if f.tag == "ACK" and f.kind in ("open", "add", "cursor_open", "persisted")]
    if led is None:
        if required:
            acked = sum(1 for f in cur_facts if f.tag == "ACK" and f.kind == "add")
            v.append(Violation("ledger-missing", f"ledger {short} is missing (created, ACK #{required[0].id}; "
                               f"{acked} acknowledged entries and its cursors lost)"))
        probe = obs.get("probe", {}).get(name)
        if probe and probe["entries"] and old_data & {e[2] for e in probe["entries"]}:
            v.append(Violation("ledger-resurrected", f"ledger {short} re-created with entries of its deleted incarnation"))
        return
    if led.get("error"):
        v.append(Violation("recovery-error", f"ledger {short}: {led['error']}"))
    # -- entries --------------------------------------------------------------------------
    intended = {}  # data hex -> order of its append intent, this incarnation, before the crash
    for f in cur_facts:
        if f.tag == "INTENT" and f.kind == "add":
            intended.setdefault(f.f["data"], len(intended))
    found = {(e[0], e[1]): e[2] for e in led["entries"]}
    cursors = led.get("cursors", {})
    dropped = set()  # cursors whose deletion was acknowledged: they no longer hold back trimming
    for f in cur_facts:
        if f.kind == "cursor_delete" and f.tag == "ACK":
            dropped.add(f.f["cursor"])
        elif f.kind == "cursor_open" and f.tag == "INTENT":
            dropped.discard(f.f["cursor"])
    floor = min((_t(cu["md"]) for n, cu in cursors.items() if n not in dropped), default=None)
    for f in cur_facts:
        if f.tag != "ACK" or f.kind != "add":
            continue
        p = _t(f.f["pos"])
        if p not in found:
            if floor is None or p > floor:
                v.append(Violation("entry-lost", f"{short}: acknowledged entry {p[0]}:{p[1]} (ACK #{f.id}) is missing"))
        elif found[p] != f.f["data"]:
            v.append(Violation("entry-corrupt", f"{short}: entry {p[0]}:{p[1]} (ACK #{f.id}) has other bytes"))
    last_order = -1
    for l, e, data in led["entries"]:
        if data in intended:
            if intended[data] < last_order:
                v.append(Violation("entry-order", f"{short}: entry {l}:{e} is out of append order"))
            last_order = max(last_order, intended[data])
        elif data in old_data:
            v.append(Violation("ledger-resurrected", f"{short}: entry {l}:{e} belongs to the deleted incarnation"))
        else:
            v.append(Violation("entry-garbage", f"{short}: entry {l}:{e} holds bytes nobody appended ({data[:40]}...)"))
    # -- cursors --------------------------------------------------------------------------
    names = sorted({f.f["cursor"] for f in cur_facts if "cursor" in f.f} | set(cursors))
    opened_md = [_t(f.f["md"]) for f in allmine if f.tag == "ACK" and f.kind == "cursor_open"]
    for cname in names:
        cf = [f for f in cur_facts if f.f.get("cursor") == cname]
        deletes = [i for i, f in enumerate(cf) if f.tag == "ACK" and f.kind == "cursor_delete"]
        if deletes:
            reopen = any(f.kind == "cursor_open" and f.tag == "INTENT" for f in cf[deletes[-1] + 1:])
            if cname in cursors and not reopen:
                v.append(Violation("cursor-resurrected", f"{short}: cursor {cname} deleted (ACK #{cf[deletes[-1]].id}) is back"))
            cf = cf[deletes[-1] + 1:]
        if any(f.tag == "INTENT" and f.kind == "cursor_delete" for f in cf):
            continue  # a deletion in flight: the cursor may be there or not
        persisted = [f for f in cf if f.tag == "ACK" and f.kind in ("cursor_open", "persisted")]
        obs_cur = cursors.get(cname)
        if obs_cur is None:
            if persisted:
                v.append(Violation("cursor-lost", f"{short}: cursor {cname} is missing (persisted, ACK #{persisted[-1].id})"))
            continue
        md = _t(obs_cur["md"])
        lac = _t(led.get("lac", (-1, -1)))
        if md[1] >= 0 and md > lac:
            v.append(Violation("cursor-ahead", f"{short}: cursor {cname} mark-delete {md[0]}:{md[1]} names an entry "
                               f"after the last one recovered ({lac[0]}:{lac[1]})"))
        if persisted:
            last = persisted[-1]
            if md < _t(last.f["md"]):
                v.append(Violation("cursor-behind", f"{short}: cursor {cname} mark-delete {md[0]}:{md[1]} is behind the "
                                   f"persisted {last.f['md'][0]}:{last.f['md'][1]} (ACK #{last.id})"))
            known = sorted({_t(f.f["pos"]) for f in allmine if f.tag == "ACK" and f.kind == "add"} | set(found))
            for lo_l, lo_e, up_l, up_e in last.f.get("ranges", []):
                for p in known:
                    if (lo_l, lo_e) < p <= (up_l, up_e) and not _deleted(obs_cur, p):
                        v.append(Violation("cursor-behind", f"{short}: cursor {cname} lost the persisted individual ack "
                                           f"of {p[0]}:{p[1]} (ACK #{last.id})"))
        consumed_md = [_t(f.f["md"]) for f in cf if f.kind == "consume" and f.f.get("md")] + opened_md
        consumed_pos = {_t(p) for f in cf if f.kind == "consume" for p in f.f.get("positions", [])}
        top = max(consumed_md, default=(-2, -2))
        for p in sorted(found):
            if _deleted(obs_cur, p) and p > top and p not in consumed_pos:
                v.append(Violation("cursor-ahead", f"{short}: cursor {cname} acknowledges {p[0]}:{p[1]}, which no "
                                   "consumer acknowledged before the crash"))


def _verify_metadata(v, obs, F: list[Fact], index: FactIndex, rel: str) -> None:
    intents = [f for f in F if f.kind == "meta" and f.tag == "INTENT" and f.f["path"] == rel]
    acks = [f for f in F if f.kind == "meta" and f.tag == "ACK" and f.f["path"] == rel]
    last = len(acks) - 1  # the i-th ACK of a path acknowledges its i-th INTENT (saves are sequential)
    allowed = [] if acks else [index.initial_meta.get(rel)]
    allowed += [f.f["data"] for f in intents[max(last, 0):]]
    got = obs.get("metadata", {}).get(rel)
    if got is None:
        return
    if "error" in got:
        v.append(Violation("metadata-corrupt", f"metadata {rel}: {got['error']}"))
        return
    value = got["data"] if got["exists"] else None
    if value not in allowed:
        want = f"the save acknowledged as ACK #{acks[last].id} or a later one" if acks else "its initial content"
        found = "no file" if value is None else f"content of another save ({len(json.dumps(value))} bytes)"
        v.append(Violation("metadata-lost", f"metadata {rel}: found {found}, expected {want}"))


def main(argv: list[str]) -> int:
    if argv and argv[0] == "serve":
        return _serve()
    if len(argv) == 3 and argv[0] == "observe":
        print(json.dumps(observe(argv[1], json.loads(argv[2]))))
        return 0
    print("usage: python -m tools.crashstates.checker serve | observe <data dir> <spec json>", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
