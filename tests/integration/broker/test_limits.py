"""Back-pressure, keep-alive, partitioned topics, start-up and data-dir locking."""
import socket
import subprocess
import sys

import pulsar
import pytest

from minipulsar.launcher import free_port
from minipulsar.proto import PulsarApi_pb2 as api
from tests import ROOT
from tests.helpers import RawConnection, drain, wait_for

Type = api.BaseCommand.Type


def test_a_consumer_that_stops_reading_is_bounded_and_blocks_nobody(broker_factory, topic):
    high_water = 256 * 1024
    read_size = 1024 * 1024
    broker = broker_factory(connectionWriteHighWaterMarkBytes=high_water, dispatcherMaxReadSizeBytes=read_size)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=100, block_if_queue_full=True)
    payload = b"z" * 4096
    for _ in range(3000):  # ~12 MB of backlog, in batch entries of up to 400 KB
        producer.send_async(payload, None)
    producer.flush()

    stuck = RawConnection(broker.url)
    stuck.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.connect()
    stuck.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
        topic=topic, subscription="stuck", subType=api.CommandSubscribe.Exclusive, consumer_id=1,
        request_id=1, initialPosition=api.CommandSubscribe.Earliest)))
    assert stuck.receive().type == Type.SUCCESS
    stuck.send(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(consumer_id=1, messagePermits=1_000_000)))

    def backed_up():
        return broker.run(lambda: [not c.is_writable() for c in broker.broker.connections if 1 in c.consumers] == [True])

    wait_for(backed_up, "the broker to write to the stuck consumer until its socket backs up")  # then it stops

    def buffered():
        return [c.transport.get_write_buffer_size() for c in broker.broker.connections if 1 in c.consumers]

    sizes = broker.run(buffered)
    # bounded: the high-water mark, plus at most one read (which may overshoot by one entry)
    assert sizes and max(sizes) < high_water + read_size + 512 * 1024

    healthy = client.subscribe(topic, "healthy", initial_position=pulsar.InitialPosition.Earliest)
    for _ in range(3000):
        healthy.acknowledge(healthy.receive(10000))
    stuck.close()
    client.close()


def test_publishes_beyond_the_pending_limit_all_complete_in_order(broker_factory, topic):
    broker = broker_factory(maxPendingPublishRequestsPerConnection=8)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, max_pending_messages=500)
    results = []
    for i in range(500):
        producer.send_async(str(i).encode(), lambda res, mid: results.append(res))
    producer.flush()
    assert results == [pulsar.Result.Ok] * 500
    assert [int(m.data()) for m in drain(consumer)] == list(range(500))
    client.close()


def test_broker_pings_idle_connections_and_drops_silent_ones(broker_factory):
    broker = broker_factory(keepAliveIntervalSeconds=1)
    silent = RawConnection(broker.url)
    silent.connect()
    silent.sock.settimeout(5)
    assert silent.receive().type == Type.PING  # the broker probes an idle connection
    assert silent.is_closed_by_peer()          # and closes it when the PING goes unanswered

    polite = RawConnection(broker.url)
    polite.connect()
    polite.sock.settimeout(5)
    for _ in range(3):
        assert polite.receive().type == Type.PING
        polite.send(api.BaseCommand(type=Type.PONG, pong=api.CommandPong()))
    polite.send(api.BaseCommand(type=Type.PING, ping=api.CommandPing()))
    assert polite.receive().type == Type.PONG
    polite.close()


def test_auto_created_partitioned_topic(broker_factory, topic):
    broker = broker_factory(allowAutoTopicCreationType="partitioned", defaultNumPartitions=3)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(3)]
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
                                      batching_enabled=False)
    ids = [producer.send(str(i).encode()) for i in range(30)]
    assert {m.partition() for m in ids} == {0, 1, 2}
    got = drain(consumer)
    assert sorted(int(m.data()) for m in got) == list(range(30))
    assert {m.message_id().partition() for m in got} == {0, 1, 2}
    client.close()


def test_topic_not_found_when_auto_creation_is_off(broker_factory, topic):
    broker = broker_factory(allowAutoTopicCreation="false")
    client = pulsar.Client(broker.url, operation_timeout_seconds=3, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(topic)
    client.close()


def test_startup_line_and_data_dir_lock(broker_process):
    first = broker_process()
    log = first.log_path.read_text()
    assert f"listening on 127.0.0.1:{first.port}" in log and str(first.data_dir) in log
    second = subprocess.run(
        [sys.executable, "-m", "minipulsar", "broker", "--data-dir", str(first.data_dir), "--broker-service-port", "0",
         "--web-service-port", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert second.returncode != 0
    assert "lock" in second.stderr.lower() and str(first.data_dir) in second.stderr


def test_a_peer_gone_silent_with_writes_pending_is_dropped_and_frees_its_producer(broker_factory, topic):
    """A partition while the broker has MESSAGE frames queued for the client: the unanswered PING
    must abort the connection (a close would wait for a write buffer that never drains), so its
    producer name is free again for the client's reconnection."""
    from tests.blackhole_proxy import BlackholeProxy

    broker = broker_factory(keepAliveIntervalSeconds=1, connectionWriteHighWaterMarkBytes=64 * 1024)
    port = free_port()
    proxy = BlackholeProxy(("127.0.0.1", port), ("127.0.0.1", int(broker.url.rsplit(":", 1)[1]))).start()
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        partitioned = RawConnection(proxy.url)
        partitioned.connect()
        partitioned.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
            topic=topic, producer_id=1, request_id=1, producer_name="named")))
        assert partitioned.receive().type == Type.PRODUCER_SUCCESS
        partitioned.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription="s", subType=api.CommandSubscribe.Exclusive, consumer_id=1, request_id=2)))
        assert partitioned.receive().type == Type.SUCCESS
        partitioned.send(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(consumer_id=1, messagePermits=1_000_000)))
        wait_for(lambda: broker.subscription_stats(topic, "s")["consumers"][0]["availablePermits"] > 0, "the FLOW")
        proxy.blackhole()
        backlog = client.create_producer(topic, batching_enabled=True, block_if_queue_full=True)
        for _ in range(4000):  # 16 MB for the silent consumer: more than the socket buffers hold
            backlog.send_async(b"b" * 4096, None)
        backlog.flush()
        wait_for(lambda: broker.run(lambda: any(c.consumers and not c.is_writable() for c in broker.broker.connections)),
                 "the broker's writes to the silent client to back up")
        wait_for(lambda: broker.run(lambda: not any(c.consumers for c in broker.broker.connections)),
                 "the unanswered PING to drop the connection", timeout=15)
        client.create_producer(topic, producer_name="named").send(b"the name is free again")
        partitioned.close()
    finally:
        proxy.stop()
        client.close()
