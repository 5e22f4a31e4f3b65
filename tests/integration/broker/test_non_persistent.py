"""Non-persistent topics (PIP-2) with the official client: delivery to connected consumers with
permits, drops counted when none can take a message, every subscription type, partitioned topics,
topic listing by mode and regex subscriptions, and a restart that forgets everything."""
import re
import uuid

import pulsar
import pytest

from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from tests.helpers import RawConnection, drain, wait_for


@pytest.fixture
def np_topic() -> str:
    return f"non-persistent://public/default/np-{uuid.uuid4().hex[:12]}"


def np_stats(broker, topic: str) -> dict:
    return broker.run(lambda: broker.broker.non_persistent_topics[str(TopicName.parse(topic))].stats())


def values(messages) -> list[int]:
    return [int(m.data()) for m in messages]


@pytest.mark.parametrize("batching", [False, True])
def test_connected_consumer_receives_everything_in_order(client, broker, np_topic, batching):
    consumer = client.subscribe(np_topic, "s")
    producer = client.create_producer(np_topic, batching_enabled=batching, batching_max_publish_delay_ms=5)
    for i in range(200):
        producer.send_async(str(i).encode(), None)
    producer.flush()
    assert values(drain(consumer, timeout_ms=1000)) == list(range(200))
    stats = np_stats(broker, np_topic)
    assert stats["msgInCounter"] == 200 and stats["storageSize"] == 0
    assert stats["subscriptions"]["s"]["msgDropCount"] == 0


def test_receipt_is_immediate_and_has_pulsar_ids(client, np_topic):
    producer = client.create_producer(np_topic, batching_enabled=False)
    message_id = producer.send(b"nobody listens")  # no subscription: the receipt still comes at once
    assert (message_id.ledger_id(), message_id.entry_id()) == (0, 0)


def test_messages_before_subscribing_are_gone(client, np_topic):
    producer = client.create_producer(np_topic, batching_enabled=False)
    producer.send(b"early")
    consumer = client.subscribe(np_topic, "late")
    producer.send(b"1")
    assert [m.data() for m in drain(consumer, timeout_ms=500)] == [b"1"]


def test_consumer_without_permits_has_messages_dropped_and_counted(broker, np_topic):
    """A consumer that granted no permits (raw SUBSCRIBE, no FLOW) gets nothing: every message is
    dropped and counted in msgDropCount and msgDropRate."""
    raw = RawConnection(broker.url)
    try:
        assert raw.connect().type == api.BaseCommand.CONNECTED
        raw.send(api.BaseCommand(type=api.BaseCommand.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=np_topic, subscription="stalled", subType=api.CommandSubscribe.Exclusive, consumer_id=1,
            request_id=1)))
        assert raw.receive().type == api.BaseCommand.SUCCESS
        client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            producer = client.create_producer(np_topic, batching_enabled=False)
            for i in range(25):
                producer.send(str(i).encode())
            producer.close()
        finally:
            client.close()
        stats = np_stats(broker, np_topic)
        subscription = stats["subscriptions"]["stalled"]
        assert subscription["msgDropCount"] == 25
        assert subscription["msgDropRate"] > 0 and stats["msgDropRate"] > 0
        assert stats["msgInCounter"] == 25
    finally:
        raw.close()


def test_slow_consumer_loses_what_exceeds_its_permits(client, broker, np_topic):
    """receiver_queue_size 10 and no receive(): the client grants 10 permits, the rest is dropped."""
    consumer = client.subscribe(np_topic, "slow", receiver_queue_size=10)
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(100):
        producer.send(str(i).encode())
    dropped = np_stats(broker, np_topic)["subscriptions"]["slow"]["msgDropCount"]
    received = drain(consumer, timeout_ms=500)
    assert dropped >= 80 and len(received) + dropped == 100
    assert values(received) == sorted(values(received))


def test_every_subscription_gets_its_copy(client, np_topic):
    first, second = client.subscribe(np_topic, "a"), client.subscribe(np_topic, "b")
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(20):
        producer.send(str(i).encode())
    assert values(drain(first)) == list(range(20)) == values(drain(second))


def test_shared_spreads_across_consumers(client, np_topic):
    consumers = [client.subscribe(np_topic, "sh", consumer_type=pulsar.ConsumerType.Shared,
                                  consumer_name=f"c{i}") for i in range(3)]
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(90):
        producer.send(str(i).encode())
    got = [values(drain(c)) for c in consumers]
    assert sorted(sum(got, [])) == list(range(90))
    assert all(part for part in got), "every Shared consumer gets a share"


def test_failover_sends_to_the_active_consumer_only(client, np_topic):
    consumers = [client.subscribe(np_topic, "fo", consumer_type=pulsar.ConsumerType.Failover,
                                  consumer_name=name) for name in ("b-second", "a-first")]
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(30):
        producer.send(str(i).encode())
    second, first = (values(drain(c)) for c in consumers)
    assert first == list(range(30)) and second == []


def test_key_shared_keeps_each_key_on_one_consumer(client, np_topic):
    consumers = [client.subscribe(np_topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared,
                                  consumer_name=f"c{i}") for i in range(3)]
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(300):
        producer.send(str(i).encode(), partition_key=f"k{i % 20}")
    owners: dict[str, int] = {}
    total = 0
    for index, consumer in enumerate(consumers):
        received = drain(consumer)
        total += len(received)
        last: dict[str, int] = {}
        for message in received:
            key = message.partition_key()
            assert owners.setdefault(key, index) == index, f"{key} went to two consumers"
            assert int(message.data()) > last.get(key, -1)
            last[key] = int(message.data())
    assert total == 300 and len(set(owners.values())) > 1


def test_exclusive_refuses_a_second_consumer(client, np_topic):
    client.subscribe(np_topic, "ex")
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(np_topic, "ex")


def test_read_compacted_is_refused(client, np_topic):
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(np_topic, "rc", is_read_compacted=True)


def test_partitioned_non_persistent_topic(broker_factory, np_topic):
    broker = broker_factory(allowAutoTopicCreationType="partitioned", defaultNumPartitions=3)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(np_topic, "p")
        producer = client.create_producer(np_topic, batching_enabled=False)
        assert len(client.get_topic_partitions(np_topic)) == 3
        for i in range(60):
            producer.send(str(i).encode(), partition_key=str(i))
        received = drain(consumer, timeout_ms=1000)
        assert sorted(values(received)) == list(range(60))
        assert len({m.topic_name() for m in received}) == 3
    finally:
        client.close()


def test_topics_of_namespace_by_mode(client, broker, topic, np_topic):
    client.create_producer(topic)
    client.create_producer(np_topic)
    asked = {}
    raw = RawConnection(broker.url)
    try:
        raw.connect()
        Mode = api.CommandGetTopicsOfNamespace
        for request_id, mode in enumerate((Mode.PERSISTENT, Mode.NON_PERSISTENT, Mode.ALL), 1):
            raw.send(api.BaseCommand(type=api.BaseCommand.GET_TOPICS_OF_NAMESPACE,
                                     getTopicsOfNamespace=api.CommandGetTopicsOfNamespace(
                                         request_id=request_id, namespace="public/default", mode=mode)))
            asked[mode] = set(raw.receive().getTopicsOfNamespaceResponse.topics)
    finally:
        raw.close()
    assert topic in asked[Mode.PERSISTENT] and np_topic not in asked[Mode.PERSISTENT]
    assert np_topic in asked[Mode.NON_PERSISTENT] and topic not in asked[Mode.NON_PERSISTENT]
    assert {topic, np_topic} <= asked[Mode.ALL]


@pytest.mark.parametrize("mode, expect_persistent, expect_non_persistent", [
    (pulsar.RegexSubscriptionMode.NonPersistentOnly, False, True),
    (pulsar.RegexSubscriptionMode.AllTopics, True, True),
    (pulsar.RegexSubscriptionMode.PersistentOnly, True, False),
])
def test_regex_subscription_modes(client, mode, expect_persistent, expect_non_persistent):
    base = f"rx-{uuid.uuid4().hex[:8]}"
    durable, volatile = (f"persistent://public/default/{base}-p", f"non-persistent://public/default/{base}-np")
    producers = {name: client.create_producer(name, batching_enabled=False) for name in (durable, volatile)}
    consumer = client.subscribe(re.compile(f"public/default/{base}-.*"), "rx", regex_subscription_mode=mode,
                                initial_position=pulsar.InitialPosition.Earliest)
    for name, producer in producers.items():
        producer.send(name.encode())
    got = {m.data().decode() for m in drain(consumer, timeout_ms=1000)}
    assert (durable in got) == expect_persistent
    assert (volatile in got) == expect_non_persistent


def test_restart_forgets_non_persistent_topics(broker_factory, tmp_path, np_topic):
    data = tmp_path / "restart"
    broker = broker_factory(data_dir=data)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    client.create_producer(np_topic).send(b"x")
    client.close()
    assert np_topic in broker.run(lambda: broker.broker.list_topics("public/default", "non-persistent"))
    broker.stop()
    again = broker_factory(data_dir=data)
    assert again.run(lambda: again.broker.list_topics("public/default", "non-persistent")) == []


def test_admin_stats_and_listing(client, broker, np_topic):
    import requests
    consumer = client.subscribe(np_topic, "web")
    client.create_producer(np_topic, batching_enabled=False).send(b"1")
    drain(consumer)
    base = broker.broker.web_service_url + "/admin/v2/non-persistent/public/default"
    assert np_topic in requests.get(base, timeout=10).json()
    local = np_topic.rsplit("/", 1)[1]
    stats = requests.get(f"{base}/{local}/stats", timeout=10).json()
    assert stats["msgInCounter"] == 1 and "msgDropRate" in stats and "web" in stats["subscriptions"]
    assert requests.get(f"{base}/{local}/internalStats", timeout=10).status_code == 405


def test_disabled_non_persistent_topics_are_refused(broker_factory, np_topic):
    broker = broker_factory(enableNonPersistentTopics="false")
    client = pulsar.Client(broker.url, operation_timeout_seconds=5, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(np_topic)
    finally:
        client.close()
    wait_for(lambda: not broker.broker.non_persistent_topics, "no topic was created")
