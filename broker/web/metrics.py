"""GET /metrics: the Prometheus text exposition format, with Apache Pulsar's metric names and labels,
so Pulsar's Grafana dashboards work against minipulsar.

A custom collector on a registry of its own reads the broker's state when scraped; the publish and
dispatch paths only add to plain integer counters (PersistentTopic.msg_in_counter/bytes_in_counter,
Subscription.msg_out_counter/bytes_out_counter, the managed ledger's write latency buckets), and no
Prometheus object is touched per message. Rates (msg/s, bytes/s) are the deltas of those counters
between scrapes at least RATE_MIN_INTERVAL_SECONDS apart, kept by a small sampler per topic.

The layout is Pulsar's NamespaceStatsAggregator's:
* cluster-only zeros for the broker-level gauges, so a broker without topics still shows;
* exposeTopicLevelMetricsInPrometheus=true (the default): pulsar_topics_count{cluster, namespace},
  then per topic {cluster, namespace, topic}, per subscription {..., subscription} (pulsar_out_*
  included: Pulsar has no topic-level out counters) and per remote cluster {..., remote_cluster};
* false: the topic-level metrics summed per namespace {cluster, namespace}, without the
  subscription ones, and pulsar_msg_backlog with remote_cluster="local", as Pulsar writes them.

Pulsar types every sample as a gauge; here the *_total ones are counters (same sample names).
pulsar_storage_write_latency_* have Pulsar's StatsBuckets form: one gauge per bucket and NOT
cumulative (le_0_5 counts the writes of at most 0.5 ms, le_1 those over 0.5 and up to 1 ms, ...,
_overflow those over 1 s), _count, and _sum in microseconds, all over the last completed stats
period (STATS_PERIOD_SECONDS, Pulsar's managedLedgerStatsPeriodSeconds, 60 s).
minipulsar_storage_write_latency_seconds is the same data as a standard cumulative histogram.
Source: Pulsar NamespaceStatsAggregator, TopicStats.printTopicStats, PrometheusMetricStreams,
ManagedLedgerMBeanImpl, StatsBuckets. The minipulsar_storage_* figures are broker-wide (the
journal and the ledger storage behind it are shared by every topic: storage/journal.py).
"""
from __future__ import annotations

import asyncio
import time
import weakref
from collections import defaultdict
from typing import TYPE_CHECKING, Iterable

from aiohttp import web
from prometheus_client import exposition
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.samples import Sample

from minipulsar.broker.web.context import broker_of
from minipulsar.broker.web.rate_sampler import RateSampler
from minipulsar.broker.web.routes import RouteTable

if TYPE_CHECKING:
    from minipulsar.broker.broker import Broker
    from minipulsar.broker.subscription import Subscription
    from minipulsar.broker.topic import PersistentTopic

CONTENT_TYPE = getattr(exposition, "CONTENT_TYPE_PLAIN_0_0_4", exposition.CONTENT_TYPE_LATEST)
STATS_PERIOD_SECONDS = 60.0  # Pulsar's managedLedgerStatsPeriodSeconds: the window of the latency gauges
LATENCY_SUFFIXES = ("le_0_5", "le_1", "le_5", "le_10", "le_20", "le_50", "le_100", "le_200", "le_1000", "overflow")
REPLICATOR_NAME_DELIMITER = "-->"  # Pulsar REPL_PRODUCER_NAME_DELIMITER: <prefix>.<from>--><to>

GAUGE, COUNTER, HISTOGRAM = "gauge", "counter", "histogram"
# Every metric served: name -> (type, help). Labels: see the module docstring.
METRICS: dict[str, tuple[str, str]] = {
    "pulsar_topics_count": (GAUGE, "Topics served"),
    "pulsar_subscriptions_count": (GAUGE, "Subscriptions"),
    "pulsar_producers_count": (GAUGE, "Connected producers (replicators from other clusters excluded)"),
    "pulsar_consumers_count": (GAUGE, "Connected consumers"),
    "pulsar_rate_in": (GAUGE, "Messages published per second (replication excluded)"),
    "pulsar_rate_out": (GAUGE, "Messages dispatched to consumers per second"),
    "pulsar_throughput_in": (GAUGE, "Bytes published per second (replication excluded)"),
    "pulsar_throughput_out": (GAUGE, "Bytes dispatched to consumers per second"),
    "pulsar_in_messages_total": (COUNTER, "Messages published since the topic loaded"),
    "pulsar_in_bytes_total": (COUNTER, "Bytes published since the topic loaded"),
    "pulsar_out_messages_total": (COUNTER, "Messages dispatched since the topic loaded"),
    "pulsar_out_bytes_total": (COUNTER, "Bytes dispatched since the topic loaded"),
    "pulsar_storage_size": (GAUGE, "Bytes of the retained entries (one copy)"),
    "pulsar_storage_logical_size": (GAUGE, "Bytes of the retained entries"),
    "pulsar_msg_backlog": (GAUGE, "Entries not yet acknowledged, summed over subscriptions"),
    **{f"pulsar_storage_write_latency_{suffix}": (
        GAUGE, "Entries whose append-to-durable time fell in this bucket during the last stats period")
       for suffix in LATENCY_SUFFIXES},
    "pulsar_storage_write_latency_count": (GAUGE, "Entries made durable during the last stats period"),
    "pulsar_storage_write_latency_sum": (GAUGE, "Append-to-durable microseconds of the last stats period"),
    "pulsar_subscription_back_log": (GAUGE, "Entries not yet acknowledged by the subscription"),
    "pulsar_subscription_unacked_messages": (GAUGE, "Messages dispatched and not yet acknowledged"),
    "pulsar_subscription_blocked_on_unacked_messages": (GAUGE, "1 when dispatch stopped on too many unacked "
                                                        "messages (no such limit here: always 0)"),
    "pulsar_subscription_msg_rate_out": (GAUGE, "Messages dispatched per second"),
    "pulsar_subscription_msg_throughput_out": (GAUGE, "Bytes dispatched per second"),
    "pulsar_subscription_consumers_count": (GAUGE, "Connected consumers"),
    "pulsar_replication_backlog": (GAUGE, "Entries not yet replicated to the remote cluster"),
    "pulsar_replication_rate_in": (GAUGE, "Messages replicated from the remote cluster per second"),
    "pulsar_replication_rate_out": (GAUGE, "Messages replicated to the remote cluster per second"),
    "pulsar_replication_throughput_in": (GAUGE, "Bytes replicated from the remote cluster per second"),
    "pulsar_replication_throughput_out": (GAUGE, "Bytes replicated to the remote cluster per second"),
    "pulsar_replication_connected_count": (GAUGE, "1 when the replicator's producer is connected"),
    "minipulsar_subscription_blocked_on_ack_state_persistent": (
        GAUGE, "1 while dispatch of new entries pauses because the ack state cannot be fully persisted "
               "(PIP-299; per namespace: the subscriptions paused)"),
    "minipulsar_subscription_recently_joined_consumers": (
        GAUGE, "Key_Shared/Key_Failover consumers still limited to entries up to their join position (PIP-282)"),
    "minipulsar_storage_write_latency_seconds": (HISTOGRAM, "Time from append to durability, since the topic loaded"),
    "pulsar_ml_AddEntryErrors": (GAUGE, "Appends that failed (their producers got SEND_ERROR), since the topic loaded"),
    "minipulsar_storage_journal_write_errors_total": (
        COUNTER, "Journal writes or syncs that failed (every append of that group failed)"),
    "minipulsar_storage_ledger_storage_errors_total": (
        COUNTER, "Segment writes and checkpoints behind the journal that failed (retried; the journal is kept)"),
    "minipulsar_storage_checkpoints_total": (COUNTER, "Checkpoints: segments synced, older journal files let go"),
    "minipulsar_storage_open_segment_files": (GAUGE, "Segment write descriptors open (at most openFileLimit)"),
    "minipulsar_storage_unwritten_bytes": (GAUGE, "Durable bytes in the journal not yet written to their segments"),
}
STORAGE_METRICS = {  # broker-wide storage figures: metric name -> ManagedLedgerFactory.stats() key
    "minipulsar_storage_journal_write_errors_total": "journalErrors",
    "minipulsar_storage_ledger_storage_errors_total": "ledgerStorageErrors",
    "minipulsar_storage_checkpoints_total": "checkpoints",
    "minipulsar_storage_open_segment_files": "openSegmentFiles",
    "minipulsar_storage_unwritten_bytes": "unwrittenBytes",
}
BROKER_DEFAULTS = ("pulsar_topics_count", "pulsar_subscriptions_count", "pulsar_producers_count",
                   "pulsar_consumers_count", "pulsar_rate_in", "pulsar_rate_out", "pulsar_throughput_in",
                   "pulsar_throughput_out", "pulsar_storage_size", "pulsar_storage_logical_size", "pulsar_msg_backlog")


def add_routes(table: RouteTable) -> None:
    table.add("GET", "/metrics", metrics, "the broker's metrics, Prometheus text format (Pulsar's names)",
              "metrics", response={"type": "string"}, text=True)


_registries: "weakref.WeakKeyDictionary[Broker, CollectorRegistry]" = weakref.WeakKeyDictionary()


def registry_of(broker: "Broker") -> CollectorRegistry:
    """The broker's own registry, holding one BrokerCollector (and so its rate samplers)."""
    registry = _registries.get(broker)
    if registry is None:
        registry = _registries[broker] = CollectorRegistry(auto_describe=False)
        registry.register(BrokerCollector(broker))
    return registry


async def metrics(request: web.Request) -> web.Response:
    """The families are read on the loop (the broker's state is the loop's); the text, about four
    fifths of a scrape's time, is rendered in a worker thread so a large scrape does not hold the
    loop in one piece."""
    families = list(registry_of(broker_of(request)).collect())
    body = await asyncio.get_running_loop().run_in_executor(None, exposition.generate_latest, _Collected(families))
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


class _Collected(Collector):
    """Families already collected, for generate_latest."""

    def __init__(self, families: list[Metric]):
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


class BrokerCollector(Collector):
    """Renders the broker's state on each scrape (on the broker's event loop, as every handler)."""

    def __init__(self, broker: "Broker"):
        self.broker = broker
        self.samplers: dict[str, TopicSampler] = {}  # topic name -> its sampler

    def collect(self) -> Iterable[Metric]:
        config = self.broker.config
        cluster = config.cluster_name
        out = Families()
        for name in BROKER_DEFAULTS:
            out.add(name, {"cluster": cluster}, 0)
        storage = self.broker.factory.stats()
        for name, key in STORAGE_METRICS.items():
            out.add(name, {"cluster": cluster}, storage[key])
        now = time.monotonic()
        by_namespace: dict[str, list[tuple[str, TopicNumbers]]] = defaultdict(list)
        for name, topic in list(self.broker.topics.items()):
            sampler = self.samplers.get(name)
            if sampler is None:
                sampler = self.samplers[name] = TopicSampler()
            by_namespace[topic.name.namespace_name].append((name, topic_numbers(topic, sampler, now)))
        for gone in self.samplers.keys() - self.broker.topics.keys():
            del self.samplers[gone]
        per_topic = config.expose_topic_level_metrics_in_prometheus
        for namespace, topics in by_namespace.items():
            labels = {"cluster": cluster, "namespace": namespace}
            if per_topic:
                out.add("pulsar_topics_count", labels, len(topics))
                for name, numbers in topics:
                    numbers.emit(out, {**labels, "topic": name}, per_topic=True)
            else:
                total = TopicNumbers()
                for _, numbers in topics:
                    total.merge(numbers)
                out.add("pulsar_topics_count", labels, len(topics))
                total.emit(out, labels, per_topic=False)
        functions = self.broker.functions  # the function instances' pulsar_function_* families
        return out.families() + (functions.metric_families() if functions is not None else [])


class Families:
    """Metric families by name, in first-use order; a family may mix label sets, as Pulsar's do."""

    def __init__(self):
        self._families: dict[str, Metric] = {}

    def _family(self, name: str) -> Metric:
        family = self._families.get(name)
        if family is None:
            kind, doc = METRICS[name]
            cls = {GAUGE: GaugeMetricFamily, COUNTER: CounterMetricFamily, HISTOGRAM: HistogramMetricFamily}[kind]
            family = self._families[name] = cls(name, doc)
        return family

    def add(self, name: str, labels: dict[str, str], value: float) -> None:
        family = self._family(name)
        sample_name = family.name + "_total" if family.type == COUNTER else family.name
        family.samples.append(Sample(sample_name, labels, float(value)))

    def histogram(self, name: str, labels: dict[str, str], bounds_seconds: Iterable[float],
                  counts: Iterable[int], sum_value: float) -> None:
        """counts: per bucket, not cumulative, the last one past the last bound."""
        family = self._family(name)
        cumulative = 0
        for bound, count in zip([*bounds_seconds, float("inf")], counts):
            cumulative += count
            le = "+Inf" if bound == float("inf") else repr(bound)
            family.samples.append(Sample(name + "_bucket", {**labels, "le": le}, float(cumulative)))
        family.samples.append(Sample(name + "_count", labels, float(cumulative)))
        family.samples.append(Sample(name + "_sum", labels, sum_value))

    def families(self) -> list[Metric]:
        return list(self._families.values())


class TopicSampler(RateSampler):
    """What a topic's counters were at earlier scrapes: rates come from their deltas (RateSampler),
    and the latency gauges from the write latency buckets' growth over the last completed stats period."""

    def __init__(self):
        super().__init__()
        self._window_start = 0.0
        self._window_base: tuple[tuple[int, ...], int] | None = None  # (counts, sum) at its start
        self.last_window: tuple[tuple[int, ...], int] = ((0,) * len(LATENCY_SUFFIXES), 0)

    def latency_window(self, counts: tuple[int, ...], sum_usec: int, now: float) -> tuple[tuple[int, ...], int]:
        """(counts, sum) added during the last completed stats period (zeros before the first)."""
        if self._window_base is None:
            self._window_base, self._window_start = (counts, sum_usec), now
        elif now - self._window_start >= STATS_PERIOD_SECONDS:
            base_counts, base_sum = self._window_base
            if any(c < b for c, b in zip(counts, base_counts)):  # the ledger was reopened: counts restarted
                base_counts, base_sum = (0,) * len(counts), 0
            self.last_window = (tuple(c - b for c, b in zip(counts, base_counts)), sum_usec - base_sum)
            self._window_base, self._window_start = (counts, sum_usec), now
        return self.last_window


class TopicNumbers:
    """One topic's numbers at a scrape (or a namespace's, summed with merge)."""

    def __init__(self):
        self.subscriptions_count = self.producers_count = self.consumers_count = 0
        self.rate_in = self.rate_out = self.throughput_in = self.throughput_out = 0.0
        self.msg_in = self.bytes_in = self.msg_out = self.bytes_out = 0
        self.storage_size = self.backlog = self.add_entry_errors = 0
        self.latency_bounds_usec: tuple[int, ...] = ()
        self.latency_counts: tuple[int, ...] = (0,) * len(LATENCY_SUFFIXES)  # since the topic loaded
        self.latency_sum_usec = 0
        self.window_counts: tuple[int, ...] = (0,) * len(LATENCY_SUFFIXES)  # the last stats period
        self.window_sum_usec = 0
        self.blocked_on_ack_state = self.recently_joined = 0
        self.replication: dict[str, dict[str, float]] = {}  # remote cluster -> its numbers
        self.subscriptions: list[tuple[str, dict[str, float]]] = []  # (name, its numbers); per topic only

    def merge(self, other: "TopicNumbers") -> None:
        for attr in ("subscriptions_count", "producers_count", "consumers_count", "rate_in", "rate_out",
                     "throughput_in", "throughput_out", "msg_in", "bytes_in", "msg_out", "bytes_out",
                     "storage_size", "backlog", "add_entry_errors", "latency_sum_usec", "window_sum_usec", "blocked_on_ack_state",
                     "recently_joined"):
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))
        self.latency_bounds_usec = other.latency_bounds_usec or self.latency_bounds_usec
        self.latency_counts = tuple(a + b for a, b in zip(self.latency_counts, other.latency_counts))
        self.window_counts = tuple(a + b for a, b in zip(self.window_counts, other.window_counts))
        for remote, numbers in other.replication.items():
            mine = self.replication.setdefault(remote, dict.fromkeys(numbers, 0.0))
            for key, value in numbers.items():
                mine[key] += value

    def emit(self, out: Families, labels: dict[str, str], per_topic: bool) -> None:
        for name, value in (
            ("pulsar_subscriptions_count", self.subscriptions_count),
            ("pulsar_producers_count", self.producers_count),
            ("pulsar_consumers_count", self.consumers_count),
            ("pulsar_rate_in", self.rate_in),
            ("pulsar_rate_out", self.rate_out),
            ("pulsar_throughput_in", self.throughput_in),
            ("pulsar_throughput_out", self.throughput_out),
            ("pulsar_storage_size", self.storage_size),
            ("pulsar_storage_logical_size", self.storage_size),
            ("pulsar_in_messages_total", self.msg_in),
            ("pulsar_in_bytes_total", self.bytes_in),
            ("pulsar_ml_AddEntryErrors", self.add_entry_errors),
        ):
            out.add(name, labels, value)
        if per_topic:
            out.add("pulsar_msg_backlog", labels, self.backlog)
        else:  # Pulsar's namespace-level form
            out.add("pulsar_out_messages_total", labels, self.msg_out)
            out.add("pulsar_out_bytes_total", labels, self.bytes_out)
            out.add("pulsar_msg_backlog", {**labels, "remote_cluster": "local"}, self.backlog)
        for suffix, count in zip(LATENCY_SUFFIXES, self.window_counts):
            out.add(f"pulsar_storage_write_latency_{suffix}", labels, count)
        out.add("pulsar_storage_write_latency_count", labels, sum(self.window_counts))
        out.add("pulsar_storage_write_latency_sum", labels, self.window_sum_usec)
        out.histogram("minipulsar_storage_write_latency_seconds", labels,
                      [bound / 1e6 for bound in self.latency_bounds_usec], self.latency_counts,
                      self.latency_sum_usec / 1e6)
        for remote, numbers in self.replication.items():
            remote_labels = {**labels, "remote_cluster": remote}
            for name, value in numbers.items():
                out.add(name, remote_labels, value)
        if per_topic:
            for subscription, numbers in self.subscriptions:
                sub_labels = {**labels, "subscription": subscription}
                for name, value in numbers.items():
                    out.add(name, sub_labels, value)
        else:
            out.add("minipulsar_subscription_blocked_on_ack_state_persistent", labels, self.blocked_on_ack_state)
            out.add("minipulsar_subscription_recently_joined_consumers", labels, self.recently_joined)


def topic_numbers(topic: "PersistentTopic", sampler: TopicSampler, now: float) -> TopicNumbers:
    """Read one topic's state (and its sampler's rates) into TopicNumbers."""
    n = TopicNumbers()
    n.msg_in, n.bytes_in = topic.msg_in_counter, topic.bytes_in_counter
    rate_in = sampler.rate(("in", "msgs"), n.msg_in, now)
    throughput_in = sampler.rate(("in", "bytes"), n.bytes_in, now)

    replication: dict[str, dict[str, float]] = {}
    prefix = topic.context.replicator_prefix + "."
    inbound: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # remote cluster -> [msgs, bytes] of its replicators
    for producer in list(topic.producers.values()):
        if producer.name.startswith(prefix):
            counters = inbound[producer.name[len(prefix):].split(REPLICATOR_NAME_DELIMITER)[0]]
            counters[0] += producer.msg_in
            counters[1] += producer.bytes_in
        else:
            n.producers_count += 1
    for remote, (msgs, size) in inbound.items():
        numbers = replication[remote] = _replication_numbers()
        numbers["pulsar_replication_rate_in"] = sampler.rate(("repl-in", remote, "msgs"), msgs, now)
        numbers["pulsar_replication_throughput_in"] = sampler.rate(("repl-in", remote, "bytes"), size, now)
    for remote, replicator in list(topic.replication.replicators.items()):
        numbers = replication.setdefault(remote, _replication_numbers())
        numbers["pulsar_replication_rate_out"] = sampler.rate(("repl-out", remote, "msgs"), replicator.msg_out, now)
        numbers["pulsar_replication_throughput_out"] = sampler.rate(("repl-out", remote, "bytes"),
                                                                    replicator.bytes_out, now)
        numbers["pulsar_replication_backlog"] = \
            replicator.cursor.number_of_entries_in_backlog() if replicator.cursor is not None else 0
        numbers["pulsar_replication_connected_count"] = 1 if replicator.connected else 0
    n.replication = replication
    # Pulsar's rate_in counts local producers only; replicated messages show as replication rate_in.
    n.rate_in = max(0.0, rate_in - sum(r["pulsar_replication_rate_in"] for r in replication.values()))
    n.throughput_in = max(0.0, throughput_in - sum(r["pulsar_replication_throughput_in"] for r in replication.values()))

    for name, subscription in list(topic.subscriptions.items()):
        n.subscriptions.append((name, _subscription_numbers(n, name, subscription, sampler, now)))
    n.subscriptions_count = len(n.subscriptions)

    ledger = topic.ledger
    n.storage_size = ledger.total_size
    n.add_entry_errors = ledger.add_entry_errors
    latency = ledger.write_latency
    n.latency_bounds_usec, n.latency_counts, n.latency_sum_usec = latency.bounds_usec, latency.counts, latency.sum_usec
    n.window_counts, n.window_sum_usec = sampler.latency_window(latency.counts, latency.sum_usec, now)
    sampler.forget_untouched()
    return n


def _replication_numbers() -> dict[str, float]:
    return dict.fromkeys(("pulsar_replication_rate_in", "pulsar_replication_rate_out",
                          "pulsar_replication_throughput_in", "pulsar_replication_throughput_out",
                          "pulsar_replication_backlog", "pulsar_replication_connected_count"), 0.0)


def _subscription_numbers(n: TopicNumbers, name: str, subscription: "Subscription", sampler: TopicSampler,
                          now: float) -> dict[str, float]:
    """One subscription's metrics by name; adds its share to the topic's totals."""
    consumers = subscription.consumers
    backlog = subscription.backlog
    rate_out = sampler.rate(("sub", name, "msgs"), subscription.msg_out_counter, now)
    throughput_out = sampler.rate(("sub", name, "bytes"), subscription.bytes_out_counter, now)
    blocked = 1 if subscription.ack_state_gate.blocked else 0
    recently_joined = len(getattr(subscription.dispatcher, "recently_joined", ()))
    n.consumers_count += len(consumers)
    n.backlog += backlog
    n.rate_out += rate_out
    n.throughput_out += throughput_out
    n.msg_out += subscription.msg_out_counter
    n.bytes_out += subscription.bytes_out_counter
    n.blocked_on_ack_state += blocked
    n.recently_joined += recently_joined
    return {
        "pulsar_subscription_back_log": backlog,
        "pulsar_subscription_unacked_messages": sum(c.unacked_messages for c in consumers),
        "pulsar_subscription_blocked_on_unacked_messages": 0,
        "pulsar_subscription_msg_rate_out": rate_out,
        "pulsar_subscription_msg_throughput_out": throughput_out,
        "pulsar_subscription_consumers_count": len(consumers),
        "pulsar_out_messages_total": subscription.msg_out_counter,
        "pulsar_out_bytes_total": subscription.bytes_out_counter,
        "minipulsar_subscription_blocked_on_ack_state_persistent": blocked,
        "minipulsar_subscription_recently_joined_consumers": recently_joined,
    }
