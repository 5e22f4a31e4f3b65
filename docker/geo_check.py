"""docker/geo-test's checks: three minipulsar clusters (a, b, c) replicating public/default to each
other, driven with the official Python client (pulsar-client) from the compose project's test
runner. Exit status 0 only when every check holds.

  (a) all ways: messages produced in each cluster reach the other two, in order per origin, once
      each, and nothing comes back (no loops);
  (b) partition: cluster c is cut off (`docker network disconnect`) while a and b keep producing;
      after `docker network connect` c receives the whole backlog within CATCH_UP_BOUND seconds;
  (c) crash: cluster b is killed (SIGKILL) mid-stream and restarted; no acknowledged message is
      lost, in b or in the clusters it replicates to;
  (d) failover (PIP-33): a replicated subscription consumed in a resumes in b with at most about
      one snapshot interval of duplicates (checked against two intervals, leaving room for the
      markers' round trip, as tests/e2e/replication/test_replicated_subscriptions.py does) and no loss.

Docker actions run on the host: this script prints `@@ACTION <verb> <cluster>` and waits for the
host's `DONE <status>` on stdin (docker/geo-test answers). Figures are printed as `FIGURE` lines.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import urllib.error
import urllib.request

import pulsar

CLUSTERS = ("a", "b", "c")
SUBSCRIPTION = "geo-check"  # each check's durable subscription, in every cluster
TOPIC = "persistent://public/default/geo-{}"
RATE = 100  # messages per second per producer while pacing
SNAPSHOT_SECONDS = 1.0  # replicatedSubscriptionsSnapshotFrequencyMillis in compose.yaml
# The partition (12 s) outlasts the keep-alive's two intervals (2 x 5 s), so the dead connections
# are gone when the network returns; then one back-off step (replicationMaxBackoffIntervalSeconds,
# 5 s), the new connection and the transfer: about 7 s, doubled for a slow shared machine.
CATCH_UP_BOUND = 15.0


class CheckFailed(Exception):
    """A check did not hold; the message says which and by how much."""


def say(text: str) -> None:
    print(f"geo-check: {text}", flush=True)


def figure(check: str, name: str, value) -> None:
    print(f"FIGURE ({check}) {name} = {value}", flush=True)


def host(verb: str, cluster: str) -> None:
    """Ask docker/geo-test to run a docker action on broker-<cluster> and wait until it is done."""
    print(f"@@ACTION {verb} {cluster}", flush=True)
    reply = sys.stdin.readline().strip()
    if reply != "DONE 0":
        raise CheckFailed(f"host action {verb} {cluster} failed: {reply or 'no answer'}")


def client(cluster: str) -> pulsar.Client:
    return pulsar.Client(f"pulsar://broker-{cluster}:6650", operation_timeout_seconds=30,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def wait_healthy(cluster: str, timeout: float = 90.0) -> float:
    """Seconds until broker-<cluster> passes its own health check (GET /admin/v2/brokers/health)."""
    start = time.monotonic()
    url = f"http://broker-{cluster}:8080/admin/v2/brokers/health"
    last = ""
    while time.monotonic() - start < timeout:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                if response.status == 200:
                    return time.monotonic() - start
        except (OSError, urllib.error.URLError) as exc:
            last = str(exc)
        time.sleep(0.5)  # the poll interval of this deadline-bounded wait
    raise CheckFailed(f"broker-{cluster} not healthy after {timeout:.0f} s ({last})")


def subscribe_everywhere(topic: str, clusters=CLUSTERS) -> None:
    """Create the durable subscription SUBSCRIPTION on topic in each cluster, before anything is
    produced: without a subscription (and with no retention, the default) a broker may delete
    what its replicators have sent, as Pulsar does, and there would be nothing to check."""
    for cluster in clusters:
        c = client(cluster)
        try:
            c.subscribe(topic, SUBSCRIPTION, initial_position=pulsar.InitialPosition.Earliest).close()
        finally:
            c.close()


def read_until(cluster: str, topic: str, expected: set[str], timeout: float) -> tuple[list[str], float | None]:
    """(every payload SUBSCRIPTION receives in cluster, in order; monotonic time when the last
    of expected arrived, or None): receive until all of expected were seen and nothing more came
    for 2 s, or until timeout."""
    c = client(cluster)
    got: list[str] = []
    complete_at = None
    try:
        consumer = c.subscribe(topic, SUBSCRIPTION, initial_position=pulsar.InitialPosition.Earliest)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = consumer.receive(2000)
            except pulsar.Timeout:
                if complete_at is not None:
                    break
                continue
            consumer.acknowledge(message)
            got.append(message.data().decode())
            if complete_at is None and got[-1] in expected and expected <= set(got):
                complete_at = time.monotonic()
        consumer.close()
        return got, complete_at
    finally:
        c.close()


def check_stream(check: str, cluster: str, got: list[str], expected: set[str]) -> int:
    """Raise unless got holds every expected payload and each origin's payloads in order; returns
    the number of duplicates."""
    missing = expected - set(got)
    if missing:
        raise CheckFailed(f"({check}) cluster {cluster} is missing {len(missing)} messages, e.g. {sorted(missing)[:5]}")
    first_seen = list(dict.fromkeys(got))
    for origin in {p.split("-")[0] for p in expected}:
        seq = [int(p.split("-")[1]) for p in first_seen if p.startswith(origin + "-")]
        if seq != sorted(seq):
            raise CheckFailed(f"({check}) cluster {cluster}: messages from {origin} out of order")
    return len(got) - len(first_seen)


class PacedProducer:
    """Sends '<origin>-<i>' for i in [first, last) at RATE msg/s from a thread; `acked` holds what
    the broker confirmed, `failed` what it refused."""

    def __init__(self, c: pulsar.Client, topic: str, origin: str, first: int, last: int):
        self.producer = c.create_producer(topic, send_timeout_millis=0, block_if_queue_full=True,
                                          batching_enabled=False)
        self.origin, self.first, self.last = origin, first, last
        self.sent = 0
        self.acked: set[str] = set()
        self.failed: list[str] = []
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        start = time.monotonic()
        for k, i in enumerate(range(self.first, self.last)):
            payload = f"{self.origin}-{i}"
            self.producer.send_async(payload.encode(), lambda res, _id, p=payload: self._done(res, p))
            self.sent = k + 1
            delay = start + (k + 1) / RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing at RATE, not synchronisation
        self.producer.flush()

    def _done(self, result, payload: str) -> None:
        with self._lock:
            (self.acked.add if result == pulsar.Result.Ok else self.failed.append)(payload)

    def wait_sent(self, n: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.sent < n:
            if time.monotonic() > deadline:
                raise CheckFailed(f"producer {self.origin} sent only {self.sent} of {n}")
            time.sleep(0.05)  # the poll interval of this deadline-bounded wait

    def join(self, timeout: float = 120.0) -> set[str]:
        """Wait until every send is confirmed; the acked payloads."""
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise CheckFailed(f"producer {self.origin}: sends unconfirmed after {timeout:.0f} s")
        self.producer.close()
        if self.failed:
            raise CheckFailed(f"producer {self.origin}: {len(self.failed)} sends failed")
        return self.acked


# ---- the checks ---------------------------------------------------------------------------------
def all_ways(per_cluster: int = 200) -> None:
    """(a) each cluster produces; every cluster holds everything once, in order per origin."""
    topic = TOPIC.format("all-ways")
    subscribe_everywhere(topic)
    clients = {n: client(n) for n in CLUSTERS}
    try:
        producers = [PacedProducer(clients[n], topic, n, 0, per_cluster) for n in CLUSTERS]
        expected = set().union(*(p.join() for p in producers))
    finally:
        for c in clients.values():
            c.close()
    figure("a", "messages produced (3 clusters)", len(expected))
    for n in CLUSTERS:
        got, _ = read_until(n, topic, expected, timeout=60)
        duplicates = check_stream("a", n, got, expected)
        figure("a", f"cluster {n}: received, duplicates", f"{len(got)}, {duplicates}")
        if duplicates or len(got) != len(expected):
            raise CheckFailed(f"(a) cluster {n} holds {len(got)} messages for {len(expected)} sent (loop or duplicate)")


def failover(total: int = 400, acked: int = 200) -> None:
    """(d) PIP-33: ack half in a, move the replicated subscription to b."""
    topic = TOPIC.format("failover")
    subscribe_everywhere(topic)
    ca, cb = client("a"), client("b")
    try:
        consumer = ca.subscribe(topic, "orders", consumer_type=pulsar.ConsumerType.Failover,
                                initial_position=pulsar.InitialPosition.Earliest,
                                replicate_subscription_state_enabled=True)
        producer = ca.create_producer(topic, batching_enabled=False)
        received, start = [], time.monotonic()
        # Consume while producing, so a's dispatcher reads past snapshot markers as they come.
        for i in range(total):
            producer.send_async(f"a-{i}".encode(), None)
            while len(received) < min(acked, i):
                message = consumer.receive(10_000)
                received.append(int(message.data().decode().split("-")[1]))
                consumer.acknowledge(message)
            delay = start + (i + 1) / RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing at RATE, not synchronisation: the bound is in its terms
        producer.flush()
        producer.close()
        # Markers travel in order with the data: once b holds every message it has the last update.
        read_until("b", topic, {f"a-{i}" for i in range(total)}, timeout=60)
        consumer.close()
        consumer = cb.subscribe(topic, "orders", consumer_type=pulsar.ConsumerType.Failover,
                                initial_position=pulsar.InitialPosition.Earliest,
                                replicate_subscription_state_enabled=True)
        got = []
        while True:
            try:
                message = consumer.receive(3000)
            except pulsar.Timeout:
                break
            got.append(int(message.data().decode().split("-")[1]))
            consumer.acknowledge(message)
        consumer.close()
    finally:
        ca.close()
        cb.close()
    if not got or got != list(range(got[0], total)) or got[0] > acked:
        raise CheckFailed(f"(d) the subscription resumed in b skipping or reordering messages: starts at "
                          f"{got[0] if got else None}, {len(got)} received")
    duplicates, bound = acked - got[0], int(RATE * 2 * SNAPSHOT_SECONDS)
    figure("d", "acknowledged in a, received in b, duplicates, lost", f"{acked}, {len(got)}, {duplicates}, 0")
    figure("d", "duplicate bound (2 snapshot intervals at 100 msg/s)", bound)
    if duplicates > bound:
        raise CheckFailed(f"(d) {duplicates} duplicates after failover, more than {bound}")


def partition(seconds: float = 12.0) -> None:
    """(b) c cut off while a and b produce; c catches up after the network returns."""
    topic = TOPIC.format("partition")
    subscribe_everywhere(topic)
    clients = {n: client(n) for n in ("a", "b")}
    try:
        # '<n>-0' first, received in c: the replicators toward c are connected before the cut.
        warm_up = set().union(*(PacedProducer(clients[n], topic, n, 0, 1).join() for n in ("a", "b")))
        check_stream("b", "c", read_until("c", topic, warm_up, timeout=60)[0], warm_up)
        host("disconnect", "c")
        count = 1 + int(seconds * RATE)
        producers = [PacedProducer(clients[n], topic, n, 1, count) for n in ("a", "b")]
        produced = set().union(*(p.join() for p in producers))
        host("connect", "c")
        healed = time.monotonic()
        got, complete_at = read_until("c", topic, produced, timeout=CATCH_UP_BOUND + 60)
    finally:
        for c in clients.values():
            c.close()
    duplicates = check_stream("b", "c", got, produced)  # raises when incomplete
    catch_up = complete_at - healed
    figure("b", "partition length (s), messages produced in a and b meanwhile", f"{seconds:.0f}, {len(produced)}")
    figure("b", "received in c, duplicates", f"{len(got)}, {duplicates}")
    figure("b", "whole backlog in c after docker network connect (s)", f"{catch_up:.1f}")
    figure("b", "catch-up bound (s)", f"{CATCH_UP_BOUND:.0f}")
    if catch_up > CATCH_UP_BOUND:
        raise CheckFailed(f"(b) c caught up in {catch_up:.1f} s, more than {CATCH_UP_BOUND:.0f} s")


def crash(count: int = 600) -> None:
    """(c) b killed with SIGKILL while a and b produce, then restarted: nothing acked is lost."""
    topic = TOPIC.format("crash")
    subscribe_everywhere(topic)
    clients = {n: client(n) for n in ("a", "b")}
    try:
        producers = {n: PacedProducer(clients[n], topic, n, 0, count) for n in ("a", "b")}
        producers["b"].wait_sent(count // 4)
        host("kill", "b")
        killed_at = producers["b"].sent
        producers["b"].wait_sent(count // 2)
        host("start", "b")
        figure("c", "broker b healthy again after docker start (s)", f"{wait_healthy('b'):.1f}")
        acked = set().union(*(p.join(timeout=180) for p in producers.values()))
    finally:
        for c in clients.values():
            c.close()
    figure("c", "messages sent, acknowledged; b killed after its message", f"{2 * count}, {len(acked)}; {killed_at}")
    for n in CLUSTERS:
        got, _ = read_until(n, topic, acked, timeout=120)
        duplicates = check_stream("c", n, got, acked)  # raises when an acknowledged message is missing
        figure("c", f"cluster {n}: received, lost, duplicates", f"{len(got)}, 0, {duplicates}")


CHECKS = (("a", "all ways, no loops", all_ways), ("d", "replicated subscription failover", failover),
          ("b", "partition and catch-up", partition), ("c", "SIGKILL and restart", crash))


def main() -> int:
    for n in CLUSTERS:
        wait_healthy(n)
    chosen = os.environ.get("MINIPULSAR_GEO_CHECKS", "adbc")
    for letter, title, check in (c for c in CHECKS if c[0] in chosen):
        started = time.monotonic()
        say(f"({letter}) {title} ...")
        try:
            check()
        except CheckFailed as exc:
            say(f"FAILED {exc}")
            return 1
        except Exception as exc:  # noqa: BLE001 - a client error fails the check with its reason
            say(f"FAILED ({letter}) {type(exc).__name__}: {exc}")
            return 1
        for n in CLUSTERS:
            wait_healthy(n)
        say(f"({letter}) passed in {time.monotonic() - started:.1f} s")
    say("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
