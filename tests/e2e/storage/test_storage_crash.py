"""Crash test: appends and cursor acks in a child process, SIGKILL at random moments, reopen.

The child writes one line per event to a log file with a single os.write: ``A <pos> <tag>``
after add_entry resolved, ``M <pos>`` / ``D <pos>`` before a cumulative / individual ack,
``P <pos>`` after a cursor persist completed. A SIGKILL can still tear the last line: Linux
copies a write into the page cache page by page and stops between pages once a fatal signal is
pending, so a line that straddles a page boundary can end short. The parent reads only lines
with their newline. After each kill the parent reopens the data dir and checks:

* every resolved append that is not acknowledged is readable, with its bytes, in order;
* the cursor restarts at or after its last reported persisted mark-delete position;
* nothing the child did not acknowledge appears acknowledged (no loss, only redelivery).
"""
import asyncio
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from minipulsar.storage import ManagedLedgerConfig, ManagedLedgerFactory, Position
from tests import ROOT
from tests.helpers import wait_for

ROUNDS = 20
CONFIG = dict(max_entries_per_ledger=200, mark_delete_rate_limit=20.0)

CHILD = r"""
import asyncio, os, random, sys
sys.path.insert(0, sys.argv[4])
from minipulsar.storage import ManagedLedgerConfig, ManagedLedgerFactory

async def main():
    data_dir, seed, log_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rnd = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    out = lambda line: os.write(fd, (line + "\n").encode())
    f = ManagedLedgerFactory(data_dir, ManagedLedgerConfig(max_entries_per_ledger=200, mark_delete_rate_limit=20.0))
    await f.start()
    ml = await f.open("crash/topic")
    cur = await ml.open_cursor("sub", "earliest")
    cur.add_persist_listener(lambda: out(f"P {cur.persisted_mark_delete_position}"))
    out("READY")
    resolved = []

    async def produce(pid):
        n = 0
        while True:
            tag = f"{seed}-{pid}-{n}"
            n += 1
            pos = await ml.add_entry(tag.encode() * rnd.randint(1, 30))
            out(f"A {pos} {tag}")
            resolved.append(pos)

    async def ack():
        while True:
            await asyncio.sleep(rnd.uniform(0.001, 0.01))  # pacing of the child's acks, not synchronisation
            if len(resolved) < 10:
                continue
            if rnd.random() < 0.2:
                pos = resolved[rnd.randrange(max(0, len(resolved) - 300), len(resolved) - 5)]
                out(f"M {pos}")
                cur.mark_delete(pos)
            else:
                picks = rnd.sample(resolved[-400:], 5)
                for pos in picks:
                    out(f"D {pos}")
                cur.delete(picks)

    await asyncio.gather(*[produce(i) for i in range(8)], ack())

asyncio.run(main())
"""


def parse_log(path):
    events = []
    with open(path) as fh:
        for line in fh:
            if not line.endswith("\n"):
                break  # torn by the kill: that event's write never finished
            parts = line.split()
            if parts and parts[0] in ("A", "M", "D", "P"):
                events.append((parts[0], Position.parse(parts[1]), parts[2] if len(parts) > 2 else None))
    return events


def run_child_and_kill(data_dir, seed, log_path, rnd):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data_dir), str(seed), str(log_path), str(ROOT)])
    def appending() -> bool:
        assert proc.poll() is None, "child died on its own"
        return os.path.exists(log_path) and os.path.getsize(log_path) > 200

    # wait until it is appending, then kill at a random moment
    wait_for(appending, "the child to log its first appends", timeout=15, interval=0.01)
    time.sleep(rnd.uniform(0.0, 0.4))  # not synchronisation: the random crash point is the thing under test
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_sigkill_loses_no_resolved_append_and_no_persisted_ack(tmp_path):
    rnd = random.Random(1234)
    data_dir = tmp_path / "data"
    tags = {}                 # position -> tag of every resolved append, all rounds
    acked_individual = set()  # every position the child acked individually
    max_cumulative = Position(-1, -1)
    prev_md = Position(-1, -1)
    total_appends = 0
    for round_no in range(ROUNDS):
        log_path = tmp_path / f"round{round_no}.log"
        await asyncio.get_running_loop().run_in_executor(
            None, run_child_and_kill, data_dir, round_no, log_path, rnd)
        events = parse_log(log_path)
        persisted = [pos for kind, pos, _ in events if kind == "P"]
        by_producer = {}
        for kind, pos, tag in events:
            if kind == "A":
                assert pos not in tags, f"position {pos} handed out twice"
                tags[pos] = tag
                by_producer.setdefault(tag.rsplit("-", 1)[0], []).append(pos)
            elif kind == "M":
                max_cumulative = max(max_cumulative, pos)
            elif kind == "D":
                acked_individual.add(pos)
        for positions in by_producer.values():  # one producer's appends resolve in order
            assert positions == sorted(positions)
        total_appends += sum(1 for e in events if e[0] == "A")

        factory = ManagedLedgerFactory(data_dir, ManagedLedgerConfig(**CONFIG))
        await factory.start()
        try:
            ml = await factory.open("crash/topic")
            cur = ml.cursors["sub"]
            md = cur.mark_delete_position
            # persisted acks survive; the cursor never goes backwards across restarts
            if persisted:
                assert md >= max(persisted), (round_no, md, max(persisted))
            assert md >= prev_md
            prev_md = md
            # nothing is acknowledged that the child did not acknowledge
            acked_max = max([max_cumulative, *acked_individual]) if acked_individual else max_cumulative
            assert md <= acked_max
            for lower, upper in cur.individually_deleted_ranges():
                for e in range(lower.entry_id + 1, upper.entry_id + 1):
                    p = Position(upper.ledger_id, e)
                    assert p in acked_individual or p <= max_cumulative, p
            # every resolved, unacknowledged append comes back (in order, with its bytes)
            got = []
            while True:
                batch = await cur.read_entries(500)
                if not batch:
                    break
                got.extend(batch)
            positions = [e.position for e in got]
            assert positions == sorted(positions)
            seen = {e.position: e.data for e in got}
            for pos, tag in tags.items():
                if not cur.is_deleted(pos):
                    assert pos in seen, f"round {round_no}: resolved append {pos} lost"
                if pos in seen:
                    data = seen[pos]
                    assert data == tag.encode() * (len(data) // len(tag)), pos
        finally:
            await factory.close()
    assert total_appends > ROUNDS * 10
