"""Namespace policies through the admin API, each checked with the official client on the same
broker: applied at once, kept across a restart, removed with DELETE."""
import datetime
import time

import pulsar
import pytest
from pulsar.schema import AvroSchema

from tests.helpers import Admin, drain, wait_for

NS = "/admin/v2/namespaces/public/default"


def test_get_set_remove_and_errors(admin):
    assert admin.get(NS + "/messageTTL").json() is None
    assert admin.post(NS + "/messageTTL", json=60).status_code == 204
    assert admin.get(NS + "/messageTTL").json() == 60
    assert admin.get(NS).json()["message_ttl_in_seconds"] == 60
    assert admin.post(NS + "/messageTTL", json=-1).status_code == 412
    assert admin.post(NS + "/subscriptionTypesEnabled", json=["Nope"]).status_code == 412
    assert admin.put(NS + "/schemaCompatibilityStrategy", json="SOMETIMES").status_code == 412
    assert admin.delete(NS + "/messageTTL").status_code == 204
    assert admin.get(NS + "/messageTTL").json() is None
    assert admin.get("/admin/v2/namespaces/public/none/messageTTL").status_code == 404


def test_policies_survive_a_restart(broker_factory, tmp_path):
    first = broker_factory(data_dir=tmp_path / "d")
    assert Admin(first.broker.web_service_url).post(NS + "/maxUnackedMessagesPerConsumer", json=7).status_code == 204
    first.stop()
    second = Admin(broker_factory(data_dir=tmp_path / "d").broker.web_service_url)
    assert second.get(NS + "/maxUnackedMessagesPerConsumer").json() == 7


def test_message_ttl_expires_old_messages(admin, broker, official, topic):
    official.subscribe(topic, "sub").close()
    producer = official.create_producer(topic)
    for i in range(3):
        producer.send(b"old")
    assert admin.post(NS + "/messageTTL", json=1).status_code == 204
    # The broker checks every messageExpiryCheckIntervalInMinutes; run the same check until the
    # messages are a second old.
    wait_for(lambda: broker.call(broker.broker.expire_messages_by_ttl()) and
             broker.subscription_stats(topic, "sub")["msgBacklog"] == 0, "the TTL to expire the backlog")
    expired = broker.subscription_stats(topic, "sub")
    assert expired["totalMsgExpired"] == 3 and expired["lastExpireTimestamp"] > 0, expired
    producer.send(b"new")
    assert broker.subscription_stats(topic, "sub")["msgBacklog"] == 1


def test_subscription_types_enabled(admin, official, topic):
    assert admin.post(NS + "/subscriptionTypesEnabled", json=["Exclusive", "Failover"]).status_code == 204
    with pytest.raises(pulsar.PulsarException):
        official.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    official.subscribe(topic, "exclusive").close()
    assert admin.delete(NS + "/subscriptionTypesEnabled").status_code == 204
    official.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared).close()


def test_max_unacked_messages_per_consumer(admin, broker, official, topic):
    assert admin.post(NS + "/maxUnackedMessagesPerConsumer", json=4).status_code == 204
    consumer = official.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = official.create_producer(topic, batching_enabled=False)
    for i in range(10):
        producer.send(str(i).encode())
    held = drain(consumer, 500)
    assert len(held) == 4
    assert broker.subscription_stats(topic, "sub")["consumers"][0]["blockedConsumerOnUnackedMsgs"] is True
    for message in held[:2]:  # half of the limit acknowledged: sending resumes
        consumer.acknowledge(message)
    more = drain(consumer, 1000)
    assert [int(m.data()) for m in more][:2] == [4, 5]
    assert admin.delete(NS + "/maxUnackedMessagesPerConsumer").status_code == 204
    for message in held[2:] + more:
        consumer.acknowledge(message)
    assert len(drain(consumer, 1000)) == 10 - 4 - len(more)


def test_dispatcher_pause_on_ack_state_persistent(admin, broker, official, topic):
    official.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared).close()
    gate = broker.run(lambda: broker.broker.topics[topic].subscriptions["sub"].ack_state_gate)
    assert broker.run(gate.enabled) is False
    assert admin.post(NS + "/dispatcherPauseOnAckStatePersistent").status_code == 204
    assert admin.get(NS + "/dispatcherPauseOnAckStatePersistent").json() is True
    assert broker.run(gate.enabled) is True
    assert admin.delete(NS + "/dispatcherPauseOnAckStatePersistent").status_code == 204
    assert broker.run(gate.enabled) is False
    assert admin.get(NS + "/dispatcherPauseOnAckStatePersistent").json() is False


def test_unset_answers_as_pulsar(admin):
    assert admin.get(NS + "/subscriptionTypesEnabled").json() == []
    assert admin.get(NS + "/schemaCompatibilityStrategy").json() == "UNDEFINED"
    assert admin.get(NS + "/dispatcherPauseOnAckStatePersistent").json() is False
    assert admin.post(NS + "/subscriptionTypesEnabled", json=["Shared"]).status_code == 204
    assert admin.post(NS + "/subscriptionTypesEnabled", json=[]).status_code == 204
    assert admin.get(NS + "/subscriptionTypesEnabled").json() == []
    assert admin.put(NS + "/schemaCompatibilityStrategy", json="BACKWARD").status_code == 204
    assert admin.put(NS + "/schemaCompatibilityStrategy", json="UNDEFINED").status_code == 204
    assert admin.get(NS + "/schemaCompatibilityStrategy").json() == "UNDEFINED"
    assert admin.delete(NS + "/schemaCompatibilityStrategy").status_code == 405


def test_schema_compatibility_strategy_per_namespace(admin, official, topic):
    from tests.integration.broker.test_features_schemas import user_v2, user_v3

    official.create_producer(topic, schema=AvroSchema(user_v2())).close()
    with pytest.raises(pulsar.IncompatibleSchema):
        official.create_producer(topic, schema=AvroSchema(user_v3()))  # the broker's FULL refuses it
    assert admin.put(NS + "/schemaCompatibilityStrategy", json="ALWAYS_COMPATIBLE").status_code == 204
    assert admin.get(NS + "/schemaCompatibilityStrategy").json() == "ALWAYS_COMPATIBLE"
    official.create_producer(topic, schema=AvroSchema(user_v3())).close()


def test_deduplication_per_namespace(admin, broker, official, topic):
    assert admin.post(NS + "/deduplication", json=True).status_code == 204
    producer = official.create_producer(topic, producer_name="p1", batching_enabled=False)
    for sequence_id in (0, 1, 1, 2, 2, 2):
        producer.send(b"x", sequence_id=sequence_id)
    assert broker.topic_stats(topic)["numberOfEntries"] == 3
    assert broker.topic_stats(topic)["deduplicationStatus"] == "Enabled"
    assert admin.post(NS + "/deduplication", json=False).status_code == 204
    assert broker.topic_stats(topic)["deduplicationStatus"] == "Disabled"


def test_delayed_delivery_off_delivers_at_once(admin, official, topic):
    assert admin.post(NS + "/delayedDelivery", json={"active": False, "tickTime": 1000}).status_code == 204
    assert admin.get(NS + "/delayedDelivery").json() == {"active": False, "tickTime": 1000}
    consumer = official.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = official.create_producer(topic, batching_enabled=False)
    start = time.monotonic()
    producer.send(b"later", deliver_after=datetime.timedelta(seconds=30))
    assert consumer.receive(5000).data() == b"later"
    assert time.monotonic() - start < 30


def test_retention_keeps_consumed_ledgers(admin, broker, official, topic):
    assert admin.post(NS + "/retention", json={"retentionTimeInMinutes": 0, "retentionSizeInMB": 5}).status_code == 412
    assert admin.post(NS + "/retention", json={"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}).status_code == 204
    assert admin.get(NS + "/retention").json() == {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
    consumer = official.subscribe(topic, "sub")
    official.create_producer(topic).send(b"kept")
    consumer.acknowledge(consumer.receive(5000))
    consumer.close()
    assert admin.put("/admin/v2" + topic.replace("persistent://", "/persistent/") + "/unload").status_code == 204
    # Reloading rolls the ledger over; with unlimited retention the consumed one stays.
    official.create_producer(topic).send(b"next")
    wait_for(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 1, "the topic to load again")
    assert broker.topic_stats(topic)["numberOfEntries"] == 2
    assert admin.post(NS + "/retention", json={"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}).status_code == 204
    wait_for(lambda: broker.topic_stats(topic)["numberOfEntries"] == 1, "the consumed ledger to be trimmed")


def test_is_allow_auto_update_schema(admin, official, topic):
    from tests.integration.broker.test_features_schemas import user_v1, user_v2

    official.create_producer(topic, schema=AvroSchema(user_v1())).close()
    assert admin.post(NS + "/isAllowAutoUpdateSchema", json=False).status_code == 204
    with pytest.raises(pulsar.IncompatibleSchema):
        official.create_producer(topic, schema=AvroSchema(user_v2()))  # compatible, but a new version
    official.create_producer(topic, schema=AvroSchema(user_v1())).close()  # the known version is fine
    assert admin.post(NS + "/isAllowAutoUpdateSchema", json=True).status_code == 204
    official.create_producer(topic, schema=AvroSchema(user_v2())).close()


def test_backlog_quota_paths(admin):
    assert admin.get(NS + "/backlogQuotaMap").json() == {}
    quota = {"limitSize": 1000, "limitTime": -1, "policy": "producer_exception"}
    assert admin.post(NS + "/backlogQuota", json=quota).status_code == 204
    assert admin.get(NS + "/backlogQuotaMap").json() == {"destination_storage": quota}
    assert admin.post(NS + "/backlogQuota", params={"backlogQuotaType": "nope"}, json=quota).status_code == 400
    assert admin.post(NS + "/backlogQuota", json={"policy": "sometimes"}).status_code == 400
    assert admin.delete(NS + "/backlogQuota").status_code == 204
    assert admin.get(NS + "/backlogQuotaMap").json() == {}


@pytest.mark.parametrize("policy,error", [
    ("producer_exception", pulsar.ProducerBlockedQuotaExceededException),
    ("producer_request_hold", pulsar.ProducerBlockedQuotaExceededError),
])
def test_backlog_quota_blocks_producers(admin, broker, official, topic, policy, error):
    official.subscribe(topic, "slow").close()
    producer = official.create_producer(topic, batching_enabled=False)
    for _ in range(20):
        producer.send(b"x" * 100)
    quota = {"limitSize": 1000, "limitTime": -1, "policy": policy}
    assert admin.post(NS + "/backlogQuota", json=quota).status_code == 204
    client = pulsar.Client(broker.url, operation_timeout_seconds=3, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(error):
            client.create_producer(topic)
    finally:
        client.close()
    broker.call(broker.broker.check_backlog_quotas())  # the periodic check disconnects producers
    wait_for(lambda: not broker.topic_stats(topic)["publishers"], "the producer to be disconnected")
    assert admin.post(NS + "/backlogQuota", json={**quota, "limitSize": 1_000_000}).status_code == 204
    official.create_producer(topic).send(b"room again")


def test_backlog_quota_eviction(admin, broker, official, topic):
    official.subscribe(topic, "slow").close()
    producer = official.create_producer(topic, batching_enabled=False)
    for _ in range(20):
        producer.send(b"x" * 100)
    quota = {"limitSize": 1000, "limitTime": -1, "policy": "consumer_backlog_eviction"}
    assert admin.post(NS + "/backlogQuota", json=quota).status_code == 204
    backlog_bytes = lambda: broker.run(lambda: broker.broker.backlog_quotas.backlog_bytes(
        broker.broker.topics[topic].subscriptions["slow"]))
    assert backlog_bytes() > 1000
    broker.call(broker.broker.check_backlog_quotas())
    assert 0 < backlog_bytes() <= 1000
    assert 0 < broker.subscription_stats(topic, "slow")["msgBacklog"] < 20
    producer.send(b"still accepted")
