"""Topic termination through the admin API: producers get TopicTerminated, consumers that read
everything get REACHED_END_OF_TOPIC (raw frames and the bundled client), and it survives a restart."""
import pulsar
import pytest

from minipulsar import client as mp
from minipulsar.proto import PulsarApi_pb2 as api
from tests.helpers import Admin, RawConnection, rest_path, wait_for_async

Type = api.BaseCommand.Type


def base(topic: str) -> str:
    return "/admin/v2" + rest_path(topic)


def test_terminate_refuses_producers_and_answers_the_last_id(admin, broker, official, topic):
    producer = official.create_producer(topic, batching_enabled=False)
    ids = [producer.send(str(i).encode()) for i in range(3)]
    answer = admin.post(base(topic) + "/terminate")
    assert answer.status_code == 200
    assert answer.json() == {"ledgerId": ids[-1].ledger_id(), "entryId": ids[-1].entry_id(), "partitionIndex": -1}
    assert admin.post(base(topic) + "/terminate").json() == answer.json()  # again: the same position
    with pytest.raises(pulsar.TopicTerminated):
        producer.send(b"too late")
    with pytest.raises(pulsar.TopicTerminated):
        official.create_producer(topic)
    assert admin.post(base("persistent://public/default/never-created") + "/terminate").status_code == 404


def test_consumers_reach_the_end_of_a_terminated_topic(admin, broker, official, topic):
    official.create_producer(topic).send(b"only")
    raw = RawConnection(broker.url)
    try:
        raw.connect()
        raw.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription="raw", subType=api.CommandSubscribe.Exclusive, consumer_id=1, request_id=1,
            initialPosition=api.CommandSubscribe.Earliest)))
        assert raw.receive().type == Type.SUCCESS
        assert admin.post(base(topic) + "/terminate").status_code == 200
        raw.send(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(consumer_id=1, messagePermits=10)))
        assert raw.receive().type == Type.MESSAGE
        end = raw.receive()
        assert end.type == Type.REACHED_END_OF_TOPIC and end.reachedEndOfTopic.consumer_id == 1
    finally:
        raw.close()


async def test_bundled_consumer_knows_it_reached_the_end(admin, broker, topic):
    async with mp.Client(broker.url, operation_timeout_seconds=10) as client:
        consumer = await client.subscribe(topic, "s", initial_position=mp.InitialPosition.Earliest)
        await (await client.create_producer(topic)).send(b"last")
        assert (await consumer.receive(5000)).data() == b"last"
        assert not consumer.has_reached_end_of_topic()
        assert admin.post(base(topic) + "/terminate").status_code == 200
        await wait_for_async(consumer.has_reached_end_of_topic, "REACHED_END_OF_TOPIC")


def test_termination_survives_a_restart_and_partitions(broker_factory, tmp_path, topic):
    first = broker_factory(data_dir=tmp_path / "d")
    admin = Admin(first.broker.web_service_url)
    assert admin.put(base(topic) + "/partitions", json=2).status_code == 204
    client = pulsar.Client(first.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic)
    producer.send(b"x", partition_key="a")
    answer = admin.post(base(topic) + "/terminate/partitions").json()
    assert set(answer) == {"0", "1"}
    client.close()
    first.stop()
    second = broker_factory(data_dir=tmp_path / "d")
    client = pulsar.Client(second.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.TopicTerminated):
            client.create_producer(f"{topic}-partition-0")
    finally:
        client.close()
