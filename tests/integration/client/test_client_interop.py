"""Interoperability with the official client (pulsar-client 3.13): each side reads what the other
wrote — batching, every compression type, keys, ordering keys, properties, event time — and message
ids serialized by one side are understood by the other."""
import asyncio
import time

import pulsar
import pytest

from minipulsar import client as mp

COMPRESSIONS = ["NONE", "LZ4", "ZLib", "ZSTD", "SNAPPY"]
N = 120


def _expected(i):
    return dict(data=f"msg-{i}".encode() * 4, properties={"i": str(i), "x": "y"}, partition_key=f"pk{i % 3}",
                ordering_key=f"ok{i % 2}", event_timestamp=1_700_000_000_000 + i)


@pytest.mark.parametrize("batching", [True, False], ids=["batched", "single"])
@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_bundled_to_official(bundled, official, topic, compression, batching):
    consumer = official.subscribe(topic, "sub")
    producer = await bundled.create_producer(topic, batching_enabled=batching, batching_max_messages=25,
                                             compression_type=getattr(mp.CompressionType, compression))
    futures = []
    for i in range(N):
        e = _expected(i)
        futures.append(await producer.send_async(e.pop("data"), **e))
    ids = await asyncio.gather(*futures)

    def consume():
        out = []
        for _ in range(N):
            m = consumer.receive(5000)
            out.append(m)
            consumer.acknowledge(m)
        return out

    got = await asyncio.to_thread(consume)
    for i, (m, our_id) in enumerate(zip(got, ids)):
        e = _expected(i)
        assert m.data() == e["data"] and m.properties() == e["properties"]
        assert m.partition_key() == e["partition_key"] and m.ordering_key() == e["ordering_key"]
        assert m.event_timestamp() == e["event_timestamp"]
        assert m.message_id().serialize() == our_id.serialize()
    if batching:
        assert ids[1].batch_index() == 1


@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_official_to_bundled(bundled, official, topic, compression):
    consumer = await bundled.subscribe(topic, "sub")

    def produce():
        producer = official.create_producer(topic, batching_enabled=True, batching_max_messages=25,
                                            compression_type=getattr(pulsar.CompressionType, compression))
        out = []
        for i in range(N):
            e = _expected(i)
            producer.send_async(e.pop("data"), lambda res, mid: out.append(mid), **e)
        producer.flush()
        return out

    official_ids = await asyncio.to_thread(produce)
    for i in range(N):
        m = await consumer.receive(5000)
        e = _expected(i)
        assert m.data() == e["data"] and m.properties() == e["properties"]
        assert m.partition_key() == e["partition_key"] and m.ordering_key() == e["ordering_key"]
        assert m.event_timestamp() == e["event_timestamp"]
        assert m.message_id().serialize() == official_ids[i].serialize()
        await consumer.acknowledge(m)


async def test_serialized_ids_cross_over(bundled, official, topic):
    producer = await bundled.create_producer(topic)
    ids = [await producer.send(str(i).encode()) for i in range(6)]
    # Our bytes -> official reader starts there.
    start = pulsar.MessageId.deserialize(ids[3].serialize())

    def official_read():
        reader = official.create_reader(topic, start, start_message_id_inclusive=True)
        data = reader.read_next(5000).data()
        last = reader.read_next(5000).message_id().serialize()
        reader.close()
        return data, last

    data, official_bytes = await asyncio.to_thread(official_read)
    assert data == b"3"
    # Official bytes -> our reader starts there.
    theirs = mp.MessageId.deserialize(official_bytes)
    assert theirs == ids[4]
    reader = await bundled.create_reader(topic, theirs, start_message_id_inclusive=True)
    assert (await reader.read_next(5000)).data() == b"4"


async def test_official_and_bundled_share_a_subscription(bundled, official, topic):
    ours = await bundled.subscribe(topic, "shared", consumer_type=mp.ConsumerType.Shared, receiver_queue_size=5)
    theirs = official.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=5)
    producer = await bundled.create_producer(topic)
    for i in range(40):
        await producer.send_async(str(i).encode())
    await producer.flush()

    def official_drain():
        out = []
        try:
            while True:
                m = theirs.receive(500)
                out.append(int(m.data()))
                theirs.acknowledge(m)
        except pulsar.Timeout:
            return out

    task = asyncio.create_task(asyncio.to_thread(official_drain))
    mine = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            m = await ours.receive(500)
        except mp.Timeout:
            break
        mine.append(int(m.data()))
        await ours.acknowledge(m)
    other = await task
    assert sorted(mine + other) == list(range(40)) and mine and other
