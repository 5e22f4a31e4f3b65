"""WebSocket paths and query parameters read as Pulsar reads them (broker/web/websocket/paths.py,
params.py)."""
from __future__ import annotations

import pytest

from minipulsar.broker.web.websocket.params import (InvalidParam, consumer_options, producer_options,
                                                    reader_options)
from minipulsar.broker.web.websocket.paths import Endpoint, InvalidPath, parse_path
from minipulsar.client import (CompressionType, ConsumerType, HashingScheme, InitialPosition, MessageId,
                               PartitionsRoutingMode, SubscriptionMode)

TOPIC = "persistent://public/default/t"


def test_v2_paths():
    assert parse_path("/ws/v2/producer/persistent/public/default/t") == Endpoint("producer", TOPIC)
    assert parse_path("/ws/v2/consumer/non-persistent/public/default/t/my%20sub") == Endpoint(
        "consumer", "non-persistent://public/default/t", "my sub")
    assert parse_path("/ws/v2/reader/persistent/public/default/a%2Fb") == Endpoint(
        "reader", "persistent://public/default/a/b")
    assert parse_path("/ws/v2/producer/persistent/public/default/a//b") == Endpoint(
        "producer", "persistent://public/default/a/b")  # empty segments dropped, as Pulsar


def test_v1_paths_name_a_cluster_scoped_namespace():
    assert parse_path("/ws/consumer/persistent/acme/us-west/orders/t/s") == Endpoint(
        "consumer", "persistent://acme/us-west/orders/t", "s", "acme/us-west/orders")


@pytest.mark.parametrize("path, message", [
    ("/ws/v2/producer/persistent/public/default", "Invalid topic name format"),
    ("/ws/v2/consumer/persistent/public/default/t", "Invalid topic name format"),
    ("/ws/v2/consumer/persistent/public/default/t/s/extra", "Invalid topic name format"),
    ("/ws/v2/consumer/persistent/public/default/t/", "Empty subscription name"),
    ("/ws/v2/producer/durable/public/default/t", "Invalid topic name format"),
    ("/ws/v2/publisher/persistent/public/default/t", "Invalid topic name format"),
])
def test_bad_paths(path, message):
    with pytest.raises(InvalidPath, match=message):
        parse_path(path)


def test_producer_defaults_are_pulsars_websocket_defaults():
    assert producer_options({}) == {
        "batching_enabled": False, "block_if_queue_full": False, "hashing_scheme": HashingScheme.JavaStringHash,
        "message_routing_mode": PartitionsRoutingMode.UseSinglePartition}


def test_producer_parameters():
    options = producer_options({
        "producerName": "p", "initialSequenceId": "9000000000", "hashingScheme": "Murmur3_32Hash",
        "sendTimeoutMillis": "5000", "batchingEnabled": "TRUE", "batchingMaxMessages": "10",
        "maxPendingMessages": "0", "batchingMaxPublishDelay": "3", "messageRoutingMode": "RoundRobinPartition",
        "compressionType": "ZLIB"})
    assert options == {
        "producer_name": "p", "initial_sequence_id": 9000000000, "hashing_scheme": HashingScheme.Murmur3_32Hash,
        "send_timeout_millis": 5000, "batching_enabled": True, "batching_max_messages": 10,
        "max_pending_messages": 0, "batching_max_publish_delay_ms": 3,
        "message_routing_mode": PartitionsRoutingMode.RoundRobinDistribution,
        "compression_type": CompressionType.ZLib, "block_if_queue_full": False}
    assert producer_options({"messageRoutingMode": "CustomPartition"})["message_routing_mode"] == \
        PartitionsRoutingMode.UseSinglePartition  # Pulsar ignores CustomPartition
    assert producer_options({"batchingEnabled": "yes"})["batching_enabled"] is False  # Boolean.parseBoolean


@pytest.mark.parametrize("query, message", [
    ({"sendTimeoutMillis": "1e3"}, 'For input string: "1e3"'),
    ({"sendTimeoutMillis": "2147483648"}, 'For input string: "2147483648"'),
    ({"sendTimeoutMillis": "-1"}, "sendTimeout needs to be >= 0"),
    ({"batchingMaxMessages": "0"}, "batchingMaxMessages needs to be > 0"),
    ({"batchingMaxPublishDelay": "0"}, "at least 1ms"),
    ({"messageRoutingMode": "roundrobin"}, "Invalid messageRoutingMode roundrobin"),
    ({"compressionType": "lz4"}, "Invalid compressionType lz4"),
])
def test_bad_producer_parameters(query, message):
    with pytest.raises(InvalidParam, match=message):
        producer_options(query)


def test_consumer_parameters():
    options = consumer_options({
        "subscriptionType": "Key_Shared", "subscriptionMode": "NonDurable", "receiverQueueSize": "5000",
        "consumerName": "c", "priorityLevel": "2", "negativeAckRedeliveryDelay": "10", "ackTimeoutMillis": "2000",
        "maxRedeliverCount": "3", "subscriptionInitialPosition": "Earliest"}, TOPIC, "sub")
    policy = options.create.pop("dead_letter_policy")
    assert (policy.max_redeliver_count, policy.dead_letter_topic) == (3, f"{TOPIC}-sub-DLQ")
    assert options.create == {
        "consumer_type": ConsumerType.KeyShared, "subscription_mode": SubscriptionMode.NonDurable,
        "initial_position": InitialPosition.Earliest, "consumer_name": "c", "priority_level": 2,
        "negative_ack_redelivery_delay_ms": 10, "unacked_messages_timeout_ms": 2000, "receiver_queue_size": 1000}
    assert (options.pull_mode, options.max_pending) == (False, 1000)


def test_consumer_flow_modes():
    assert consumer_options({}, TOPIC, "s").max_pending == 1000
    assert consumer_options({"receiverQueueSize": "0"}, TOPIC, "s").max_pending == 1
    pull = consumer_options({"pullMode": "true", "receiverQueueSize": "7"}, TOPIC, "s")
    assert (pull.pull_mode, pull.max_pending, pull.create["receiver_queue_size"]) == (True, 0, 7)
    assert consumer_options({"subscriptionType": "Key_Failover"}, TOPIC, "s").create["consumer_type"] == \
        ConsumerType.KeyFailover
    explicit = consumer_options({"maxRedeliverCount": "1", "deadLetterTopic": "dlq"}, TOPIC, "s")
    assert explicit.create["dead_letter_policy"].dead_letter_topic == "dlq"


@pytest.mark.parametrize("query, message", [
    ({"subscriptionType": "shared"}, "Invalid subscriptionType shared"),
    ({"subscriptionMode": "Durably"}, "Invalid subscriptionMode Durably"),
    ({"subscriptionInitialPosition": "First"}, "Invalid subscriptionInitialPosition First"),
    ({"receiverQueueSize": "-1"}, "receiverQueueSize needs to be >= 0"),
    ({"priorityLevel": "-1"}, "priorityLevel needs to be >= 0"),
    ({"ackTimeoutMillis": "999"}, "Ack timeout should be greater than 1000 ms"),
    ({"deadLetterTopic": "d"}, "MaxRedeliverCount must be > 0."),
    ({"maxRedeliverCount": "0"}, "MaxRedeliverCount must be > 0."),
])
def test_bad_consumer_parameters(query, message):
    with pytest.raises(InvalidParam, match=message):
        consumer_options(query, TOPIC, "s")


def test_reader_parameters():
    assert reader_options({}).create == {"start_message_id": MessageId.latest, "receiver_queue_size": 1000}
    assert reader_options({"messageId": "earliest"}).create["start_message_id"] == MessageId.earliest
    start = reader_options({"messageId": "CAAQAw==", "readerName": "r", "receiverQueueSize": "0"})
    assert start.create == {"start_message_id": MessageId(-1, 0, 3), "reader_name": "r", "receiver_queue_size": 0}
    assert start.max_pending == 1
    with pytest.raises(InvalidParam):
        reader_options({"messageId": "nope!"})
