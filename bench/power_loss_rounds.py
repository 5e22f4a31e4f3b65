"""Power cuts under load: rounds of produce + consume + power loss on faultfs, counting what was
acknowledged, lost (must be 0) and redelivered (at-least-once allows it).

    python bench/power_loss_rounds.py                   # 10 rounds of 2 cuts, 3-6 s of traffic each
    python bench/power_loss_rounds.py --rounds 20 --cuts 3 --torn --seed 7

Each round: a fresh faultfs (tools/faultfs) mounted, a broker with its data dir on it; then, per
cut: a producer sends unbatched messages with send_async (receipts recorded) while a consumer of
a durable subscription receives and acknowledges each message (acks recorded), for a random
3-6 s (retention unlimited, so consumed messages stay to be checked); then SIGKILL and a power loss (with --torn, each file's last unsynced write torn); the
broker restarts on the same mount. After the last cut a reader reads the whole topic: every
message that got a receipt must be there, in send order (lost = 0), and the subscription's
redeliveries (messages acknowledged before a cut and delivered again after it) are counted.
Prints one line per round and the totals, with this command.
"""
from __future__ import annotations

import argparse
import random
import shlex
import sys
import tempfile
import threading
import time
from pathlib import Path

import pulsar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/ and tools/ are not installed: import them from the checkout

from tests.e2e.storage.broker_on_faultfs import SUBSCRIPTION, BrokerOnFaultFS, client, read_all, subscribe  # noqa: E402
from tools.faultfs.control import FaultFS  # noqa: E402

TOPIC = "persistent://public/default/rounds"


class Traffic:
    """A producer sending as fast as receipts allow (up to `window` in flight) and a consumer
    acknowledging every message, on their own threads, until stop()."""

    def __init__(self, url: str, prefix: str, window: int = 500):
        self.sent: list[bytes] = []
        self.acked: list[bytes] = []  # receipts
        self.consumed: list[bytes] = []  # delivered and acknowledged by the consumer
        self._stop = threading.Event()
        self._slots = threading.Semaphore(window)
        self._client = client(url)
        self._producer = self._client.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=0)
        self._consumer = self._client.subscribe(TOPIC, SUBSCRIPTION, initial_position=pulsar.InitialPosition.Earliest)
        self._threads = [threading.Thread(target=self._produce, args=(prefix,), daemon=True),
                         threading.Thread(target=self._consume, daemon=True)]
        for thread in self._threads:
            thread.start()

    def _produce(self, prefix: str) -> None:
        n = 0
        while not self._stop.is_set():
            if not self._slots.acquire(timeout=0.1):
                continue
            payload = f"{prefix}-{n:07d}".encode()
            n += 1
            self.sent.append(payload)

            def done(result, _id, payload=payload):
                if result == pulsar.Result.Ok:
                    self.acked.append(payload)
                self._slots.release()
            try:
                self._producer.send_async(payload, done)
            except pulsar.PulsarException:
                return  # the broker is gone

    def _consume(self) -> None:
        while not self._stop.is_set():
            try:
                message = self._consumer.receive(100)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                return
            try:
                self._consumer.acknowledge(message)
            except pulsar.PulsarException:
                return
            self.consumed.append(message.data())

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        try:
            self._client.close()
        except pulsar.PulsarException:  # the broker is gone
            pass


def one_round(index: int, args, rng: random.Random) -> dict:
    logs = Path(tempfile.mkdtemp(prefix=f"rounds-{index}-"))
    with FaultFS() as ffs:
        # Unlimited retention: what the consumer acknowledged stays readable, so the final read
        # can check every acknowledged message (consumed ledgers would be trimmed otherwise).
        broker = BrokerOnFaultFS(ffs, logs, env={"MINIPULSAR_defaultRetentionTimeInMinutes": "-1",
                                                 "MINIPULSAR_defaultRetentionSizeInMB": "-1"})
        try:
            broker.start()
            subscribe(broker.url, TOPIC)
            sent, acked, consumed = [], [], []
            for cut in range(args.cuts):
                traffic = Traffic(broker.url, f"r{index}c{cut}")
                deadline = time.monotonic() + rng.uniform(args.min_seconds, args.max_seconds)
                while time.monotonic() < deadline:
                    time.sleep(0.05)  # the traffic runs on its threads for a random while
                broker.power_loss(torn=args.torn, seed=rng.randrange(1 << 30))
                traffic.stop()
                sent, acked, consumed = sent + traffic.sent, acked + traffic.acked, consumed + traffic.consumed
                broker.start()
            found = read_all(broker.url, TOPIC)
            check_survivors(acked, sent, found)
            redelivered = redeliveries(broker.url, consumed)
        finally:
            broker.kill_for_cleanup()
    return {"sent": len(sent), "acked": len(acked), "found": len(found), "lost": 0,
            "consumed": len(consumed), "redelivered": redelivered}


def check_survivors(acked: list[bytes], sent: list[bytes], found: list[bytes]) -> None:
    """Every message with a receipt is there; what is there was sent, once each, in send order
    (messages sent without a receipt before a cut may or may not be)."""
    order = {payload: i for i, payload in enumerate(sent)}
    missing = set(acked) - set(found)
    assert not missing, f"{len(missing)} acknowledged messages lost of {len(acked)}: {sorted(missing)[:5]}"
    assert all(payload in order for payload in found), "a message that was never sent"
    positions = [order[payload] for payload in found]
    assert positions == sorted(set(positions)), "duplicated or out of order"


def redeliveries(url: str, consumed: list[bytes]) -> int:
    """Messages the subscription delivers now that a consumer had acknowledged before a cut."""
    c = client(url)
    try:
        consumer = c.subscribe(TOPIC, SUBSCRIPTION)
        seen = set(consumed)
        count = 0
        while True:
            try:
                count += consumer.receive(1500).data() in seen
            except pulsar.Timeout:
                return count
    finally:
        c.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cuts", type=int, default=2, help="power cuts per round")
    parser.add_argument("--min-seconds", type=float, default=3.0)
    parser.add_argument("--max-seconds", type=float, default=6.0)
    parser.add_argument("--torn", action="store_true", help="tear each file's last unsynced write")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print("$ python bench/power_loss_rounds.py " + shlex.join(sys.argv[1:]), flush=True)
    rng = random.Random(args.seed)
    totals = {"sent": 0, "acked": 0, "found": 0, "lost": 0, "consumed": 0, "redelivered": 0}
    for index in range(args.rounds):
        figures = one_round(index, args, rng)
        for key in totals:
            totals[key] += figures[key]
        print(f"round {index + 1}: " + "  ".join(f"{k} {v}" for k, v in figures.items()), flush=True)
    print("total: " + "  ".join(f"{k} {v}" for k, v in totals.items()), flush=True)


if __name__ == "__main__":
    main()
