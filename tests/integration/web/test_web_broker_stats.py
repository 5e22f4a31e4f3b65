"""GET /admin/v2/broker-stats/topics and /admin/v2/broker-stats/load-report: Pulsar's shapes, the
counters of what the official client produced and consumed, rates from their growth, and the
super-user rule."""
from __future__ import annotations

import requests

from tests.helpers import wait_for
from tests.pki import token_settings

BUNDLE = "0x00000000_0xffffffff"


def test_topic_stats_stream_counts_and_rates(broker, official, topic, admin):
    consumer = official.subscribe(topic, "billing")
    producer = official.create_producer(topic, producer_name="orders-producer")
    for i in range(10):
        producer.send(b"x" * 100)
        consumer.acknowledge(consumer.receive(10000))
    consumer.close()  # its acknowledgements reach the broker first

    def streamed():
        return admin.get("/admin/v2/broker-stats/topics").json()

    first = wait_for(lambda: (t := streamed())["public/default"][BUNDLE]["persistent"][topic]["subscriptions"]
                     ["billing"]["msgBacklog"] == 0 and t, "the acknowledgements counted")
    stats = first["public/default"][BUNDLE]["persistent"][topic]
    assert (stats["msgInCount"], stats["bytesInCount"], stats["msgOutCount"]) == (10, stats["bytesInCount"], 10)
    assert stats["bytesInCount"] >= 1000 and stats["bytesOutCount"] >= 1000
    assert stats["producerCount"] == 1 and stats["publishers"][0]["producerName"] == "orders-producer"
    sub = stats["subscriptions"]["billing"]
    assert (sub["type"], sub["msgBacklog"], sub["consumers"]) == ("Exclusive", 0, [])
    assert stats["storageSize"] > 0 and stats["backlogSize"] == 0 and stats["pendingAddEntriesCount"] == 0
    assert first["public/default"][BUNDLE]["non-persistent"] == {}
    consumer = official.subscribe(topic, "billing")
    for i in range(10):
        producer.send(b"y" * 100)
        consumer.acknowledge(consumer.receive(10000))
    live = streamed()["public/default"][BUNDLE]["persistent"][topic]["subscriptions"]["billing"]["consumers"]
    assert set(live[0]) >= {"address", "consumerName", "availablePermits", "connectedSince", "msgRateOut",
                            "msgThroughputOut", "metadata"}

    def rates():
        again = admin.get("/admin/v2/broker-stats/topics").json()["public/default"][BUNDLE]["persistent"][topic]
        return again if again["msgRateIn"] > 0 and again["msgRateOut"] > 0 else None

    moved = wait_for(rates, "rates from the counters' growth", timeout=10, interval=0.3)
    assert moved["msgThroughputIn"] > moved["msgRateIn"]  # bytes per second, messages of 100+ bytes
    assert moved["averageMsgSize"] >= 100


def test_load_report_sums_the_topics(broker, official, topic, admin):
    official.subscribe(topic, "s1")
    official.create_producer(topic).send(b"hello")
    report = admin.get("/admin/v2/broker-stats/load-report").json()
    assert report["loadReportType"] == "LocalBrokerData"
    assert (report["numTopics"], report["numProducers"], report["numConsumers"]) == (1, 1, 1)
    assert report["pulsarServiceUrl"] == broker.url and report["brokerVersionString"]
    assert report["bundles"] == [f"public/default/{BUNDLE}"]
    assert report["lastStats"][f"public/default/{BUNDLE}"]["topics"] == 1
    assert 0 < report["startTimestamp"] <= report["lastUpdate"]
    assert report["cpu"] == {"usage": 0.0, "limit": 0.0}


def test_broker_stats_need_a_super_user(broker_factory, jwt_keys, make_token):
    broker = broker_factory(**token_settings(jwt_keys, authorizationEnabled="true", superUserRoles="admin"))
    base = broker.broker.web_service_url

    def get(path, role):
        return requests.get(base + path, headers={"Authorization": f"Bearer {make_token(role)}"}, timeout=10)

    for path in ("/admin/v2/broker-stats/topics", "/admin/v2/broker-stats/load-report"):
        assert get(path, "admin").status_code == 200
        assert get(path, "bob").status_code == 403
