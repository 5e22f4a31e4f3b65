"""Key_Shared with the official client, and Key_Failover over the raw protocol."""
import collections
import threading
import time

import pulsar
import pytest

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.storage import Position
from tests.helpers import RawConnection, wait_for

KEYS = [f"key-{i}" for i in range(300)]


class Collector:
    """Receives on a consumer in a thread, recording (key, value) per message, acking or not."""

    def __init__(self, consumer, ack=True, delay=0.0):
        self.consumer, self.ack, self.delay = consumer, ack, delay
        self.got: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                msg = self.consumer.receive(100)
            except pulsar.Timeout:
                continue
            except pulsar.AlreadyClosed:
                return
            self.got.append((msg.partition_key(), int(msg.data())))
            if self.delay:
                time.sleep(self.delay)  # not synchronisation: a slow consumer's processing time (load shape)
            if self.ack:
                self.consumer.acknowledge(msg)

    def stop(self):
        self._stop.set()
        self._thread.join(5)


def assert_in_order_per_key(collectors):
    for c in collectors:
        last = {}
        for key, value in c.got:
            assert value > last.get(key, -1), f"{key}: {value} after {last[key]} on one consumer"
            last[key] = value


@pytest.mark.parametrize("batching", ["none", "key-based"])
def test_many_consumers_many_keys_in_order(client, topic, batching):
    consumers = [client.subscribe(topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared,
                                  consumer_name=f"c{i}", receiver_queue_size=50) for i in range(4)]
    collectors = [Collector(c, delay=0.0005 * i) for i, c in enumerate(consumers)]
    options = dict(batching_enabled=False) if batching == "none" else dict(
        batching_enabled=True, batching_type=pulsar.BatchingType.KeyBased, batching_max_publish_delay_ms=5)
    producer = client.create_producer(topic, block_if_queue_full=True, **options)
    n = 3000
    for i in range(n):
        producer.send_async(str(i).encode(), None, partition_key=KEYS[i % len(KEYS)])
    producer.flush()
    assert wait_for(lambda: sum(len(c.got) for c in collectors) >= n, f"the consumers to receive all {n} messages")
    for c in collectors:
        c.stop()
    assert sorted(v for c in collectors for _, v in c.got) == list(range(n))
    assert_in_order_per_key(collectors)
    owners = collections.defaultdict(set)
    for index, c in enumerate(collectors):
        for key, _ in c.got:
            owners[key].add(index)
    assert all(len(o) == 1 for o in owners.values())  # no consumer changes: one owner per key
    assert all(c.got for c in collectors)


def test_consumers_joining_leaving_and_never_acking(broker, client, topic):
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    first = [Collector(client.subscribe(topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared,
                                        consumer_name=f"a{i}", receiver_queue_size=20), delay=0.001) for i in range(2)]
    hoarder_consumer = client.subscribe(topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared,
                                        consumer_name="hoarder", receiver_queue_size=20)
    hoarder = Collector(hoarder_consumer, ack=False)
    sent = 0
    for _ in range(3):
        for _ in range(400):
            producer.send_async(str(sent).encode(), None, partition_key=KEYS[sent % 100])
            sent += 1
        first.append(Collector(client.subscribe(topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared,
                                                consumer_name=f"late{len(first)}", receiver_queue_size=20)))
    producer.flush()

    def dispatch_settled():
        """The dispatcher read every entry, the hoarder pulled all it was sent, and everything sent
        to the others is acknowledged: what is left waits in the replay set for the late joiners."""
        stats = broker.topic_stats(topic)
        sub = stats["subscriptions"]["ks"]
        read_all = Position.parse(sub["readPosition"]) > Position.parse(stats["lastConfirmedEntry"])
        return read_all and hoarder.got and sub["unackedMessages"] == len(hoarder.got)

    wait_for(dispatch_settled, "dispatch to settle with the hoarder holding its messages")
    hoarder.stop()
    hoarder_consumer.close()  # everything it held goes to the others, still in key order
    leaver = first.pop(0)
    leaver.stop()
    leaver.consumer.close()
    everyone = first + [leaver, hoarder]
    acked = lambda: {v for c in first + [leaver] for _, v in c.got}
    assert wait_for(lambda: len(acked()) >= sent, f"all {sent} messages acknowledged", timeout=30), \
        f"{len(acked())} of {sent}"
    for c in first:
        c.stop()
    assert acked() == set(range(sent))
    assert_in_order_per_key(everyone)


def test_sticky_ranges_with_the_official_policy(client, topic):
    def policy(ranges):
        return pulsar.ConsumerKeySharedPolicy(key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=ranges)

    low = client.subscribe(topic, "sticky", consumer_type=pulsar.ConsumerType.KeyShared,
                           key_shared_policy=policy([(0, 32767)]))
    high = client.subscribe(topic, "sticky", consumer_type=pulsar.ConsumerType.KeyShared,
                            key_shared_policy=policy([(32768, 65535)]))
    with pytest.raises(pulsar.ConsumerAssignError):
        client.subscribe(topic, "sticky", consumer_type=pulsar.ConsumerType.KeyShared,
                         key_shared_policy=policy([(30000, 40000)]))
    producer = client.create_producer(topic)
    from minipulsar.broker.sticky_key import murmur3_31, range_slot
    for i in range(100):
        producer.send(str(i).encode(), partition_key=KEYS[i])
    expected_low = {i for i in range(100) if range_slot(murmur3_31(KEYS[i].encode())) <= 32767}
    got_low, got_high = set(), set()
    for consumer, got in ((low, got_low), (high, got_high)):
        while True:
            try:
                got.add(int(consumer.receive(300).data()))
            except pulsar.Timeout:
                break
    assert got_low == expected_low and got_high == set(range(100)) - expected_low


def test_key_failover_over_the_raw_protocol(broker, client, topic):
    """Official clients cannot ask for SubType 4; a bare connection can."""
    producer = client.create_producer(topic)
    conns = []
    for consumer_id in (1, 2):
        conn = RawConnection(broker.url)
        conn.connect()
        conn.send(api.BaseCommand(type=api.BaseCommand.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription="kf", subType=api.CommandSubscribe.Key_Failover,
            consumer_id=consumer_id, request_id=consumer_id, consumer_name=f"kf{consumer_id}",
            initialPosition=api.CommandSubscribe.Earliest)))
        assert conn.receive().type == api.BaseCommand.SUCCESS
        conn.send(api.BaseCommand(type=api.BaseCommand.FLOW, flow=api.CommandFlow(consumer_id=consumer_id, messagePermits=1000)))
        conns.append(conn)
    for i in range(200):
        producer.send(str(i).encode(), partition_key=KEYS[i % 50])
    stats = broker.run(lambda: broker.broker.topics[topic].subscriptions["kf"].stats())
    assert stats["type"] == "Key_Failover"
    assert sorted(c["keyHashRanges"] for c in stats["consumers"]) == [["[0, 32767]"], ["[32768, 65535]"]]
    from minipulsar.broker.sticky_key import murmur3_31, range_slot
    received = {}
    for index, conn in enumerate(conns):
        conn.sock.settimeout(1)
        positions = []
        try:
            while True:
                command = conn.receive()
                if command.type == api.BaseCommand.MESSAGE:
                    positions.append(command.message.message_id.entryId)
        except (TimeoutError, OSError):
            pass
        received[index] = positions
    assert sorted(received[0] + received[1]) == list(range(200))
    for index, positions in received.items():
        assert positions == sorted(positions)
        slots = {range_slot(murmur3_31(KEYS[p % 50].encode())) for p in positions}
        assert all((s <= 32767) == (index == 0) for s in slots)
    for conn in conns:
        conn.close()
