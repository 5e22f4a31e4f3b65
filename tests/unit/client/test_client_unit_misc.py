"""Unit tests (no sockets): topic names, back-off, routing, the receiver queue and exceptions."""
import asyncio

import pytest

from minipulsar.client.backoff import Backoff
from minipulsar.client.connection_pool import parse_service_url
from minipulsar.client.consumer.message_queue import MessageQueue
from minipulsar.client.exceptions import InvalidTopicName, InvalidUrl, ProducerBusy, Timeout, TopicNotFound, from_server_error
from minipulsar.client.options import ConsumerType, PartitionsRoutingMode
from minipulsar.client.producer.router import Router
from minipulsar.client.topic_name import normalize, partition_index, partition_name
from minipulsar.proto import PulsarApi_pb2 as api


def test_topic_names():
    assert normalize("t") == "persistent://public/default/t"
    assert normalize("tn/ns/t") == "persistent://tn/ns/t"
    assert normalize("non-persistent://a/b/c") == "non-persistent://a/b/c"
    assert partition_index(partition_name("persistent://a/b/c", 3)) == 3
    assert partition_index("persistent://a/b/c") == -1
    with pytest.raises(InvalidTopicName):
        normalize("a/b")


def test_service_url():
    assert parse_service_url("pulsar://h:1234") == [("h", 1234)]
    assert parse_service_url("pulsar://h1:1,h2:2") == [("h1", 1), ("h2", 2)]
    with pytest.raises(InvalidUrl):
        parse_service_url("http://h:1")


def test_backoff_doubles_to_the_cap():
    backoff = Backoff(0.1, 1.0)
    delays = [backoff.next() for _ in range(8)]
    assert 0.09 <= delays[0] <= 0.1
    assert all(b >= a * 0.85 for a, b in zip(delays, delays[1:]))
    assert 0.9 <= delays[-1] <= 1.0
    backoff.reset()
    assert backoff.next() <= 0.1


def test_round_robin_without_batching_cycles():
    router = Router(PartitionsRoutingMode.RoundRobinDistribution, 4, False, 1000, 10)
    picks = [router.choose(None) for _ in range(8)]
    assert sorted(picks[:4]) == [0, 1, 2, 3] and picks[:4] == picks[4:]


def test_round_robin_with_batching_stays_for_a_batch():
    router = Router(PartitionsRoutingMode.RoundRobinDistribution, 3, True, 5, 10_000)
    picks = [router.choose(None) for _ in range(15)]
    assert len(set(picks[:5])) == 1 and len(set(picks[5:10])) == 1 and picks[0] != picks[5]


def test_single_partition_and_keys():
    router = Router(PartitionsRoutingMode.UseSinglePartition, 5, False, 1, 1)
    assert len({router.choose(None) for _ in range(20)}) == 1
    assert router.choose("hello") == router.choose("hello")


def test_server_errors_map_to_pulsar_names():
    assert isinstance(from_server_error(api.TopicNotFound, "x"), TopicNotFound)
    assert isinstance(from_server_error(api.ProducerBusy, "x"), ProducerBusy)
    assert "ProducerBusy" in str(from_server_error(api.ProducerBusy, "x"))


def test_consumer_type_values_match_protocol():
    assert ConsumerType.KeyShared == api.CommandSubscribe.Key_Shared == 3
    assert ConsumerType.KeyFailover == api.CommandSubscribe.Key_Failover == 4


class _Owner:
    def __init__(self):
        self.taken = 0

    def message_taken(self, message):
        self.taken += 1


class _Msg:
    def __init__(self, owner, n):
        self._owner, self.n = owner, n


async def test_message_queue_fifo_timeout_and_owner_removal():
    queue, a, b = MessageQueue(), _Owner(), _Owner()
    with pytest.raises(Timeout):
        await queue.get(0.01)
    waiter = asyncio.create_task(queue.get(1))
    await asyncio.sleep(0)  # one turn of the loop, no time: the task runs until it blocks in get()
    assert not waiter.done()
    queue.put(_Msg(a, 1))
    assert (await waiter).n == 1 and a.taken == 1
    for i in range(4):
        queue.put(_Msg(a if i % 2 else b, i))
    assert queue.remove_owner(a) == 2
    assert [(await queue.get(0)).n for _ in range(2)] == [0, 2]
    assert b.taken == 2
