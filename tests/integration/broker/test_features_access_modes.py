"""Producer access modes and the topic epoch, with the official client (issue 7, item 2; PIP-68)."""
from __future__ import annotations

import threading
import time

import pulsar
import pytest

from minipulsar.broker.topic_name import TopicName
from tests.helpers import BrokerThread, wait_for

Mode = pulsar.ProducerAccessMode


def _epoch(broker, topic: str):
    return broker.run(lambda: broker.broker.topics[str(TopicName.parse(topic))].access.epoch)


def _waiting(broker, topic: str) -> int:
    """How many producers wait for exclusive access to topic (Pulsar's WaitForExclusive queue)."""
    return broker.run(lambda: len(broker.broker.topics[str(TopicName.parse(topic))].access.waiting))


def _producers(broker, topic: str) -> int:
    return broker.run(lambda: len(broker.broker.topics[str(TopicName.parse(topic))].producers))


def test_exclusive_refuses_other_producers(broker, client, topic):
    holder = client.create_producer(topic, access_mode=Mode.Exclusive)
    assert _epoch(broker, topic) == 0
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)  # Shared while an exclusive producer holds the topic
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
    consumer = client.subscribe(topic, "sub")
    holder.send(b"from-holder")
    assert consumer.receive(5000).data() == b"from-holder"
    holder.close()
    shared = client.create_producer(topic)  # free again
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)  # a shared producer is connected
    shared.send(b"shared")
    assert consumer.receive(5000).data() == b"shared"


def test_wait_for_exclusive_waits_for_the_holder(broker, client, topic):
    holder = client.create_producer(topic, access_mode=Mode.Exclusive)
    created = {}

    def create_waiting():
        created["producer"] = client.create_producer(topic, access_mode=Mode.WaitForExclusive)
        created["at"] = time.monotonic()

    thread = threading.Thread(target=create_waiting, daemon=True)
    thread.start()
    wait_for(lambda: _waiting(broker, topic) == 1, "the WaitForExclusive producer to be queued")
    assert "producer" not in created  # queued: PRODUCER_SUCCESS with producer_ready=false only
    waiting = broker.run(lambda: len(broker.broker.topics[str(TopicName.parse(topic))].access.waiting))
    assert waiting == 1 and broker.topic_stats(topic)["waitingPublishers"] == 1
    released_at = time.monotonic()
    holder.close()
    thread.join(10)
    assert "producer" in created and created["at"] >= released_at
    assert _epoch(broker, topic) == 1  # the epoch moved when the waiting producer took over
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    created["producer"].send(b"now-exclusive")
    assert consumer.receive(5000).data() == b"now-exclusive"


def test_wait_for_exclusive_waits_for_shared_producers(broker, client, topic):
    shared = [client.create_producer(topic) for _ in range(2)]
    created = {}
    thread = threading.Thread(
        target=lambda: created.setdefault("p", client.create_producer(topic, access_mode=Mode.WaitForExclusive)),
        daemon=True)
    thread.start()
    wait_for(lambda: _waiting(broker, topic) == 1, "the WaitForExclusive producer to be queued")
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)  # no new shared producer while an exclusive one waits
    shared[0].close()
    wait_for(lambda: _producers(broker, topic) == 1 and _waiting(broker, topic) == 1,
             "the broker to drop the closed shared producer and keep the exclusive one waiting")
    assert "p" not in created  # one shared producer is still connected
    shared[1].close()
    thread.join(10)
    assert "p" in created and _epoch(broker, topic) == 0


def test_exclusive_with_fencing_fences_the_holder(broker, client, topic):
    holder = client.create_producer(topic, access_mode=Mode.Exclusive, send_timeout_millis=3000)
    holder.send(b"before")
    fencer = client.create_producer(topic, access_mode=Mode.ExclusiveWithFencing)
    assert _epoch(broker, topic) == 1
    fencer.send(b"fencer")
    with pytest.raises(pulsar.PulsarException):
        holder.send(b"fenced")  # the holder reconnects with epoch 0 < 1 and is fenced for good
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    received = [consumer.receive(5000).data() for _ in range(2)]
    assert received == [b"before", b"fencer"]
    with pytest.raises(pulsar.Timeout):
        consumer.receive(500)


def test_topic_epoch_survives_restart(tmp_path, topic):
    data = tmp_path / "data"
    for expected in (0, 1):
        broker = BrokerThread(data).start()
        try:
            client = pulsar.Client(broker.url, operation_timeout_seconds=10)
            client.create_producer(topic, access_mode=Mode.Exclusive).close()
            assert _epoch(broker, topic) == expected
            client.close()
        finally:
            broker.stop()
