"""A real broker process: restart it and resume from the persisted cursor; clean SIGTERM shutdown."""
import signal
import time

import pulsar

from tests.helpers import drain, subscription_backlog, wait_for


def test_restart_resumes_from_the_persisted_cursor(broker_process):
    proc = broker_process()
    topic = "persistent://public/default/restart"
    client = pulsar.Client(proc.url, operation_timeout_seconds=10)
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    for i in range(20):
        producer.send(str(i).encode())
    got = [consumer.receive(5000) for _ in range(20)]
    for m in got[:12]:
        consumer.acknowledge(m)
    # the client groups acks for 100 ms: wait until the broker has applied them
    wait_for(lambda: subscription_backlog(proc.url, topic, "sub") == 8, "the 12 acks to reach the broker")
    client.close()
    assert proc.stop(signal.SIGTERM) == 0  # clean shutdown persists the cursor

    proc = broker_process(data_dir=proc.data_dir, port=proc.port)
    client = pulsar.Client(proc.url, operation_timeout_seconds=10)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    rest = sorted(int(m.data()) for m in drain(consumer, 1000))
    assert rest == list(range(12, 20))
    producer = client.create_producer(topic)
    producer.send(b"after-restart")
    assert consumer.receive(5000).data() == b"after-restart"
    client.close()


def test_clients_reconnect_across_a_restart(broker_process):
    proc = broker_process()
    topic = "persistent://public/default/reconnect"
    client = pulsar.Client(proc.url, operation_timeout_seconds=30)
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub")
    producer.send(b"before")
    consumer.acknowledge(consumer.receive(5000))
    # Kept, no state shows it: the grouped ack must reach the broker process before SIGTERM (Exclusive: no probe).
    time.sleep(0.3)
    proc.stop(signal.SIGTERM)
    broker_process(data_dir=proc.data_dir, port=proc.port)
    producer.send(b"after")  # the producer reconnects and resends on its own
    assert [m.data() for m in drain(consumer, 3000)] == [b"after"]
    client.close()


def test_sigkill_loses_no_acknowledged_publish(broker_process):
    proc = broker_process()
    topic = "persistent://public/default/crash"
    client = pulsar.Client(proc.url, operation_timeout_seconds=10)
    # A subscription keeps the entries: with no subscription and no retention, Pulsar (and we)
    # trim consumed ledgers on roll-over, and a restart rolls over.
    client.subscribe(topic, "keep").close()
    producer = client.create_producer(topic)
    ids = [producer.send(str(i).encode()) for i in range(50)]
    client.close()  # before the kill: closing a client whose broker just died can raise NotConnected
    proc.proc.kill()
    proc.proc.wait()
    proc = broker_process(data_dir=proc.data_dir, port=proc.port)
    client = pulsar.Client(proc.url, operation_timeout_seconds=10)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(5000))
    assert [int(m.data()) for m in got] == list(range(50))
    assert [str(m.message_id()) for m in got] == [str(i) for i in ids]
    consumer = client.subscribe(topic, "keep")
    assert [int(m.data()) for m in drain(consumer, 1000)] == list(range(50))
    client.close()
