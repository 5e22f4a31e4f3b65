"""Soak: two replicating brokers under a mixed workload, one of them killed (SIGKILL) every round.

    python bench/soak.py --minutes 30 [--seed N] [--plot docs/soak-rss.png] [--data-dir DIR]
                         [--rate 40] [--round-seconds 40]

Two broker processes (clusters `a` and `b`, fsync on, `public/default` replicated both ways,
`public/local` not replicated) run from this checkout. Every round opens new topics, so topics
churn:

- `public/default/r<N>-batch` (batching on, key-based batches) and `r<N>-single` (batching off),
  each with a producer in both clusters;
- `public/local/r<N>-batch-a` in cluster a and `r<N>-single-b` in cluster b.

Each producer sends --rate msg/s (payload `<producer>|<key>|<seq>`, 8 keys per producer, the key
as partition key, seq counting up per key from 0) for --round-seconds. In every cluster a topic
lives in, it has four durable subscriptions (Earliest): Exclusive (1 consumer), Failover (2),
Shared (2), Key_Shared (2), and a reader from the earliest message. Consumers acknowledge each
message individually, except that a first delivery is negatively acknowledged with probability
5 % (redelivered after 0.5 s, then acknowledged). At a random moment of the produce window one
broker (random) gets SIGKILL, is started again on the same data dir and ports, and is waited
for (`GET /admin/v2/brokers/health` answers 200). After the round's sends have completed, the
round waits until every subscription has everything (or --settle-seconds pass), then closes its
clients, unsubscribes and deletes its topics (DELETE /admin/v2/persistent/..., force for the
replicated ones, which the peer's replicator may hold open).

What is checked, after each round:

- **No loss.** A message is *acknowledged* when its producer's send callback returned Ok (a send
  that failed or timed out is not, even if the broker stored it). Every acknowledged message must
  be received at least once by every subscription and reader of its topic: in its own cluster
  and, for `public/default`, in the other one. Duplicates (redelivery after a crash, replicator
  resends) are counted, not failed.
- **Nacks come back.** Every negatively acknowledged message is delivered again to its
  subscription.
- **Per-key order**, for Exclusive and Failover per subscription, for Key_Shared per consumer
  (Pulsar's promise there), and for readers: a message delivered for the *first* time must not
  have a lower seq than a message of the same key already delivered. Messages delivered again
  (redelivery after a nack, a crash or a reconnect) are duplicates and exempt; gaps are allowed
  (a failed send leaves one). Shared is not checked for order.
- **Bounds.** After the round (topics deleted), each broker's RSS must fall below
  idle RSS at first start + managedLedgerCacheSizeMB + --rss-slack-mb (MiB), and its open files
  (entries of /proc/PID/fd) below idle fds at first start + --fd-slack, within 60 s.

RSS and fds of both brokers are sampled every 2 s; at the end the RSS curve (MiB over minutes,
one line per broker, kills marked) goes to --plot as PNG and a summary is printed. Exit status 1
if anything was lost, out of order, a nack never came back or a bound was broken; the data dirs
and broker logs are then kept (their path is printed).
"""
from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pulsar
import requests

from minipulsar.launcher import BrokerProcess, free_port
from perf_compare import stop_brokers_on_sigterm  # bench/ is this script's folder, first on sys.path

ROOT = Path(__file__).resolve().parent.parent
REPLICATED_NS = "public/default"
LOCAL_NS = "public/local"
CACHE_MB = 64  # managedLedgerCacheSizeMB, set explicitly so the RSS bound names it
KEYS_PER_PRODUCER = 8
NACK_PROBABILITY = 0.05
NACK_DELAY_MS = 500
SAMPLE_SECONDS = 2.0
SUBSCRIPTIONS = {  # name -> (type, consumers, order scope: "subscription", "consumer" or None)
    "excl": (pulsar.ConsumerType.Exclusive, 1, "subscription"),
    "failover": (pulsar.ConsumerType.Failover, 2, "subscription"),
    "shared": (pulsar.ConsumerType.Shared, 2, None),
    "keyshared": (pulsar.ConsumerType.KeyShared, 2, "consumer"),
}


# --------------------------------------------------------------------------- brokers

class Cluster:
    """One broker process (one cluster, minipulsar.launcher.BrokerProcess), restartable on the same
    data dir and ports."""

    def __init__(self, name: str, root: Path, port: int, web_port: int, peers: str):
        self.name, self.port, self.web_port = name, port, web_port
        self.data_dir = root / name
        self.log_path = root / f"broker-{name}.log"
        self.broker = BrokerProcess(
            self.data_dir, {"replicationClusters": peers, "namespaceReplicationClusters": f"{REPLICATED_NS}=*",
                            "managedLedgerCacheSizeMB": CACHE_MB},
            args=("--cluster-name", name), port=port, web_port=web_port, log_path=self.log_path,
            log_level="WARNING", cwd=ROOT, startup_timeout=120)
        self.kills = 0

    @property
    def proc(self):
        return self.broker.proc

    @property
    def url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def web(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def start(self) -> float:
        """Start the broker (ready: see minipulsar.launcher) and wait until its health check passes;
        returns seconds taken."""
        started = time.monotonic()
        self.broker.start()
        self.wait_healthy()
        return time.monotonic() - started

    def wait_healthy(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker {self.name} exited with {self.proc.returncode}; see {self.log_path}")
            try:
                if requests.get(f"{self.web}/admin/v2/brokers/health", timeout=10).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)  # poll interval of a deadline-bounded wait for the health check
        raise TimeoutError(f"broker {self.name} not healthy after {timeout} s; see {self.log_path}")

    def kill(self) -> None:
        self.broker.kill()
        self.kills += 1

    def stop(self) -> None:
        self.broker.stop(timeout=30)  # SIGTERM, SIGKILL if it hangs

    def rss_kib(self) -> int | None:
        try:
            for line in open(f"/proc/{self.proc.pid}/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:  # killed between samples
            return None
        return None

    def open_files(self) -> int | None:
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return None

    def admin(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, f"{self.web}/admin/v2/{path}", timeout=60, **kwargs)


class Sampler(threading.Thread):
    """RSS (KiB) and open files of every broker every SAMPLE_SECONDS: (seconds since start, name, rss, fds)."""

    def __init__(self, clusters: list[Cluster], start: float):
        super().__init__(daemon=True)
        self.clusters, self.start_time = clusters, start
        self.samples: list[tuple[float, str, int, int]] = []
        self.kill_marks: list[tuple[float, str]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_SECONDS):
            self.sample()

    def sample(self) -> None:
        now = time.monotonic() - self.start_time
        for cluster in self.clusters:
            rss, fds = cluster.rss_kib(), cluster.open_files()
            if rss is not None and fds is not None:
                self.samples.append((now, cluster.name, rss, fds))

    def mark_kill(self, name: str) -> None:
        self.kill_marks.append((time.monotonic() - self.start_time, name))


# --------------------------------------------------------------------------- what was sent and received

class Truth:
    """The ledger of truth: every send and its outcome. acked[topic] = payloads whose send callback was Ok."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked: dict[str, set[str]] = defaultdict(set)
        self.sent: Counter[str] = Counter()     # per origin cluster
        self.ok: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()

    def callback(self, topic: str, cluster: str, payload: str):
        def done(result, _msg_id):
            with self.lock:
                if result == pulsar.Result.Ok:
                    self.acked[topic].add(payload)
                    self.ok[cluster] += 1
                else:
                    self.failed[cluster] += 1
        return done


@dataclass
class Tracker:
    """What one subscription (or reader) of one topic in one cluster received."""
    cluster: str
    topic: str
    name: str
    order_scope: str | None            # "subscription", "consumer" or None (no order check)
    rng: random.Random | None          # draws the nacks; None for a reader, which cannot nack
    lock: threading.Lock = field(default_factory=threading.Lock)
    received: Counter = field(default_factory=Counter)     # payload -> deliveries
    nacked: set = field(default_factory=set)
    order_state: dict = field(default_factory=dict)        # (scope id, key) -> highest seq delivered
    order_violations: list = field(default_factory=list)

    def on_message(self, consumer_id: str, payload: str) -> bool:
        """Record a delivery; True when the caller should nack it (a first delivery, 5 %)."""
        _producer, key, seq = payload.rsplit("|", 2)
        seq = int(seq)
        with self.lock:
            first = payload not in self.received
            self.received[payload] += 1
            if first and self.order_scope is not None:
                scope = consumer_id if self.order_scope == "consumer" else ""
                highest = self.order_state.get((scope, key), -1)
                if seq < highest:
                    self.order_violations.append(f"{payload} after seq {highest} ({consumer_id})")
                self.order_state[(scope, key)] = max(highest, seq)
            nack = first and self.rng is not None and self.rng.random() < NACK_PROBABILITY
            if nack:
                self.nacked.add(payload)
            return nack

    def missing(self, acked: set[str]) -> set[str]:
        with self.lock:
            return {p for p in acked if p not in self.received}

    def nacks_not_redelivered(self) -> set[str]:
        with self.lock:
            return {p for p in self.nacked if self.received[p] < 2}

    def duplicates(self) -> int:
        with self.lock:
            return sum(self.received.values()) - len(self.received)

    def label(self) -> str:
        return f"{self.cluster}:{self.topic.rsplit('/', 1)[-1]}:{self.name}"


# --------------------------------------------------------------------------- one round of workload

@dataclass
class TopicPlan:
    topic: str
    batching: bool
    producer_clusters: tuple[str, ...]   # where its producers are
    clusters: tuple[str, ...]            # where it is consumed (every cluster it exists in)
    replicated: bool


class Round:
    """Topics, subscriptions, readers and producers of one round, and the checks on them."""

    def __init__(self, number: int, clusters: dict[str, Cluster], clients: dict[str, pulsar.Client],
                 truth: Truth, rng: random.Random, rate: float):
        self.number, self.clusters, self.clients = number, clusters, clients
        self.truth, self.rng, self.rate = truth, rng, rate
        n = number
        self.plans = [
            TopicPlan(f"persistent://{REPLICATED_NS}/r{n}-batch", True, ("a", "b"), ("a", "b"), True),
            TopicPlan(f"persistent://{REPLICATED_NS}/r{n}-single", False, ("a", "b"), ("a", "b"), True),
            TopicPlan(f"persistent://{LOCAL_NS}/r{n}-batch-a", True, ("a",), ("a",), False),
            TopicPlan(f"persistent://{LOCAL_NS}/r{n}-single-b", False, ("b",), ("b",), False),
        ]
        self.trackers: list[Tracker] = []
        self.consumers: list[tuple[str, pulsar.Consumer]] = []   # (cluster, consumer)
        self.readers: list = []
        self.producers: list[tuple[TopicPlan, str, str, pulsar.Producer]] = []  # plan, cluster, name, producer
        self.seqs: Counter[tuple[str, str]] = Counter()

    def open(self) -> None:
        """Subscriptions and readers first (Earliest), so every message has its receivers; then producers."""
        for plan in self.plans:
            for cluster in plan.clusters:
                self.open_receivers(plan, cluster)
        for plan in self.plans:
            for cluster in plan.producer_clusters:
                name = f"{plan.topic.rsplit('/', 1)[-1]}-{cluster}"  # r<N>-<kind>-<cluster>
                producer = self.clients[cluster].create_producer(
                    plan.topic, producer_name=name, batching_enabled=plan.batching,
                    batching_type=pulsar.BatchingType.KeyBased, block_if_queue_full=True,
                    max_pending_messages=2000, send_timeout_millis=60_000)
                self.producers.append((plan, cluster, name, producer))

    def open_receivers(self, plan: TopicPlan, cluster: str) -> None:
        client = self.clients[cluster]
        for sub, (sub_type, count, scope) in SUBSCRIPTIONS.items():
            tracker = self.new_tracker(cluster, plan.topic, sub, scope)
            for i in range(count):
                consumer = client.subscribe(
                    plan.topic, sub, consumer_type=sub_type, consumer_name=f"{sub}-{i}",
                    initial_position=pulsar.InitialPosition.Earliest,
                    negative_ack_redelivery_delay_ms=NACK_DELAY_MS,
                    message_listener=self.listener(tracker, f"{sub}-{i}"))
                self.consumers.append((cluster, consumer))
        tracker = self.new_tracker(cluster, plan.topic, "reader", "subscription", nacks=False)
        self.readers.append(client.create_reader(
            plan.topic, pulsar.MessageId.earliest,
            reader_listener=lambda _reader, msg, t=tracker: t.on_message("reader", msg.data().decode())))

    def new_tracker(self, cluster: str, topic: str, name: str, scope: str | None, nacks: bool = True) -> Tracker:
        tracker = Tracker(cluster, topic, name, scope, random.Random(self.rng.random()) if nacks else None)
        self.trackers.append(tracker)
        return tracker

    @staticmethod
    def listener(tracker: Tracker, consumer_id: str):
        def on_message(consumer, msg):
            if tracker.on_message(consumer_id, msg.data().decode()):
                consumer.negative_acknowledge(msg)
            else:
                consumer.acknowledge(msg)
        return on_message

    def produce(self, seconds: float, stop: threading.Event) -> None:
        """Every producer sends self.rate msg/s for `seconds` (paced; blocks while a broker is down)."""
        start, tick = time.monotonic(), 0
        while time.monotonic() - start < seconds and not stop.is_set():
            for plan, cluster, name, producer in self.producers:
                key = f"{name}-k{self.rng.randrange(KEYS_PER_PRODUCER)}"
                seq = self.seqs[(plan.topic, key)]
                self.seqs[(plan.topic, key)] += 1
                payload = f"{name}|{key}|{seq}"
                with self.truth.lock:
                    self.truth.sent[cluster] += 1
                producer.send_async(payload.encode(), self.truth.callback(plan.topic, cluster, payload),
                                    partition_key=key)
            tick += 1
            delay = start + tick / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing
        for _plan, _cluster, _name, producer in self.producers:
            producer.flush()  # every callback has run after this: the truth is complete

    def outstanding(self) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """(missing acked messages, nacks not yet redelivered), per tracker label; empty when done."""
        with self.truth.lock:
            acked = {plan.topic: set(self.truth.acked[plan.topic]) for plan in self.plans}
        missing, nacks = {}, {}
        for tracker in self.trackers:
            if m := tracker.missing(acked[tracker.topic]):
                missing[tracker.label()] = m
            if n := tracker.nacks_not_redelivered():
                nacks[tracker.label()] = n
        return missing, nacks

    def settle(self, timeout: float) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """Wait (polling state) until nothing is outstanding or timeout; returns what still is."""
        deadline = time.monotonic() + timeout
        while True:
            missing, nacks = self.outstanding()
            if (not missing and not nacks) or time.monotonic() > deadline:
                return missing, nacks
            time.sleep(1)  # poll interval of a deadline-bounded wait for deliveries

    def close_and_delete(self) -> list[str]:
        """Topic churn: close producers and readers, unsubscribe, delete the topics; returns problems."""
        problems = []
        for _plan, _cluster, _name, producer in self.producers:
            producer.close()
        for reader in self.readers:
            reader.close()
        for _cluster, consumer in self.consumers:
            try:
                consumer.unsubscribe()
            except pulsar.PulsarException:
                consumer.close()  # a second consumer of the subscription after the first removed it
        for plan in self.plans:
            path = "persistent/" + plan.topic.split("://", 1)[1]
            for cluster in plan.clusters:
                # a replicated topic is held open by the peer's replicator producer: force
                resp = self.clusters[cluster].admin("DELETE", path, params={"force": str(plan.replicated).lower()})
                if resp.status_code not in (200, 204, 404):
                    problems.append(f"DELETE {plan.topic} in {cluster}: {resp.status_code} {resp.text}")
        return problems


# --------------------------------------------------------------------------- the soak

@dataclass
class Totals:
    rounds: int = 0
    losses: int = 0
    order_violations: int = 0
    nacks_lost: int = 0
    bound_breaks: int = 0
    duplicates: int = 0
    nacked: int = 0
    consumed: Counter = field(default_factory=Counter)    # per cluster: deliveries to subscriptions and readers
    restart_seconds: list = field(default_factory=list)
    problems: list = field(default_factory=list)


class Soak:
    def __init__(self, args, root: Path):
        self.args, self.root = args, root
        self.rng = random.Random(args.seed)
        names = ("a", "b")
        # Below the ephemeral range: a port the kernel hands out (bind to 0) can become the source port
        # of an outgoing connection while its broker is down, and the restart fails.
        ports = {n: (free_port(below_ephemeral=True, rng=self.rng), free_port(below_ephemeral=True, rng=self.rng))
                 for n in names}
        peers = ",".join(f"{n}=pulsar://127.0.0.1:{ports[n][0]}" for n in names)
        self.clusters = {n: Cluster(n, root, *ports[n], peers) for n in names}
        self.truth = Truth()
        self.totals = Totals()
        self.start = time.monotonic()
        self.sampler = Sampler(list(self.clusters.values()), self.start)
        self.bounds: dict[str, tuple[int, int]] = {}   # name -> (rss KiB, fds)

    def run(self) -> None:
        for cluster in self.clusters.values():
            cluster.start()
        for cluster in self.clusters.values():
            # the bound's baseline: an idle broker just started, before any client
            rss, fds = cluster.rss_kib(), cluster.open_files()
            rss_bound, fd_bound = rss + (CACHE_MB + self.args.rss_slack_mb) * 1024, fds + self.args.fd_slack
            self.bounds[cluster.name] = (rss_bound, fd_bound)
            print(f"broker {cluster.name}: pid {cluster.proc.pid}, port {cluster.port}, idle RSS {rss / 1024:.1f} MiB, "
                  f"{fds} fds; bounds RSS {rss_bound / 1024:.0f} MiB, fds {fd_bound}", flush=True)
            resp = cluster.admin("PUT", f"namespaces/{LOCAL_NS}")
            if resp.status_code not in (200, 204, 409):
                raise RuntimeError(f"creating {LOCAL_NS} in {cluster.name}: {resp.status_code} {resp.text}")
        self.sampler.start()
        logger = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
        clients = {n: pulsar.Client(c.url, operation_timeout_seconds=30, message_listener_threads=2, logger=logger)
                   for n, c in self.clusters.items()}
        try:
            while time.monotonic() - self.start < self.args.minutes * 60:
                self.round(self.totals.rounds + 1, clients)
        finally:
            for client in clients.values():
                client.close()
            self.sampler.stopped.set()

    def round(self, number: int, clients) -> None:
        r = Round(number, self.clusters, clients, self.truth, self.rng, self.args.rate)
        r.open()
        stop = threading.Event()
        producing = threading.Thread(target=r.produce, args=(self.args.round_seconds, stop))
        producing.start()
        victim = self.clusters[self.rng.choice(sorted(self.clusters))]
        kill_at = self.rng.uniform(0.1, 0.9) * self.args.round_seconds
        producing.join(kill_at)
        self.sampler.mark_kill(victim.name)
        victim.kill()
        took = victim.start()
        self.totals.restart_seconds.append(took)
        producing.join()
        settling = time.monotonic()
        missing, nacks = r.settle(self.args.settle_seconds)
        settled = time.monotonic() - settling
        self.account(r, missing, nacks)
        self.totals.problems += r.close_and_delete()
        self.check_bounds(number)
        self.totals.rounds += 1
        print(f"round {number}: killed {victim.name} at {kill_at:.1f} s (back in {took:.1f} s); "
              f"acked so far {sum(self.truth.ok.values())}, failed {sum(self.truth.failed.values())}; "
              f"losses {self.totals.losses}, order violations {self.totals.order_violations}, "
              f"nacks lost {self.totals.nacks_lost}, duplicates {self.totals.duplicates}; settled in {settled:.0f} s; "
              f"topics left {self.topics_left()}; RSS MiB {self.rss_now()}  "
              f"[{(time.monotonic() - self.start) / 60:.1f} min]", flush=True)

    def account(self, r: Round, missing: dict, nacks: dict) -> None:
        for label, payloads in missing.items():
            self.totals.losses += len(payloads)
            self.totals.problems.append(f"round {r.number} LOSS {label}: {len(payloads)} e.g. {sorted(payloads)[:5]}")
        for label, payloads in nacks.items():
            self.totals.nacks_lost += len(payloads)
            self.totals.problems.append(f"round {r.number} NACK NOT REDELIVERED {label}: {sorted(payloads)[:5]}")
        for tracker in r.trackers:
            self.totals.duplicates += tracker.duplicates()
            self.totals.nacked += len(tracker.nacked)
            self.totals.consumed[tracker.cluster] += sum(tracker.received.values())
            if tracker.order_violations:
                self.totals.order_violations += len(tracker.order_violations)
                self.totals.problems.append(f"round {r.number} ORDER {tracker.label()}: {tracker.order_violations[:5]}")

    def check_bounds(self, number: int, timeout: float = 60) -> None:
        """RSS and fds of each broker must come back below its bound (polled: memory is freed lazily)."""
        deadline = time.monotonic() + timeout
        while True:
            over = [(c.name, c.rss_kib(), c.open_files()) for c in self.clusters.values()
                    if c.rss_kib() > self.bounds[c.name][0] or c.open_files() > self.bounds[c.name][1]]
            if not over:
                return
            if time.monotonic() > deadline:
                self.totals.bound_breaks += len(over)
                self.totals.problems += [f"round {number} BOUND {n}: RSS {rss / 1024:.1f} MiB, {fds} fds "
                                         f"(bounds {self.bounds[n][0] / 1024:.0f} MiB, {self.bounds[n][1]})"
                                         for n, rss, fds in over]
                return
            time.sleep(1)  # poll interval of a deadline-bounded wait for the bound

    def topics_left(self) -> str:
        """Topics each broker still lists (churn must not accumulate them)."""
        counts = []
        for c in self.clusters.values():
            listed = [t for ns in (REPLICATED_NS, LOCAL_NS) for t in c.admin("GET", f"namespaces/{ns}/topics").json()]
            counts.append(f"{c.name}={len(listed)}")
        return " ".join(counts)

    def rss_now(self) -> str:
        return " ".join(f"{c.name}={c.rss_kib() / 1024:.0f}" for c in self.clusters.values())

    def failed(self) -> bool:
        t = self.totals
        return bool(t.losses or t.order_violations or t.nacks_lost or t.bound_breaks or t.problems)

    def stop(self) -> None:
        for cluster in self.clusters.values():
            cluster.stop()


def plot(sampler: Sampler, path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 4.5))
    colours = {"a": "tab:blue", "b": "tab:orange"}
    for name, colour in colours.items():
        points = [(t / 60, rss / 1024) for t, n, rss, _ in sampler.samples if n == name]
        ax.plot([p[0] for p in points], [p[1] for p in points], color=colour, linewidth=1, label=f"broker {name} RSS")
    for i, (t, name) in enumerate(sampler.kill_marks):
        ax.axvline(t / 60, color=colours[name], linestyle=":", linewidth=0.8,
                   label=f"kill -9 of {name}" if name not in [n for _, n in sampler.kill_marks[:i]] else None)
    ax.set_xlabel("minutes")
    ax.set_ylabel("RSS (MiB)")
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def report(soak: Soak, args, command: str, seconds: float) -> None:
    t, truth = soak.totals, soak.truth
    print("\n== soak summary ==")
    print(f"command: {command}")
    print(f"duration {seconds / 60:.1f} min, rounds {t.rounds}, kills "
          + ", ".join(f"{c.name}={c.kills}" for c in soak.clusters.values())
          + f" (restart to healthy: max {max(t.restart_seconds, default=0):.1f} s)")
    for name in soak.clusters:
        print(f"cluster {name}: produced {truth.sent[name]}, acknowledged {truth.ok[name]}, send failed "
              f"{truth.failed[name]}, consumed {t.consumed[name]} (all subscriptions and readers)")
    print(f"duplicates {t.duplicates} (nack redeliveries included), nacked {t.nacked}, losses {t.losses}, "
          f"order violations {t.order_violations}, "
          f"nacks not redelivered {t.nacks_lost}, bound breaks {t.bound_breaks}")
    for name in soak.clusters:
        rss = [s[2] for s in soak.sampler.samples if s[1] == name]
        fds = [s[3] for s in soak.sampler.samples if s[1] == name]
        if rss:
            print(f"broker {name}: RSS min {min(rss) / 1024:.1f} MiB, max {max(rss) / 1024:.1f} MiB (bound "
                  f"{soak.bounds[name][0] / 1024:.0f}); fds max {max(fds)} (bound {soak.bounds[name][1]}); "
                  f"{len(rss)} samples")
    print(f"plot: {args.plot}")
    for problem in t.problems:
        print("PROBLEM:", problem)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30, help="run time; the round in progress finishes")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "soak-rss.png")
    parser.add_argument("--data-dir", type=Path, default=None, help="default: a new directory under /tmp")
    parser.add_argument("--rate", type=float, default=40, help="msg/s per producer (six producers)")
    parser.add_argument("--round-seconds", type=float, default=40, help="produce window of a round")
    parser.add_argument("--settle-seconds", type=float, default=180, help="longest wait for deliveries after a round")
    parser.add_argument("--rss-slack-mb", type=int, default=128)
    parser.add_argument("--fd-slack", type=int, default=100)
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    command = shlex.join([sys.executable, *sys.argv]) + ("" if "--seed" in sys.argv else f"  (seed {args.seed})")
    print("command:", command, flush=True)
    root = args.data_dir or Path(tempfile.mkdtemp(prefix="soak-"))
    root.mkdir(parents=True, exist_ok=True)
    soak = Soak(args, root)
    try:
        soak.run()
    except Exception as exc:  # still plot and report what ran, and fail
        soak.totals.problems.append(f"the soak stopped: {exc!r}")
    finally:
        soak.stop()
    seconds = time.monotonic() - soak.start
    plot(soak.sampler, args.plot, f"minipulsar soak: RSS of two replicating brokers, {soak.totals.rounds} rounds, "
         f"kill -9 each round (seed {args.seed})")
    report(soak, args, command, seconds)
    if soak.failed():
        print(f"FAILED; data dirs and broker logs kept in {root}")
        return 1
    if args.data_dir is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
