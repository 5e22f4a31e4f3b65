"""Readers of the bundled client, checked against what the official client's reader returns."""
import asyncio

import pulsar
import pytest

from minipulsar import client as mp
from minipulsar.client.exceptions import Timeout
from tests.helpers import publish_time_cut


async def _publish(c, topic, n, batching=False):
    producer = await c.create_producer(topic, batching_enabled=batching, batching_max_publish_delay_ms=20)
    futures = [await producer.send_async(str(i).encode()) for i in range(n)]
    return await asyncio.gather(*futures)


async def _read_all(reader, timeout_ms=300):
    got = []
    while True:
        try:
            got.append(int((await reader.read_next(timeout_ms)).data()))
        except Timeout:
            return got


def _official_read(official, topic, start, inclusive):
    reader = official.create_reader(topic, start, start_message_id_inclusive=inclusive)
    got = []
    try:
        while True:
            got.append(int(reader.read_next(300).data()))
    except pulsar.Timeout:
        pass
    reader.close()
    return got


async def test_reader_from_earliest_and_latest(bundled, topic):
    await _publish(bundled, topic, 5)
    earliest = await bundled.create_reader(topic, mp.MessageId.earliest)
    latest = await bundled.create_reader(topic, mp.MessageId.latest)
    assert await _read_all(earliest) == [0, 1, 2, 3, 4]
    assert await _read_all(latest) == []
    await _publish(bundled, topic, 1)
    assert await _read_all(latest) == [0]


@pytest.mark.parametrize("batching", [False, True], ids=["plain", "batched"])
@pytest.mark.parametrize("inclusive", [False, True], ids=["exclusive", "inclusive"])
async def test_reader_from_message_id_matches_official(bundled, official, topic, batching, inclusive):
    ids = await _publish(bundled, topic, 10, batching)
    start = ids[4]
    reader = await bundled.create_reader(topic, start, start_message_id_inclusive=inclusive)
    ours = await _read_all(reader)
    official_start = pulsar.MessageId.deserialize(start.serialize())
    theirs = await asyncio.to_thread(_official_read, official, topic, official_start, inclusive)
    assert ours == theirs == list(range(4 if inclusive else 5, 10))


async def test_has_message_available(bundled, topic):
    await _publish(bundled, topic, 3)
    reader = await bundled.create_reader(topic, mp.MessageId.earliest)
    seen = []
    while await reader.has_message_available():
        seen.append(int((await reader.read_next(2000)).data()))
    assert seen == [0, 1, 2]
    empty = await bundled.create_reader(topic + "-empty", mp.MessageId.earliest)
    assert not await empty.has_message_available()


async def test_reader_seek(bundled, topic):
    ids = await _publish(bundled, topic, 6)
    reader = await bundled.create_reader(topic, mp.MessageId.earliest)
    assert await _read_all(reader) == list(range(6))
    await reader.seek(ids[2])
    assert await _read_all(reader, 1000) == [2, 3, 4, 5]


@pytest.mark.parametrize("durable", [False, True], ids=["reader", "consumer"])
async def test_seek_by_publish_time(bundled, topic, durable):
    await _publish(bundled, topic, 3)
    middle = publish_time_cut()
    producer = await bundled.create_producer(topic)
    for i in range(3, 6):
        await producer.send(str(i).encode())
    if durable:
        handle = await bundled.subscribe(topic, "sub", initial_position=mp.InitialPosition.Earliest)
        read = handle.receive
    else:
        handle = await bundled.create_reader(topic, mp.MessageId.earliest)
        read = handle.read_next
    assert [int((await read(2000)).data()) for _ in range(6)] == list(range(6))
    await handle.seek(middle)
    got = []
    while True:
        try:
            got.append(int((await read(1000)).data()))
        except Timeout:
            break
    assert got == [3, 4, 5]


async def test_reader_last_message_id_and_namespace_topics(bundled, topic):
    ids = await _publish(bundled, topic, 3)
    reader = await bundled.create_reader(topic, mp.MessageId.earliest)
    last = await reader.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (ids[-1].ledger_id(), ids[-1].entry_id())
    await reader.close()
    assert topic in await bundled.get_topics_of_namespace("public/default")
