"""The bundled client matches replies by request id as strictly as clients that match every reply
by its id (pulsar-rs): a command carrying a pending request's id is that request's answer, and a
CLOSE_* with 2^64-1 (Pulsar's -1) goes to its consumer or producer only. Without a socket: the
connection is fed decoded frames. Against a real broker (the test fails when the broker numbers its
own CLOSE_CONSUMER 1, 2, ... instead of sending -1): tests/integration/client/test_client_strict_replies.py."""
import asyncio

import pytest

from minipulsar.client.connection import ClientConnection
from minipulsar.client.exceptions import UnknownError
from minipulsar.proto import BROKER_INITIATED_REQUEST_ID
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import Frame

Type = api.BaseCommand.Type


class Recorder:
    """A consumer handle as the connection sees it: records what reaches it."""

    def __init__(self):
        self.closed = 0

    def on_connection_closed(self, cnx) -> None:
        self.closed += 1


def frame(command: api.BaseCommand) -> Frame:
    return Frame(command, None)


@pytest.fixture
async def connection():
    """A connection fed decoded frames by the test (no socket): its pending requests are set up
    the way request() leaves them while it waits."""
    cnx = ClientConnection("pulsar://127.0.0.1:1", "127.0.0.1", 1, operation_timeout=5)
    cnx._loop = asyncio.get_running_loop()
    return cnx


def close_consumer(consumer_id: int, request_id: int) -> Frame:
    return frame(api.BaseCommand(type=Type.CLOSE_CONSUMER, close_consumer=api.CommandCloseConsumer(
        consumer_id=consumer_id, request_id=request_id)))


async def test_a_close_carrying_a_pending_id_fails_that_request(connection):
    answer = connection._loop.create_future()
    connection._pending[1] = (answer, Type.SEEK)
    connection.consumers[7] = handle = Recorder()
    connection._handle(close_consumer(7, 1))
    with pytest.raises(UnknownError, match="CLOSE_CONSUMER in answer to SEEK"):
        answer.result()
    assert handle.closed == 1


async def test_a_close_with_minus_one_goes_only_to_its_consumer(connection):
    answer = connection._loop.create_future()
    connection._pending[0] = (answer, Type.SEEK)
    connection.consumers[7] = handle = Recorder()
    connection._handle(close_consumer(7, BROKER_INITIATED_REQUEST_ID))
    assert not answer.done() and handle.closed == 1
    connection._handle(frame(api.BaseCommand(type=Type.SUCCESS, success=api.CommandSuccess(request_id=0))))
    assert answer.result().request_id == 0


async def test_an_answer_of_the_wrong_kind_fails_the_request(connection):
    answer = connection._loop.create_future()
    connection._pending[4] = (answer, Type.GET_LAST_MESSAGE_ID)
    connection._handle(frame(api.BaseCommand(type=Type.SUCCESS, success=api.CommandSuccess(request_id=4))))
    with pytest.raises(UnknownError, match="SUCCESS in answer to GET_LAST_MESSAGE_ID"):
        answer.result()
