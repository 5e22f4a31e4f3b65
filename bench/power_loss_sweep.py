"""Power loss at every mutating file operation of a broker run, one run per cut (minutes, not a test).

    python bench/power_loss_sweep.py [--restart] [--torn] [--only 3,7] [--premade LAYOUT|none]

One run = a fresh faultfs; the first-boot directories made durable (default; `--premade none`
leaves the first-boot bug in); with --restart, a first broker run (subscription + 6 messages,
clean stop) outside the sweep; then a broker whose N-th mutating operation under data/ is trapped
(before it is applied) while it boots, a subscription is created and 10 messages are sent
asynchronously; SIGKILL, power loss (--torn: torn writes), restart, and every acknowledged message
must come back in order. Prints one line per cut: the op, how many were acknowledged, ok/FAIL.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/ and tools/ are not installed: import them from the checkout

from tools.faultfs.control import FaultFS  # noqa: E402

from minipulsar.launcher import free_port  # noqa: E402
from tests.e2e.storage.broker_on_faultfs import (AsyncProducer, BrokerOnFaultFS, check_acked_survived,  # noqa: E402
                                                 consume_all, produce, subscribe)
from tests.e2e.storage.test_storage_power_loss import LAYOUT, make_durable  # noqa: E402

MUTATING = {"create", "mknod", "mkdir", "write", "truncate", "fallocate", "fsync", "fdatasync", "fsyncdir",
            "rename", "unlink", "rmdir", "link"}
TOPIC = "persistent://public/default/sweep"


def mutations(ffs) -> int:
    return sum(n for op, n in ffs.stats()["ops"].items() if op in MUTATING)


def run(cut: int, args) -> tuple:
    logs = Path(tempfile.mkdtemp(prefix="sweep-"))
    with FaultFS() as ffs:
        broker = BrokerOnFaultFS(ffs, logs, env={"MINIPULSAR_managedLedgerMaxEntriesPerLedger": "4"})
        try:
            return _run(ffs, broker, logs, cut, args)
        finally:  # whatever happened, no broker outlives its mount
            broker.kill_for_cleanup()


def _run(ffs, broker: BrokerOnFaultFS, logs: Path, cut: int, args) -> tuple:
    make_durable(ffs.mountpoint, () if args.premade == "none" else LAYOUT)
    prior: list[bytes] = []
    if args.restart:
        broker.start()
        subscribe(broker.url, TOPIC)
        prior = produce(broker.url, TOPIC, 6, prefix="p")
        broker.stop()
    base = mutations(ffs)
    if cut:
        ffs.trap("any", "data/*", nth=cut)
    holder: dict = {}
    stop = threading.Event()

    def client_side(url: str):  # blocks wherever the freeze catches the broker; a daemon thread
        while not broker.ready():  # the first boot's readiness; `stop` is checked right after
            if stop.is_set() or broker.proc.poll() is not None:
                return
            time.sleep(0.05)
        if stop.is_set():
            return
        subscribe(url, TOPIC)  # `url` keeps the first port: never reaches the restarted broker
        if not stop.is_set():
            holder["producer"] = AsyncProducer(url, TOPIC)
            holder["producer"].send(10)

    broker.start(wait=False)  # the cut may come in the middle of the boot
    threading.Thread(target=client_side, args=(broker.url,), daemon=True).start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not ffs.stats()["traps_fired"]:
        p = holder.get("producer")
        if p is not None and len(p.acked) + len(p.failed) == 10:
            break
        time.sleep(0.02)
    fired = ffs.stats()["traps_fired"]
    total = mutations(ffs) - base
    stop.set()
    p = holder.get("producer")
    acked, sent = prior + list(p.acked if p else []), prior + list(p.sent if p else [])
    report = broker.power_loss(torn=args.torn)
    ffs.clear()  # a cut past the end of this run left its trap armed: it must not stop the restart
    if p is not None:
        p.close()
    # New ports: a client call still pending in the thread above must not reach the restart.
    broker.port, broker.web_port = free_port(), free_port()
    try:
        broker.start()
        check_acked_survived(acked, sent, consume_all(broker.url, TOPIC))
        verdict = "ok"
    except Exception as exc:  # noqa: BLE001 - reported, the sweep goes on
        verdict = f"FAIL {str(exc)[:300]} (logs {logs})"
    what = f"{fired[0]['op']} {fired[0]['path']}" if fired else "no cut"
    return total, what, len(acked), verdict, report["lost_paths"][:4]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--restart", action="store_true")
    ap.add_argument("--torn", action="store_true")
    ap.add_argument("--premade", choices=("layout", "none"), default="layout")
    ap.add_argument("--only", help="comma-separated cut numbers (0: no cut, the power goes after the run)")
    args = ap.parse_args()
    if args.only:
        cuts = [int(x) for x in args.only.split(",")]
    else:
        total = run(0, args)[0]
        print(f"{total} mutating operations without a cut", flush=True)
        cuts = range(1, total + 1)
    failures = 0
    for cut in cuts:
        total, what, acked, verdict, lost = run(cut, args)
        failures += verdict != "ok"
        print(f"cut {cut:3d}: {what:90.90s} acked {acked:2d}  {verdict}  lost {lost}", flush=True)
    print(f"{len(cuts)} cuts, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
