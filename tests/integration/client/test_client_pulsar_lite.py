"""The bundled client against a broker none of us wrote: the embedded broker binary shipped by the
`pulsar-lite` PyPI package (Rust, Ascentstream). Exclusive produce/consume and readers.

pulsar-lite is pinned in the `test` extra, so a missing package or binary, a binary that does not
start, or a feature the pinned version has are failures, never skips.
"""
import asyncio
import os
import socket
import subprocess

import pytest
from pulsar_lite.binary_finder import find_pulsar_lite_binary

from minipulsar import client as mp
from minipulsar.launcher import free_port
from tests.helpers import wait_for


@pytest.fixture
def lite(tmp_path):
    """A pulsar-lite broker on a free loopback port; yields its URL."""
    binary = find_pulsar_lite_binary()
    assert os.access(binary, os.X_OK), f"pulsar-lite binary {binary} is not executable"
    port = free_port()
    log_path = tmp_path / "pulsar-lite.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen([binary, "--addr", f"127.0.0.1:{port}", "--db-path", str(tmp_path / "db")],
                            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)

    def listening() -> bool:
        assert proc.poll() is None, f"pulsar-lite exited at start with {proc.returncode}: {log_path.read_text()[-500:]}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False

    try:
        wait_for(listening, f"pulsar-lite to listen on 127.0.0.1:{port}", timeout=15)
    except BaseException:
        proc.kill()
        proc.wait()
        log.close()
        raise
    yield f"pulsar://127.0.0.1:{port}"
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


async def _receive_unique(consumer, n):
    """n distinct messages, in delivery order of first arrival.

    pulsar-lite 0.2.0 sometimes dispatches an entry a second time (redelivery_count 0) when a
    publish races with dispatch; the official client sees the same duplicates (9 runs in 12 of
    subscribe, then 100 batched sends), so duplicates are dropped here by message id."""
    seen, out = set(), []
    while len(out) < n:
        msg = await consumer.receive(5000)
        await consumer.acknowledge(msg)
        if msg.message_id() not in seen:
            seen.add(msg.message_id())
            out.append(msg)
    return out


async def test_exclusive_produce_consume(lite):
    async with mp.Client(lite, operation_timeout_seconds=10) as c:
        consumer = await c.subscribe("lite-a", "sub")
        producer = await c.create_producer("lite-a")
        ids = [await producer.send(f"m{i}".encode(), properties={"i": str(i)}, partition_key="k") for i in range(20)]
        assert ids == sorted(ids)
        for i, msg in enumerate(await _receive_unique(consumer, 20)):
            assert msg.data() == f"m{i}".encode() and msg.properties() == {"i": str(i)}
            assert msg.partition_key() == "k" and msg.message_id() == ids[i]


async def test_batched_and_compressed(lite):
    async with mp.Client(lite, operation_timeout_seconds=10) as c:
        consumer = await c.subscribe("lite-b", "sub")
        producer = await c.create_producer("lite-b", batching_enabled=True, batching_max_messages=20,
                                           compression_type=mp.CompressionType.ZLib, block_if_queue_full=True)
        futures = [await producer.send_async(str(i).encode()) for i in range(100)]
        await asyncio.gather(*futures)
        got = [int(m.data()) for m in await _receive_unique(consumer, 100)]
        assert got == list(range(100))


async def test_acknowledged_messages_are_not_redelivered(lite):
    async with mp.Client(lite, operation_timeout_seconds=10) as c:
        consumer = await c.subscribe("lite-c", "sub")
        producer = await c.create_producer("lite-c")
        for i in range(4):
            await producer.send(str(i).encode())
        for _ in range(2):
            await consumer.acknowledge(await consumer.receive(5000))
        await consumer.close()  # sends the grouped acks, then CLOSE_CONSUMER, and awaits its answer
        again = await c.subscribe("lite-c", "sub")
        assert int((await again.receive(5000)).data()) == 2


async def test_readers(lite):
    async with mp.Client(lite, operation_timeout_seconds=10) as c:
        producer = await c.create_producer("lite-r")
        ids = [await producer.send(str(i).encode()) for i in range(5)]
        earliest = await c.create_reader("lite-r", mp.MessageId.earliest)
        assert [int((await earliest.read_next(5000)).data()) for _ in range(5)] == [0, 1, 2, 3, 4]
        from_id = await c.create_reader("lite-r", ids[2])
        first = int((await from_id.read_next(5000)).data())
        assert first == 3, f"reader from {ids[2]} got message {first} first"
        latest = await c.create_reader("lite-r", mp.MessageId.latest)
        await producer.send(b"new")
        assert (await latest.read_next(5000)).data() == b"new"
