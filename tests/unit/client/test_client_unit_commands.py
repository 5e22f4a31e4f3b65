"""Unit tests (no sockets) of the commands the client builds: CONNECT, SUBSCRIBE, and lookup
redirect handling."""
import pytest

from minipulsar import client as mp
from minipulsar.client.connection import ClientConnection
from minipulsar.client.consumer.message_queue import MessageQueue
from minipulsar.client.consumer.partition_consumer import ConsumerConfig, PartitionConsumer
from minipulsar.client.exceptions import LookupError
from minipulsar.client.lookup import LookupService
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import FrameDecoder


class _Transport:
    def __init__(self):
        self.written = b""

    def write(self, data):
        self.written += data

    def is_closing(self):
        return False


def _connect_command(auth=None, proxy=None) -> api.CommandConnect:
    cnx = ClientConnection("pulsar://b:1", "b", 1, operation_timeout=1, authentication=auth, proxy_to_broker_url=proxy)
    transport = _Transport()
    cnx.connection_made(transport)
    [frame] = FrameDecoder().feed(transport.written)
    assert frame.command.type == api.BaseCommand.CONNECT
    return frame.command.connect


def test_connect_fields():
    connect = _connect_command()
    assert connect.protocol_version == 20 and connect.auth_method_name == "none"
    assert connect.client_version.startswith("Pulsar-Python-minipulsar")
    assert connect.feature_flags.supports_auth_refresh and not connect.HasField("proxy_to_broker_url")


def test_connect_with_token_and_proxy():
    connect = _connect_command(mp.AuthenticationToken("secret"), "pulsar://real:6650")
    assert connect.auth_method_name == "token" and connect.auth_data == b"secret"
    assert connect.proxy_to_broker_url == "pulsar://real:6650"


async def _subscribe_command(**conf) -> api.CommandSubscribe:
    client = mp.Client("pulsar://127.0.0.1:1")
    consumer = PartitionConsumer(client, "persistent://public/default/t", ConsumerConfig(**conf), MessageQueue())
    return consumer._subscribe_command(42)


async def test_subscribe_key_failover_and_flags():
    command = await _subscribe_command(subscription_name="s", consumer_type=mp.ConsumerType.KeyFailover,
                                       replicate_subscription_state_enabled=True,
                                       initial_position=mp.InitialPosition.Earliest, consumer_name="me")
    assert command.subType == api.CommandSubscribe.Key_Failover == 4
    assert command.replicate_subscription_state and command.initialPosition == api.CommandSubscribe.Earliest
    assert command.consumer_name == "me" and command.request_id == 42 and command.durable
    assert not command.HasField("keySharedMeta") and not command.HasField("start_message_id")


async def test_subscribe_key_shared_meta_defaults_like_cpp():
    command = await _subscribe_command(subscription_name="s", consumer_type=mp.ConsumerType.KeyShared)
    assert command.keySharedMeta.keySharedMode == api.AUTO_SPLIT
    assert not command.keySharedMeta.allowOutOfOrderDelivery


@pytest.mark.parametrize("start,inclusive,expected", [
    (mp.MessageId(-1, 3, 7), False, (3, 7)),
    (mp.MessageId(-1, 3, 7), True, (3, 6)),
    (mp.MessageId(-1, 3, 7, 2, 10), False, (3, 6)),
    (mp.MessageId.earliest, False, ((1 << 64) - 1, (1 << 64) - 1)),
])
async def test_reader_start_position(start, inclusive, expected):
    command = await _subscribe_command(subscription_name="r", durable=False, start_message_id=start,
                                       start_message_id_inclusive=inclusive)
    assert not command.durable
    assert (command.start_message_id.ledgerId, command.start_message_id.entryId) == expected
    assert not command.start_message_id.HasField("batch_index")


class _FakeConnection:
    def __init__(self, answers):
        self.answers = answers
        self.requests = []

    async def request(self, command, request_id):
        self.requests.append(command.lookupTopic)
        return self.answers(command.lookupTopic)


class _FakePool:
    def __init__(self, by_url):
        self.by_url = by_url

    async def get(self, url, physical=None):
        return self.by_url[url]


async def test_lookup_follows_redirects():
    Response = api.CommandLookupTopicResponse
    first = _FakeConnection(lambda req: Response(request_id=req.request_id, response=Response.Redirect,
                                                 brokerServiceUrl="pulsar://other:2", authoritative=True))
    second = _FakeConnection(lambda req: Response(request_id=req.request_id, response=Response.Connect,
                                                  brokerServiceUrl="pulsar://other:2"))
    ids = iter(range(100))
    service = LookupService(_FakePool({"pulsar://svc:1": first, "pulsar://other:2": second}), "pulsar://svc:1",
                            lambda: next(ids))
    assert await service.lookup("persistent://a/b/c") == ("pulsar://other:2", "pulsar://other:2")
    assert not first.requests[0].authoritative and second.requests[0].authoritative


async def test_lookup_proxy_through_service_url_and_loop_limit():
    Response = api.CommandLookupTopicResponse
    proxy = _FakeConnection(lambda req: Response(request_id=req.request_id, response=Response.Connect,
                                                 brokerServiceUrl="pulsar://inner:3", proxy_through_service_url=True))
    service = LookupService(_FakePool({"pulsar://svc:1": proxy}), "pulsar://svc:1", lambda: 1)
    assert await service.lookup("t") == ("pulsar://inner:3", "pulsar://svc:1")
    looping = _FakeConnection(lambda req: Response(request_id=1, response=Response.Redirect,
                                                   brokerServiceUrl="pulsar://svc:1"))
    service = LookupService(_FakePool({"pulsar://svc:1": looping}), "pulsar://svc:1", lambda: 1)
    with pytest.raises(LookupError):
        await service.lookup("t")
    assert len(looping.requests) == 21
