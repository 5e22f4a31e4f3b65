"""Pulsar's topic stats over REST under steady traffic (statsUpdateFrequencyInSecs=1): every field
of Pulsar's TopicStats, SubscriptionStats, ConsumerStats and PublisherStats is present; rates are
near the real rate while traffic flows and 0 once it stops; counters are exact; partitioned stats
are the partitions' sums."""
from __future__ import annotations

import threading
import time

import pulsar
import pytest

from minipulsar.broker.stats_shapes import CONSUMER_ZERO, PUBLISHER_ZERO, SUBSCRIPTION_ZERO, TOPIC_ZERO
from tests.helpers import Admin, rest_path, wait_for

RATE = 100  # messages per second the producer aims at
PAYLOAD = b"x" * 200


class SteadyProducer(threading.Thread):
    """Sends PAYLOAD at RATE msg/s (each send on its own deadline, so the pace does not drift)
    until stopped; counts what it sent."""

    def __init__(self, producer):
        super().__init__(daemon=True)
        self.producer = producer
        self.sent = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.stopping.is_set():
            self.producer.send(PAYLOAD)
            self.sent += 1
            self.stopping.wait(max(0.0, start + self.sent / RATE - time.monotonic()))


class AckingConsumer(threading.Thread):
    def __init__(self, consumer):
        super().__init__(daemon=True)
        self.consumer = consumer
        self.received = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                message = self.consumer.receive(200)
            except pulsar.Timeout:
                continue
            except pulsar.AlreadyClosed:  # the test ended early and closed the client
                return
            self.consumer.acknowledge(message)
            self.received += 1


@pytest.fixture
def stats_broker(broker_factory):
    return broker_factory(statsUpdateFrequencyInSecs=1)


def near(value: float, target: float) -> bool:
    """Within 40 % of target: the broker's rate covers its last 1 s interval, the test's figure
    the last two seconds of a sleeping thread's pace, on a shared machine."""
    return 0.6 * target <= value <= 1.4 * target


def test_rates_follow_steady_traffic_and_fall_to_zero_when_idle(stats_broker, topic):
    admin = Admin(stats_broker.broker.web_service_url + "/admin/v2")
    path = rest_path(topic) + "/stats"
    client = pulsar.Client(stats_broker.url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    started_ms = int(time.time() * 1000)
    try:
        consumer = AckingConsumer(client.subscribe(topic, "sub", consumer_name="c1"))
        producer = SteadyProducer(client.create_producer(topic, producer_name="p1", batching_enabled=False))
        consumer.start()
        producer.start()
        # After the first rate, two more seconds of traffic: the rates then cover a full interval of it.
        wait_for(lambda: admin.get(path).json()["msgRateIn"] > 0, "a first rate")
        since, sent = time.monotonic(), producer.sent
        wait_for(lambda: producer.sent >= sent + 2 * RATE, "two more seconds of traffic")
        real = (producer.sent - sent) / (time.monotonic() - since)  # what was sent, msg/s
        stats = admin.get(path).json()
        sub = stats["subscriptions"]["sub"]
        publisher, cons = stats["publishers"][0], sub["consumers"][0]
        assert near(stats["msgRateIn"], real), (stats["msgRateIn"], real)
        assert near(publisher["msgRateIn"], real) and near(stats["msgRateOut"], real), stats
        assert near(sub["msgRateOut"], real) and near(cons["msgRateOut"], real) and near(sub["messageAckRate"], real)
        # bytes are the stored entry (metadata and payload), as Pulsar's msgThroughputIn counts them
        assert len(PAYLOAD) <= stats["averageMsgSize"] <= len(PAYLOAD) + 200
        assert near(stats["msgThroughputIn"], real * stats["averageMsgSize"])
        assert publisher["averageMsgSize"] == pytest.approx(stats["averageMsgSize"])
        throughput = real * stats["averageMsgSize"]  # every message goes in and out once
        assert near(publisher["msgThroughputIn"], throughput) and near(stats["msgThroughputOut"], throughput)
        assert near(sub["msgThroughputOut"], throughput) and near(cons["msgThroughputOut"], throughput)
        assert stats["waitingPublishers"] == 0 and sub["msgRateExpired"] == 0 and cons["msgRateRedeliver"] == 0
        assert started_ms <= sub["lastAckedTimestamp"] and started_ms <= cons["lastConsumedTimestamp"]
        assert started_ms <= sub["lastConsumedTimestamp"] and started_ms <= cons["lastAckedTimestamp"]
        assert sub["lastConsumedFlowTimestamp"] >= started_ms and cons["lastConsumedTime"].endswith("Z")
        assert sub["lastMarkDeleteAdvancedTimestamp"] >= started_ms
        for shape, fields in ((TOPIC_ZERO, stats), (SUBSCRIPTION_ZERO, sub), (CONSUMER_ZERO, cons),
                              (PUBLISHER_ZERO, publisher)):
            assert set(shape) <= set(fields), set(shape) - set(fields)
        assert publisher["producerName"] == "p1" and publisher["accessMode"] == "Shared"
        assert cons["consumerName"] == "c1" and cons["avgMessagesPerEntry"] == 1
        assert stats["ownerBroker"] == stats_broker.broker.web_service_url.split("://")[1]

        producer.stopping.set()
        producer.join(10)
        wait_for(lambda: consumer.received == producer.sent, "everything received")
        consumer.stopping.set()
        consumer.join(10)
        # Counters are exact; rates fall to 0 after an idle interval.
        idle = wait_for_stats(admin, path, lambda s: s["msgRateIn"] == 0 and s["msgRateOut"] == 0
                              and s["subscriptions"]["sub"]["messageAckRate"] == 0)
        sub = idle["subscriptions"]["sub"]
        assert idle["msgInCounter"] == producer.sent == idle["msgOutCounter"] == sub["msgOutCounter"]
        assert idle["bytesInCounter"] == idle["bytesOutCounter"] == sub["bytesOutCounter"]
        assert idle["publishers"][0]["msgInCounter"] == producer.sent
        assert sub["msgBacklog"] == 0 and sub["backlogSize"] == 0 and idle["backlogSize"] == 0
        assert idle["averageMsgSize"] == 0.0 and sub["consumers"][0]["msgRateOut"] == 0
    finally:
        client.close()


def wait_for_stats(admin: Admin, path: str, condition) -> dict:
    found = {}

    def check() -> bool:
        found.update(admin.get(path).json())
        return condition(found)

    wait_for(check, "the stats condition", timeout=10)
    return found


def test_backlog_size_redelivery_rate_and_partitioned_sums(stats_broker, topic):
    admin = Admin(stats_broker.broker.web_service_url + "/admin/v2")
    assert admin.put(rest_path(topic) + "/partitions", json=2).status_code == 204
    client = pulsar.Client(stats_broker.url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                    negative_ack_redelivery_delay_ms=100)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(20):
            producer.send(PAYLOAD, partition_key=str(i))
        received = [consumer.receive(5000) for _ in range(20)]
        for message in received[:10]:
            consumer.acknowledge(message)
        for message in received[10:]:
            consumer.negative_acknowledge(message)
        path = rest_path(topic) + "/partitioned-stats"
        stats = wait_for_stats(admin, path, lambda s: s["subscriptions"]["sub"]["msgRateRedeliver"] > 0)
        parts = stats["partitions"]
        assert stats["metadata"] == {"partitions": 2} and len(parts) == 2
        assert stats["msgInCounter"] == 20 == sum(p["msgInCounter"] for p in parts.values())
        assert stats["bytesInCounter"] == sum(p["bytesInCounter"] for p in parts.values())
        sub = stats["subscriptions"]["sub"]
        assert sub["msgRateRedeliver"] == pytest.approx(sum(
            p["subscriptions"]["sub"]["msgRateRedeliver"] for p in parts.values()))
        assert sub["msgBacklog"] == 10 and sub["msgBacklogNoDelayed"] == 10
        # backlogSize: the bytes of the entries after the mark-delete position (half of the 20 here)
        assert sub["backlogSize"] == pytest.approx(10 * stats["storageSize"] / 20, rel=0.2)
        assert stats["backlogSize"] == sum(p["backlogSize"] for p in parts.values()) > 0
    finally:
        client.close()
