"""The bundled client matches replies by request id strictly, against a real broker: a seek whose
request id the broker's own CLOSE_CONSUMER could reuse still succeeds. This test fails against a
broker that numbers its own CLOSE_CONSUMER 1, 2, ... instead of sending -1. The socket-free tests
of the same rule are in tests/unit/client/test_client_strict_replies.py."""
import itertools

from minipulsar import client as mp


async def test_seek_whose_request_id_the_broker_could_reuse_still_succeeds(bundled, topic):
    consumer = await bundled.subscribe(topic, "sub", initial_position=mp.InitialPosition.Earliest)
    producer = await bundled.create_producer(topic)
    for i in range(3):
        await producer.send(str(i).encode())
    assert [int((await consumer.receive(3000)).data()) for _ in range(3)] == [0, 1, 2]
    # The broker's first own command on this connection is the CLOSE_CONSUMER the seek causes; an
    # old broker numbered it 1. Give the seek request id 1 so such a CLOSE would answer it.
    bundled._request_ids = itertools.count(1)
    await consumer.seek(mp.MessageId.earliest)
    assert [int((await consumer.receive(3000)).data()) for _ in range(3)] == [0, 1, 2]
