"""What a ledger's share of a group commit costs the event loop, in the storage alone (run by hand).

    python bench/ledger_shares.py                                  # 1 and 1,000 ledgers
    python bench/ledger_shares.py --cases 1:1000 1000:1000 --seconds 5 --rounds 3

A case L:N opens L managed ledgers (each with a durable cursor and an entry listener, as a topic
with a subscription has) on one factory, synced (journalSyncData), on uvloop with the broker's
collector settings. It then appends rounds of N entries of 100 B spread round-robin over the
ledgers, with ManagedLedger.append as the broker's publish path calls it, and waits for each
round to be durable: 1:1000 is one share of 1,000 entries a group, 1000:1000 a thousand shares of
one entry. Each case runs in a fresh process, the cases alternate, and the medians over rounds
are printed.

Prints, per case, entries a second and the event loop's CPU per entry (its thread's CPU time, so
the journal and ledger storage threads are not in it), of which the append calls, and the rest per
share (submitting the group, the journal's report: the entry listeners and each share's
callbacks, the ledger storage's progress). What grows from 1:1000 to 1000:1000 is the cost of a
share. A small group (a case with N in the tens or hundreds) is written by the loop itself when
the journal thread is idle (storage.journal), so its rest holds that synced write too.
bench/many_topics.py measures the same through the broker, with the official client.

Counts instead of times, which the machine's load does not change: run one case for an exact
number of rounds under valgrind's callgrind, once with 0 measured rounds and once with R, and
divide the difference of the event loop's thread (part 1 of --separate-threads) by R x N:

    valgrind --tool=callgrind --separate-threads=yes --cache-sim=yes --D1=32768,8,64 \
        --I1=32768,8,64 --LL=1048576,8,64 python bench/ledger_shares.py --one 1000:1000 --exact-rounds 20

(--LL models the 1 MiB L2 of the processor: the shared L3 is the noisy neighbours' too).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minipulsar.cli.broker import tune_garbage_collector  # noqa: E402
from minipulsar.cli.runtime import install_uvloop  # noqa: E402
from minipulsar.storage import ManagedLedgerConfig, ManagedLedgerFactory  # noqa: E402

PAYLOAD = b"x" * 100
WARM_UP_ROUNDS = 20


async def one_case(ledgers: int, per_round: int, seconds: float, exact_rounds: int | None = None) -> dict:
    """Figures of one L:N case in this process (see the module's docstring); exact_rounds: that
    many measured rounds instead of `seconds` of them."""
    with tempfile.TemporaryDirectory() as folder:
        factory = ManagedLedgerFactory(folder, ManagedLedgerConfig(sync_data=True))
        await factory.start()
        try:
            opened = [await factory.open(f"bench/shares-{i}") for i in range(ledgers)]
            for ledger in opened:
                await ledger.open_cursor("durable", "earliest")
                ledger.add_entry_listener(lambda: None)
            appends = [ledger.append for ledger in opened]
            tune_garbage_collector()
            for _ in range(WARM_UP_ROUNDS):
                await one_round(appends, per_round)
            entries, append_cpu = 0, 0.0
            start, cpu0 = time.perf_counter(), time.thread_time()
            while (entries < exact_rounds * per_round if exact_rounds is not None
                   else time.perf_counter() - start < seconds):
                append_cpu += await one_round(appends, per_round)
                entries += per_round
            cpu, elapsed = time.thread_time() - cpu0, time.perf_counter() - start
        finally:
            await factory.close()
    per_entry = 1e6 / max(entries, 1)  # no entries: the --exact-rounds 0 baseline of a count
    return {"rate": entries / elapsed, "loop_us": cpu * per_entry, "append_us": append_cpu * per_entry}


async def one_round(appends: list, per_round: int) -> float:
    """Append per_round entries round-robin and wait until they are durable; returns the loop's
    CPU seconds in the append calls."""
    cpu0 = time.thread_time()
    durable = {appends[k % len(appends)](PAYLOAD)[1] for k in range(per_round)}  # one per share
    cpu = time.thread_time() - cpu0
    await all_settled(durable)
    return cpu


def all_settled(durable: set) -> asyncio.Future:
    """A future done once every one of durable is: a done-callback on each, as a producer adds one
    per share of a group (awaiting each would cost a task or a waiter of its own)."""
    everything = asyncio.get_running_loop().create_future()
    left = len(durable)

    def settled(_one) -> None:
        nonlocal left
        left -= 1
        if not left:
            everything.set_result(None)

    for one in durable:
        one.add_done_callback(settled)
    return everything


def run_case(case: str, seconds: float) -> dict:
    """One case in a fresh interpreter (no objects or caches left over from another case)."""
    out = subprocess.run([sys.executable, __file__, "--one", case, "--seconds", str(seconds)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["1:1000", "1000:1000"],
                        help="L:N, L ledgers with rounds of N entries")
    parser.add_argument("--seconds", type=float, default=4.0, help="measured seconds per case and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one", metavar="L:N", help="one case in this process, its figures as JSON")
    parser.add_argument("--exact-rounds", type=int, metavar="R",
                        help="with --one: R measured rounds, not --seconds of them (for a simulator)")
    args = parser.parse_args()
    if args.one:
        ledgers, per_round = (int(x) for x in args.one.split(":"))
        install_uvloop()
        print(json.dumps(asyncio.run(one_case(ledgers, per_round, args.seconds, args.exact_rounds))))
        return
    print("$ python bench/ledger_shares.py " + shlex.join(sys.argv[1:]), flush=True)
    results: dict[str, list[dict]] = {case: [] for case in args.cases}
    for round_ in range(args.rounds):
        for case in args.cases:
            figures = run_case(case, args.seconds)
            results[case].append(figures)
            print(f"round {round_ + 1} {case:>10s}  {figures['rate']:9,.0f} entries/s  loop {figures['loop_us']:6.2f} µs"
                  f" an entry, of which appends {figures['append_us']:5.2f}", flush=True)
    print("\nmedians over rounds:")
    for case, runs in results.items():
        loop, append = (statistics.median(r[key] for r in runs) for key in ("loop_us", "append_us"))
        ledgers, per_round = (int(x) for x in case.split(":"))
        shares = min(ledgers, per_round)
        print(f"{case:>10s}  {statistics.median(r['rate'] for r in runs):9,.0f} entries/s  loop {loop:6.2f} µs an entry:"
              f" appends {append:5.2f}, the rest {loop - append:5.2f} ({(loop - append) * per_round / shares:6.2f} µs a share)")


if __name__ == "__main__":
    main()
