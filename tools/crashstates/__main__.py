"""Command line: ``python -m tools.crashstates [workload ...] [options]`` from the repository root,
or ``python tools/crashstates [...]`` from anywhere.

Records each workload under strace, builds its crash states, runs recovery on each and prints what
was explored and every invariant broken (exit 1 when something broke). See README.md here.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

if not __package__:  # run by path (python tools/crashstates): import the package from the checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    __package__ = "tools.crashstates"

from tools.crashstates import workloads  # noqa: E402
from tools.crashstates.explore import explore  # noqa: E402
from tools.crashstates.states import Options  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.crashstates", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workloads", nargs="*", help=f"default: all ({', '.join(sorted(workloads.REGISTRY))})")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--thorough", action="store_true",
                   help="the longer run: a crash point after every op, zero-filled and prefix tears, per-file "
                        "write-back orders, pairs of lost directory ops, every subset of small unsynced sets")
    p.add_argument("--exhaustive-limit", type=int, default=10,
                   help="--thorough: enumerate every subset when at most this many ops are unsynced (10)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="recoveries run in parallel (1)")
    p.add_argument("--spawn", action="store_true",
                   help="a new interpreter per state instead of forking from a server (slow)")
    p.add_argument("--max-states", type=int, default=None, help="check only the first N distinct states")
    p.add_argument("--workdir", default=None, help="record here (kept); default: a temp dir, removed")
    p.add_argument("--check-dir", default=None, help="materialize states under this dir (default /dev/shm)")
    p.add_argument("--examples", type=int, default=3, help="examples printed per problem (3)")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--ops", action="store_true", help="print the recorded ops and facts")
    args = p.parse_args(argv)
    if args.list:
        for name in sorted(workloads.REGISTRY):
            print(f"{name}: {workloads.get(name).description}")
        return 0
    names = args.workloads or sorted(workloads.REGISTRY)
    opts = Options(thorough=args.thorough, exhaustive_limit=args.exhaustive_limit)
    failed = False
    out = []
    t0 = time.monotonic()
    for name in names:
        workdir = os.path.join(args.workdir, name) if args.workdir else None
        if workdir:
            os.makedirs(workdir, exist_ok=True)
        res = explore(name, workdir=workdir, opts=opts, jobs=args.jobs, spawn=args.spawn,
                      max_states=args.max_states, check_dir=args.check_dir)
        if args.ops:
            facts = sorted(res.recording.facts, key=lambda f: f.pos)
            fi = 0
            for op in res.ops + [None]:
                limit = op.idx if op is not None else 1 << 60
                while fi < len(facts) and facts[fi].pos <= limit:
                    print(f"    {facts[fi]}")
                    fi += 1
                if op is not None:
                    print(f"  {op}")
        print(res.report(args.examples))
        print(flush=True)
        failed = failed or not res.ok
        out.append(res.to_json())
    print(f"total {time.monotonic() - t0:.1f}s; distinct states explored: "
          + ", ".join(f"{r['workload']} {r['states']}" for r in out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
