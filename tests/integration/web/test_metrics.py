"""GET /metrics: Prometheus text with Pulsar's metric names and labels, checked against the traffic
the official client made (broker/web/metrics.py)."""
from __future__ import annotations

import pulsar
import requests
from prometheus_client.parser import text_string_to_metric_families

from minipulsar.broker.web import metrics as metrics_module
from tests.helpers import drain, wait_for

CLUSTER = "standalone"
NAMESPACE = "public/default"
LATENCY_BUCKETS = ("le_0_5", "le_1", "le_5", "le_10", "le_20", "le_50", "le_100", "le_200", "le_1000", "overflow")


def scrape(broker) -> list:
    """Every sample of one scrape, as parsed by prometheus_client."""
    response = requests.get(broker.broker.web_service_url + "/metrics", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    return [sample for family in text_string_to_metric_families(response.text) for sample in family.samples]


def value(samples: list, name: str, **labels) -> float | None:
    """The value of the sample `name` whose labels are exactly `labels` (None when absent)."""
    found = [s.value for s in samples if s.name == name and s.labels == labels]
    assert len(found) <= 1, f"{name}{labels} appears {len(found)} times"
    return found[0] if found else None


def topic_labels(topic: str) -> dict:
    return {"cluster": CLUSTER, "namespace": NAMESPACE, "topic": topic}


def test_metrics_follow_produce_and_consume(broker, official, topic):
    n, acked = 40, 15
    t, sub = topic_labels(topic), {**topic_labels(topic), "subscription": "sub-a"}
    consumer = official.subscribe(topic, "sub-a", consumer_type=pulsar.ConsumerType.Shared)
    producer = official.create_producer(topic, batching_enabled=False)
    baseline = scrape(broker)  # the rate and latency samplers start here
    assert value(baseline, "pulsar_in_messages_total", **t) == 0
    assert value(baseline, "pulsar_topics_count", cluster=CLUSTER) == 0  # Pulsar's broker-level zeros
    assert value(baseline, "pulsar_topics_count", cluster=CLUSTER, namespace=NAMESPACE) >= 1

    for i in range(n // 2):
        producer.send(f"m-{i}".encode())
    during = scrape(broker)  # half of the traffic is in
    assert value(during, "pulsar_in_messages_total", **t) == n // 2
    for i in range(n // 2, n):
        producer.send(f"m-{i}".encode())

    received = []
    wait_for(lambda: received.extend(drain(consumer, timeout_ms=100)) or len(received) >= n, "every message")
    for message in received[:acked]:
        consumer.acknowledge(message)

    samples = wait_for(lambda: (s := scrape(broker)) and value(s, "pulsar_msg_backlog", **t) == n - acked and s,
                       "the backlog to drop by the acknowledged messages")
    in_bytes = value(samples, "pulsar_in_bytes_total", **t)
    assert value(samples, "pulsar_in_messages_total", **t) == n
    assert in_bytes > 0
    assert value(samples, "pulsar_storage_size", **t) == in_bytes  # every entry as it was published
    assert value(samples, "pulsar_subscription_back_log", **sub) == n - acked
    assert value(samples, "pulsar_subscription_unacked_messages", **sub) == n - acked
    assert value(samples, "pulsar_out_messages_total", **sub) == n
    assert value(samples, "pulsar_out_bytes_total", **sub) == in_bytes
    assert value(samples, "pulsar_subscription_blocked_on_unacked_messages", **sub) == 0
    assert value(samples, "minipulsar_subscription_blocked_on_ack_state_persistent", **sub) == 0
    assert value(samples, "minipulsar_subscription_recently_joined_consumers", **sub) == 0
    assert value(samples, "pulsar_subscriptions_count", **t) == 1
    assert value(samples, "pulsar_producers_count", **t) == 1
    assert value(samples, "pulsar_consumers_count", **t) == 1
    assert value(samples, "pulsar_subscription_consumers_count", **sub) == 1
    # The cumulative histogram counts every entry since the topic loaded.
    assert value(samples, "minipulsar_storage_write_latency_seconds_count", **t) == n
    assert value(samples, "minipulsar_storage_write_latency_seconds_bucket", **t, le="+Inf") == n
    assert value(samples, "minipulsar_storage_write_latency_seconds_sum", **t) > 0

    consumer.close()  # the subscription's out counters outlive its consumers
    producer.close()
    after = wait_for(lambda: (s := scrape(broker)) and value(s, "pulsar_consumers_count", **t) == 0
                     and value(s, "pulsar_producers_count", **t) == 0 and s, "the clients to leave")
    assert value(after, "pulsar_out_messages_total", **sub) == n
    assert value(after, "pulsar_in_messages_total", **t) == n
    assert value(after, "pulsar_msg_backlog", **t) == n - acked


def test_rates_and_latency_windows_under_steady_traffic(broker, official, topic, monkeypatch):
    """Rates are counter deltas between scrapes at least a second apart, Pulsar's latency gauges
    cover the last completed stats period: with a message published and consumed before each
    scrape, some scrape sees them all positive."""
    monkeypatch.setattr(metrics_module, "STATS_PERIOD_SECONDS", 0.3)  # a short stats period for the test
    t = topic_labels(topic)
    sub = {**t, "subscription": "sub-r"}
    consumer = official.subscribe(topic, "sub-r")
    producer = official.create_producer(topic, batching_enabled=False)
    sent = 0

    def traffic_then_scrape():
        nonlocal sent
        producer.send(b"x" * 100)
        consumer.acknowledge(consumer.receive(10_000))
        sent += 1
        return scrape(broker)

    samples = wait_for(lambda: (s := traffic_then_scrape()) and value(s, "pulsar_rate_in", **t) > 0
                       and value(s, "pulsar_rate_out", **t) > 0 and s, "positive rates in and out")
    assert value(samples, "pulsar_throughput_in", **t) > 0
    assert value(samples, "pulsar_throughput_out", **t) > 0
    assert value(samples, "pulsar_subscription_msg_rate_out", **sub) == value(samples, "pulsar_rate_out", **t)
    assert value(samples, "pulsar_subscription_msg_throughput_out", **sub) == value(samples, "pulsar_throughput_out", **t)
    latency = wait_for(lambda: (s := traffic_then_scrape()) and value(s, "pulsar_storage_write_latency_count", **t) > 0
                       and s, "a stats period with writes")
    count = value(latency, "pulsar_storage_write_latency_count", **t)
    assert 0 < count <= sent
    assert sum(value(latency, f"pulsar_storage_write_latency_{b}", **t) for b in LATENCY_BUCKETS) == count
    assert value(latency, "pulsar_storage_write_latency_sum", **t) > 0  # microseconds, as Pulsar's


def test_namespace_level_metrics_without_topic_label(broker_factory):
    broker = broker_factory(exposeTopicLevelMetricsInPrometheus="false")
    client = pulsar.Client(broker.url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        topics = [f"persistent://{NAMESPACE}/ns-metrics-{i}" for i in range(2)]
        consumers = [client.subscribe(name, "sub") for name in topics]
        for count, name in zip((3, 5), topics):
            producer = client.create_producer(name, batching_enabled=False)
            for i in range(count):
                producer.send(b"payload")
            producer.close()
        ns = {"cluster": CLUSTER, "namespace": NAMESPACE}
        samples = wait_for(lambda: (s := scrape(broker)) and value(s, "pulsar_in_messages_total", **ns) == 8 and s,
                           "the namespace's published messages")
        assert not [s for s in samples if "topic" in s.labels or "subscription" in s.labels]
        assert value(samples, "pulsar_topics_count", **ns) == 2
        assert value(samples, "pulsar_subscriptions_count", **ns) == 2
        assert value(samples, "pulsar_consumers_count", **ns) == 2
        assert value(samples, "pulsar_producers_count", **ns) == 0
        assert value(samples, "pulsar_storage_size", **ns) > 0
        assert value(samples, "minipulsar_storage_write_latency_seconds_count", **ns) == 8
        wait_for(lambda: value(scrape(broker), "pulsar_out_messages_total", **ns) == 8 or None,
                 "every message dispatched")
        for consumer in consumers:  # prefetched, not acknowledged: the whole backlog stays
            consumer.close()
        assert value(scrape(broker), "pulsar_msg_backlog", **ns, remote_cluster="local") == 8
    finally:
        client.close()
