"""Message deduplication across a broker process killed and restarted (issue 7, item 4): the
sequence ids a producer sent survive a SIGKILL (recovery replays the ledger) and a clean stop (the
snapshot), so PRODUCER_SUCCESS.last_sequence_id tells the reconnecting producer where it stopped.
Deduplication against a running broker: tests/integration/broker/test_features_dedup.py."""
from __future__ import annotations

import pulsar

from tests.helpers import drain

DEDUP_ENV = {"MINIPULSAR_brokerDeduplicationEnabled": "true"}


def test_duplicates_stored_once_and_remembered_across_kill(broker_process, topic):
    proc = broker_process(env=DEDUP_ENV)
    client = pulsar.Client(proc.url, operation_timeout_seconds=10)
    client.subscribe(topic, "keep").close()
    producer = client.create_producer(topic, producer_name="dedup-p")
    assert producer.last_sequence_id() == -1
    ids = [producer.send(f"m{i}".encode(), sequence_id=i) for i in range(5)]
    again = producer.send(b"m4-again", sequence_id=4)  # the last one: its original position is known
    assert str(again) == str(ids[4])
    producer.send(b"m2-again", sequence_id=2)  # older: answered, not stored (-1:-1 as Pulsar)
    client.close()  # first: closing a client whose broker just died can fail with NotConnected
    proc.proc.kill()  # no clean shutdown: the snapshot is not written, recovery replays the ledger
    proc.proc.wait()

    proc = broker_process(data_dir=proc.data_dir, port=proc.port, env=DEDUP_ENV)
    client = pulsar.Client(proc.url, operation_timeout_seconds=10)
    producer = client.create_producer(topic, producer_name="dedup-p")
    assert producer.last_sequence_id() == 4
    producer.send(b"m3-after-restart", sequence_id=3)
    producer.send(b"m4-after-restart", sequence_id=4)
    producer.send(b"m5", sequence_id=5)
    consumer = client.subscribe(topic, "keep")
    assert [m.data() for m in drain(consumer, 1000, ack=True)] == [b"m0", b"m1", b"m2", b"m3", b"m4", b"m5"]
    producer.close()
    client.close()
    assert proc.stop() == 0  # clean stop writes the snapshot

    proc = broker_process(data_dir=proc.data_dir, port=proc.port, env=DEDUP_ENV)
    client = pulsar.Client(proc.url, operation_timeout_seconds=10)
    producer = client.create_producer(topic, producer_name="dedup-p")
    assert producer.last_sequence_id() == 5  # from the snapshot this time
    producer.send(b"m5-again", sequence_id=5)
    producer.send(b"m6")  # the client numbers on from last_sequence_id + 1
    consumer = client.subscribe(topic, "keep")
    assert [m.data() for m in drain(consumer, 1000, ack=True)] == [b"m6"]
    client.close()
