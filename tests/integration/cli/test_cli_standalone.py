"""`minipulsar standalone`, as Pulsar's users type `pulsar standalone`: the broker verb under
Pulsar's name, run as a child process with the broker verb's flags."""
from __future__ import annotations

import pulsar


def test_standalone_runs_a_broker_the_official_client_uses(broker_process, topic):
    proc = broker_process(verb="standalone")
    client = pulsar.Client(proc.url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(topic, "sub")
        client.create_producer(topic).send(b"hello")
        assert consumer.receive(5000).data() == b"hello"
    finally:
        client.close()
    assert proc.stop() == 0  # SIGTERM: a clean shutdown, as the broker verb
