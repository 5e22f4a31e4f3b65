"""Chunking with the official client (issue 7, item 7): a 10 MiB message, produced with chunking by
a client that learnt maxMessageSize = 1 MB from CONNECTED, is stored as chunk entries exactly as
received and reassembled whole by the official consumer."""
from __future__ import annotations

import hashlib
import os

import pulsar
import pytest

from tests.helpers import wait_for

MAX_MESSAGE_SIZE = 1024 * 1024
PAYLOAD_SIZE = 10 * 1024 * 1024


@pytest.mark.parametrize("consumer_type", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Shared])
def test_ten_mib_chunked_message_arrives_whole(broker_factory, topic, consumer_type):
    broker = broker_factory(maxMessageSize=MAX_MESSAGE_SIZE)
    client = pulsar.Client(broker.url, operation_timeout_seconds=30)
    try:
        consumer = client.subscribe(topic, "sub", consumer_type=consumer_type)
        producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False,
                                          send_timeout_millis=60000)
        payload = os.urandom(PAYLOAD_SIZE)
        small_before = producer.send(b"small-before")
        producer.send(payload, properties={"kind": "big"})
        producer.send(b"small-after")
        assert consumer.receive(10000).data() == b"small-before"
        big = consumer.receive(30000)
        assert len(big.data()) == PAYLOAD_SIZE
        assert hashlib.sha256(big.data()).digest() == hashlib.sha256(payload).digest()
        assert big.properties() == {"kind": "big"}
        after = consumer.receive(10000)
        assert after.data() == b"small-after"
        consumer.acknowledge(big)  # the client acknowledges every chunk's entry
        consumer.acknowledge(after)
        consumer.acknowledge(small_before)
        wait_for(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 0,
                 "the acks of every chunk to empty the backlog", timeout=5)
        backlog = broker.run(lambda: broker.broker.stats()[topic]["subscriptions"]["sub"]["msgBacklog"])
        assert backlog == 0
        # Stored as chunks: more than one entry between the two small messages.
        entries = broker.run(lambda: broker.broker.topics[topic].ledger.number_of_entries)
        assert entries >= 2 + PAYLOAD_SIZE // MAX_MESSAGE_SIZE
        assert small_before.entry_id() == 0
    finally:
        client.close()
