"""Broker-wide stats: /admin/v2/broker-stats/topics and /admin/v2/broker-stats/load-report.

GET /admin/v2/broker-stats/topics answers every loaded topic's figures in one document, nested as
Pulsar's: {namespace: {bundle range: {"persistent": {topic: stats}, "non-persistent": {...}}}}. A
topic's stats are the fields Pulsar's PersistentTopic.updateRates streams (publishers,
replication, subscriptions with their consumers, msgRateIn/Out and msgThroughputIn/Out in
messages and bytes per second, msgInCount/bytesInCount/msgOutCount/bytesOutCount counters since
the topic loaded, storageSize and backlogSize in bytes, pendingAddEntriesCount). One broker owns
every namespace whole, so each namespace has the one bundle 0x00000000_0xffffffff.

Pulsar computes these every statsUpdateFrequencyInSecs (60 s) and answers the last computation;
here they are computed when asked, and each rate is the growth of its counter since the previous
request at least RATE_MIN_INTERVAL_SECONDS (1 s) earlier (a sampler per topic, of its own: /metrics
scrapes do not move these windows). The console polls this path for its lists and charts.

GET /admin/v2/broker-stats/load-report answers Pulsar's LocalBrokerData (the modular load
manager's report: URLs, topic/producer/consumer counts, rates summed over topics, the version)
plus startTimestamp, when the web service started (ms since the epoch), as Pulsar's
BrokerLookupData carries it. Resource usage (cpu, memory, directMemory, bandwidthIn/Out) is not
measured: Pulsar's zero ResourceUsage. Both paths are for super-users, as in Pulsar.
Source: Pulsar BrokerStatsBase (getTopics2, getLoadReport), PersistentTopic/NonPersistentTopic
updateRates, StreamingStats, LocalBrokerData.
"""
from __future__ import annotations

import time

from aiohttp import web

from minipulsar import __version__
from minipulsar.broker.web.rate_sampler import RateSampler
from minipulsar.broker.web.routes import OBJECT, RouteTable

FULL_BUNDLE = "0x00000000_0xffffffff"  # the one bundle range of every namespace here
INDIVIDUAL_ACK_TYPES = ("Shared", "Key_Shared", "Key_Failover")  # Pulsar's Subscription.isIndividualAckMode
ZERO_USAGE = {"usage": 0.0, "limit": 0.0}  # Pulsar's ResourceUsage, unmeasured


class BrokerStatsState:
    """What the two paths keep between requests: the broker they read (the Broker, typed loosely so
    this module stays out of the web service's import cycle with it), each topic's rate sampler and
    the start time."""

    def __init__(self, broker):
        self.broker = broker
        self.samplers: dict[str, RateSampler] = {}
        self.started_ms = int(time.time() * 1000)

    def sampler(self, name: str) -> RateSampler:
        found = self.samplers.get(name)
        if found is None:
            found = self.samplers[name] = RateSampler()
        return found

    def forget_except(self, names: set[str]) -> None:
        for gone in self.samplers.keys() - names:
            del self.samplers[gone]


STATE: web.AppKey[BrokerStatsState] = web.AppKey("broker_stats_state", BrokerStatsState)


def attach(app: web.Application, broker) -> None:
    """Give the application its BrokerStatsState for broker (the web service calls this when it starts)."""
    app[STATE] = BrokerStatsState(broker)


def add_routes(table: RouteTable) -> None:
    table.add("GET", "/admin/v2/broker-stats/topics", topics, "every loaded topic's stats, by namespace and bundle",
              "broker-stats", response=OBJECT)
    table.add("GET", "/admin/v2/broker-stats/load-report", load_report, "this broker's load report (LocalBrokerData)",
              "broker-stats", response=OBJECT)


async def topics(request: web.Request) -> web.Response:
    return web.json_response(all_topic_stats(request.app[STATE]))


async def load_report(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return web.json_response(local_broker_data(state.broker, all_topic_stats(state), state.started_ms))


def all_topic_stats(state: BrokerStatsState) -> dict:
    """{namespace: {FULL_BUNDLE: {"persistent": {...}, "non-persistent": {...}}}}."""
    now = time.monotonic()
    tree: dict[str, dict] = {}
    loaded = {**state.broker.topics, **state.broker.non_persistent_topics}
    for name, topic in list(loaded.items()):
        domains = tree.setdefault(topic.name.namespace_name, {FULL_BUNDLE: {"persistent": {}, "non-persistent": {}}})
        domains[FULL_BUNDLE][topic.name.domain][name] = topic_stats(topic, state.sampler(name), now)
    state.forget_except(set(loaded))
    return tree


def topic_stats(topic, sampler: RateSampler, now: float) -> dict:
    """One topic's streamed stats (PersistentTopic.updateRates' fields)."""
    msg_in, bytes_in = topic.msg_in_counter, topic.bytes_in_counter
    rate_in = sampler.rate(("in", "msgs"), msg_in, now)
    throughput_in = sampler.rate(("in", "bytes"), bytes_in, now)
    subscriptions = {name: _subscription(name, sub, sampler, now) for name, sub in list(topic.subscriptions.items())}
    replication = _replication(topic, sampler, now)
    persistent = topic.persistent
    stats = {
        "publishers": [_publisher(p, sampler, now) for p in list(topic.producers.values())],
        "replication": replication,
        "subscriptions": subscriptions,
        "producerCount": len(topic.producers),
        "averageMsgSize": throughput_in / rate_in if rate_in else 0.0,
        "msgRateIn": rate_in,
        "msgRateOut": sum(s["msgRateOut"] for s in subscriptions.values())
                      + sum(r["msgRateOut"] for r in replication.values()),
        "msgInCount": msg_in,
        "bytesInCount": bytes_in,
        "msgOutCount": sum(s.msg_out_counter for s in topic.subscriptions.values()),
        "bytesOutCount": sum(s.bytes_out_counter for s in topic.subscriptions.values()),
        "msgThroughputIn": throughput_in,
        "msgThroughputOut": sum(s["msgThroughputOut"] for s in subscriptions.values())
                            + sum(r["msgThroughputOut"] for r in replication.values()),
        "storageSize": topic.ledger.total_size if persistent else 0,
        "backlogSize": topic.backlog_size() if persistent else 0,
        "pendingAddEntriesCount": topic.ledger.pending_appends if persistent else 0,
    }
    sampler.forget_untouched()
    return stats


def _publisher(producer, sampler: RateSampler, now: float) -> dict:
    own = producer.stats()
    rate = sampler.rate(("pub", producer.name, "msgs"), producer.msg_in, now)
    throughput = sampler.rate(("pub", producer.name, "bytes"), producer.bytes_in, now)
    return {"msgRateIn": rate, "msgThroughputIn": throughput, "averageMsgSize": throughput / rate if rate else 0.0,
            "address": own["address"], "producerId": own["producerId"], "producerName": own["producerName"],
            "connectedSince": own["connectedSince"], "metadata": own["metadata"]}


def _subscription(name: str, subscription, sampler: RateSampler, now: float) -> dict:
    consumers = [_consumer(name, c, subscription.type_name, sampler, now) for c in list(subscription.consumers)]
    stats = {
        "consumers": consumers,
        "msgBacklog": subscription.backlog if getattr(subscription, "cursor", None) is not None else 0,
        "msgRateExpired": 0.0,
        "msgRateOut": sampler.rate(("sub", name, "msgs"), subscription.msg_out_counter, now),
        "msgThroughputOut": sampler.rate(("sub", name, "bytes"), subscription.bytes_out_counter, now),
        "msgRateRedeliver": 0.0,
        "numberOfEntriesSinceFirstNotAckedMessage": _since_first_unacked(subscription),
        "totalNonContiguousDeletedMessagesRange": _ranges(subscription),
        "type": subscription.type_name,
    }
    if subscription.type_name in INDIVIDUAL_ACK_TYPES:
        stats["blockedSubscriptionOnUnackedMsgs"] = False
        stats["unackedMessages"] = sum(c["unackedMessages"] for c in consumers)
    return stats


def _consumer(subscription: str, consumer, sub_type: str, sampler: RateSampler, now: float) -> dict:
    own = consumer.stats()
    key = ("consumer", subscription, id(consumer))
    stats = {"address": own["address"], "consumerName": own["consumerName"],
             "availablePermits": own["availablePermits"], "connectedSince": own["connectedSince"],
             "msgRateOut": sampler.rate(key + ("msgs",), consumer.msg_out, now),
             "msgThroughputOut": sampler.rate(key + ("bytes",), consumer.bytes_out, now),
             "msgRateRedeliver": 0.0, "avgMessagesPerEntry": 0, "messageAckRate": 0.0}
    if sub_type in INDIVIDUAL_ACK_TYPES:
        stats["unackedMessages"] = own.get("unackedMessages", 0)
        stats["blockedConsumerOnUnackedMsgs"] = own.get("blockedConsumerOnUnackedMsgs", False)
    stats["metadata"] = own["metadata"]
    return stats


def _since_first_unacked(subscription) -> int:
    """Entries in (mark-delete position, read position], as Pulsar's
    getNumberOfEntriesSinceFirstNotAckedMessage (0 for a non-persistent subscription)."""
    cursor = getattr(subscription, "cursor", None)
    if cursor is None:
        return 0
    return subscription.topic.ledger.count_entries_between(cursor.mark_delete_position, cursor.read_position)


def _ranges(subscription) -> int:
    cursor = getattr(subscription, "cursor", None)
    return cursor.individually_deleted_ranges_count if cursor is not None else 0


def _replication(topic, sampler: RateSampler, now: float) -> dict:
    replication = getattr(topic, "replication", None)
    if replication is None:
        return {}
    answer = {}
    for remote, replicator in list(replication.replicators.items()):
        own = replicator.stats()
        answer[remote] = {
            "connected": own["connected"], "msgRateExpired": 0.0, "msgRateIn": 0.0,
            "msgRateOut": sampler.rate(("repl-out", remote, "msgs"), replicator.msg_out, now),
            "msgThroughputIn": 0.0,
            "msgThroughputOut": sampler.rate(("repl-out", remote, "bytes"), replicator.bytes_out, now),
            "replicationBacklog": own["replicationBacklog"],
            "replicationDelayInSeconds": own["replicationDelayInSeconds"],
            "inboundConnection": own["inboundConnection"], "inboundConnectedSince": None,
            "outboundConnection": own["outboundConnection"], "outboundConnectedSince": None,
        }
    return answer


def local_broker_data(broker, tree: dict, started_ms: int) -> dict:
    """Pulsar's LocalBrokerData, summed from the topic stats tree, plus startTimestamp."""
    totals = {"msgRateIn": 0.0, "msgRateOut": 0.0, "msgThroughputIn": 0.0, "msgThroughputOut": 0.0}
    topics = producers = consumers = 0
    last_stats = {}
    for namespace, bundles in tree.items():
        bundle_totals = {**dict.fromkeys(totals, 0.0), "consumerCount": 0, "producerCount": 0, "topics": 0,
                         "cacheSize": 0}
        for domains in bundles.values():
            for stats in (*domains["persistent"].values(), *domains["non-persistent"].values()):
                for key in totals:
                    bundle_totals[key] += stats[key]
                bundle_totals["topics"] += 1
                bundle_totals["producerCount"] += stats["producerCount"]
                bundle_totals["consumerCount"] += sum(len(s["consumers"]) for s in stats["subscriptions"].values())
        last_stats[f"{namespace}/{FULL_BUNDLE}"] = bundle_totals
        for key in totals:
            totals[key] += bundle_totals[key]
        topics += bundle_totals["topics"]
        producers += bundle_totals["producerCount"]
        consumers += bundle_totals["consumerCount"]
    config = broker.config
    return {
        "webServiceUrl": broker.web_service_url, "webServiceUrlTls": broker.web_service_url_tls,
        "pulsarServiceUrl": broker.service_url, "pulsarServiceUrlTls": broker.service_url_tls,
        "persistentTopicsEnabled": True, "nonPersistentTopicsEnabled": config.enable_non_persistent_topics,
        "cpu": ZERO_USAGE, "memory": ZERO_USAGE, "directMemory": ZERO_USAGE,
        "bandwidthIn": ZERO_USAGE, "bandwidthOut": ZERO_USAGE,
        **totals,
        "lastUpdate": int(time.time() * 1000),
        "lastStats": last_stats,
        "numTopics": topics, "numBundles": len(last_stats), "numConsumers": consumers, "numProducers": producers,
        "bundles": sorted(last_stats), "lastBundleGains": [], "lastBundleLosses": [],
        "brokerVersionString": __version__,
        "loadReportType": "LocalBrokerData",
        "protocols": {}, "advertisedListeners": {},
        "startTimestamp": started_ms,
    }
