"""Robustness against a running broker: keep-alive both ways, a broker that closes the client's
producer and consumer, and connecting to nothing. Broker processes killed, restarted or hung:
tests/e2e/client/test_client_reconnect.py."""
import asyncio

import pytest

from minipulsar import client as mp
from minipulsar.client.exceptions import Timeout
from minipulsar.launcher import free_port


async def test_client_answers_broker_pings(broker_factory, topic):
    broker = broker_factory(keepAliveIntervalSeconds=1)
    async with mp.Client(broker.url, operation_timeout_seconds=10) as c:
        producer = await c.create_producer(topic)
        cnx = producer._impls[0].cnx
        # Not synchronisation: the idle period is under test (the broker drops clients missing a PING for two intervals).
        await asyncio.sleep(3.2)
        assert producer._impls[0].cnx is cnx and not cnx.closed
        assert (await producer.send(b"still here")).entry_id() == 0


async def test_client_pings_and_keeps_the_connection(broker, topic):
    async with mp.Client(broker.url, operation_timeout_seconds=10, keep_alive_interval_seconds=0.2) as c:
        consumer = await c.subscribe(topic, "sub")
        cnx = consumer._impls[0].cnx
        await asyncio.sleep(1.0)  # not synchronisation: an idle period of five keep-alive intervals is under test
        assert consumer._impls[0].cnx is cnx and not cnx.closed


async def test_connect_to_nothing_times_out(tmp_path):
    port = free_port()  # nothing listens there
    async with mp.Client(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=1) as c:
        with pytest.raises(Timeout):
            await c.create_producer("t")


async def test_broker_closing_handles_makes_them_come_back(broker, topic):
    async with mp.Client(broker.url, operation_timeout_seconds=10) as c:
        producer = await c.create_producer(topic, producer_name="back")
        consumer = await c.subscribe(topic, "sub")
        impl = producer._impls[0]
        assert impl.cnx is consumer._impls[0].cnx, "one pooled connection per broker"

        def close_both():
            [connection] = list(broker.broker.connections)
            connection.producers[impl.producer_id].disconnect()
            connection.consumers[consumer._impls[0].consumer_id].disconnect()

        broker.run(close_both)
        message_id = await producer.send(b"after close")
        assert impl.epoch == 1 and producer.producer_name() == "back"
        msg = await consumer.receive(5000)
        assert msg.message_id() == message_id
