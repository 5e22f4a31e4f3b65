"""Robustness of the bundled client when its broker process dies: restarts (SIGKILL and SIGTERM)
in the middle of producing and consuming, sends while the broker is down, and a hung broker
(SIGSTOP) found by the keep-alive. Keep-alive and timeouts against a live broker:
tests/integration/client/test_client_reconnect.py."""
import asyncio
import signal

import pytest

from minipulsar import client as mp
from minipulsar.client.exceptions import Timeout
from tests.helpers import wait_for_async


async def _produce_loop(producer, n, sent, pause):
    for i in range(n):
        future = await producer.send_async(str(i).encode())
        future.add_done_callback(lambda f, i=i: sent.append(i) if not f.exception() else None)
        await asyncio.sleep(pause)  # pacing, not synchronisation: the stream must still run when the broker dies
    await producer.flush()


async def _consume_until(consumer, expected, received, deadline):
    loop = asyncio.get_running_loop()
    while not expected <= set(received) and loop.time() < deadline:
        try:
            msg = await consumer.receive(500)
        except Timeout:
            continue
        received.append(int(msg.data()))
        await consumer.acknowledge(msg)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
async def test_broker_restart_mid_stream_loses_nothing_acknowledged(broker_process, sig):
    broker = broker_process()
    topic = "persistent://public/default/restart"
    n = 300
    async with mp.Client(broker.url, operation_timeout_seconds=15) as c:
        consumer = await c.subscribe(topic, "sub", receiver_queue_size=50)
        producer = await c.create_producer(topic, producer_name="steady", batching_enabled=True,
                                           batching_max_messages=10, batching_max_publish_delay_ms=5,
                                           block_if_queue_full=True, max_pending_messages=100)
        sent, received = [], []
        produce = asyncio.create_task(_produce_loop(producer, n, sent, 0.003))
        consume = asyncio.create_task(_consume_until(consumer, set(range(n)), received,
                                                     asyncio.get_running_loop().time() + 60))
        await wait_for_async(lambda: len(received) >= 60, "60 messages consumed before the restart", timeout=60)
        await asyncio.to_thread(broker.stop, sig)
        assert len(sent) < n, "the broker went down while producing"
        restarted = await asyncio.to_thread(lambda: broker_process(data_dir=broker.data_dir, port=broker.port))
        await asyncio.wait_for(produce, 60)
        await asyncio.wait_for(consume, 60)
        assert sorted(sent) == list(range(n)), "every send was confirmed after the restart"
        assert set(received) == set(range(n)), "nothing confirmed is lost"
        first_seen = list(dict.fromkeys(received))
        assert first_seen == sorted(first_seen), "per-producer order is kept"
        assert producer.producer_name() == "steady" and producer._impls[0].epoch >= 1
        assert producer.is_connected() and consumer.is_connected()
        restarted.stop()


async def test_send_timeout_while_broker_is_down(broker_process):
    broker = broker_process()
    async with mp.Client(broker.url, operation_timeout_seconds=5) as c:
        producer = await c.create_producer("persistent://public/default/down", send_timeout_millis=700)
        await producer.send(b"before")
        await asyncio.to_thread(broker.stop, signal.SIGKILL)
        with pytest.raises(Timeout):
            await producer.send(b"lost")


async def test_keepalive_detects_a_hung_broker(broker_process):
    broker = broker_process()
    async with mp.Client(broker.url, operation_timeout_seconds=10, connection_timeout_ms=1000,
                         keep_alive_interval_seconds=0.3) as c:
        producer = await c.create_producer("persistent://public/default/hung")
        cnx = producer._impls[0].cnx
        broker.proc.send_signal(signal.SIGSTOP)  # socket open, nobody answering
        try:
            await wait_for_async(lambda: cnx.closed, "the unanswered PING to close the connection", timeout=5)
            assert cnx.closed, "the unanswered PING closed the connection"
        finally:
            broker.proc.send_signal(signal.SIGCONT)
        assert (await producer.send(b"after")).entry_id() >= 0
        assert producer._impls[0].cnx is not cnx
