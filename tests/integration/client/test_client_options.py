"""Options of the bundled client's public entry points: every official option the bundled client
does not implement is accepted at its default and raises InvalidConfiguration, naming itself,
otherwise; the options it implements take effect (listener_name,
max_total_receiver_queue_size_across_partitions)."""
from __future__ import annotations

import logging

import pulsar
import pytest

from minipulsar import client as mp
from minipulsar.client.consumer.consumer import Consumer
from minipulsar.client.consumer.partition_consumer import ConsumerConfig
from minipulsar.client.exceptions import InvalidConfiguration
from minipulsar.client.lookup import LookupService
from minipulsar.client.options import reject_unsupported
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.launcher import free_port

NOWHERE = "pulsar://127.0.0.1:1"  # nothing listens: the option checks must fail before any I/O

UNSUPPORTED_CLIENT = [
    ("io_threads", 4),
    ("message_listener_threads", 2),
    ("concurrent_lookup_requests", 10),
    ("log_conf_file_path", "/tmp/log.conf"),
    ("stats_interval_in_seconds", 60),
    ("logger", logging.getLogger("app")),
]

UNSUPPORTED_PRODUCER = [
    ("chunking_enabled", True),
    ("lazy_start_partitioned_producers", True),
    ("encryption_key", "key"),
    ("crypto_key_reader", object()),
    ("message_router", lambda message, partitions: 0),
]

UNSUPPORTED_CONSUMER = [
    ("crypto_key_reader", object()),
    ("batch_receive_policy", object()),
    ("broker_consumer_stats_cache_time_ms", 1000),
    ("pattern_auto_discovery_period", 5),
    ("max_pending_chunked_message", 20),
    ("auto_ack_oldest_chunked_message_on_queue_full", True),
    ("regex_subscription_mode", pulsar.RegexSubscriptionMode.AllTopics),
    ("crypto_failure_action", pulsar.ConsumerCryptoFailureAction.CONSUME),
]

UNSUPPORTED_READER = [
    ("reader_listener", lambda reader, message: None),
    ("crypto_key_reader", object()),
]


# ---- Client ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, value", UNSUPPORTED_CLIENT, ids=[n for n, _ in UNSUPPORTED_CLIENT])
def test_client_rejects_unsupported_option(name, value):
    with pytest.raises(InvalidConfiguration, match=name):
        mp.Client(NOWHERE, **{name: value})


def test_tls_files_that_cannot_be_read_are_named():
    """TLS options are supported (tests/integration/security/test_bundled_client_tls.py); a file that cannot be
    read is a configuration error naming it."""
    with pytest.raises(InvalidConfiguration, match="tls_trust_certs_file_path"):
        mp.Client("pulsar+ssl://127.0.0.1:1", tls_trust_certs_file_path="/nonexistent/ca.pem")
    with pytest.raises(InvalidConfiguration, match="/nonexistent/cert.pem"):
        mp.Client(NOWHERE, use_tls=True, tls_certificate_file_path="/nonexistent/cert.pem",
                  tls_private_key_file_path="/nonexistent/key.pem")


def test_client_accepts_the_official_defaults():
    mp.Client(NOWHERE, authentication=None, operation_timeout_seconds=30, io_threads=1, message_listener_threads=1,
              concurrent_lookup_requests=50000, log_conf_file_path=None, stats_interval_in_seconds=600, use_tls=False,
              tls_trust_certs_file_path=None, tls_allow_insecure_connection=False, tls_validate_hostname=False,
              logger=None, connection_timeout_ms=10000, listener_name=None, tls_private_key_file_path=None,
              tls_certificate_file_path=None)


def test_client_rejects_unknown_option():
    with pytest.raises(InvalidConfiguration, match="no_such_option"):
        mp.Client(NOWHERE, no_such_option=1)


def test_client_rejects_bad_url():
    with pytest.raises(mp.InvalidUrl):
        mp.Client("http://127.0.0.1:6650")


# ---- factories -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, value", UNSUPPORTED_PRODUCER, ids=[n for n, _ in UNSUPPORTED_PRODUCER])
async def test_create_producer_rejects_unsupported_option(name, value):
    client = mp.Client(NOWHERE)
    with pytest.raises(InvalidConfiguration, match=name):
        await client.create_producer("t", **{name: value})
    await client.close()


@pytest.mark.parametrize("name, value", UNSUPPORTED_CONSUMER, ids=[n for n, _ in UNSUPPORTED_CONSUMER])
async def test_subscribe_rejects_unsupported_option(name, value):
    client = mp.Client(NOWHERE)
    with pytest.raises(InvalidConfiguration, match=name):
        await client.subscribe("t", "sub", **{name: value})
    await client.close()


@pytest.mark.parametrize("name, value", UNSUPPORTED_READER, ids=[n for n, _ in UNSUPPORTED_READER])
async def test_create_reader_rejects_unsupported_option(name, value):
    client = mp.Client(NOWHERE)
    with pytest.raises(InvalidConfiguration, match=name):
        await client.create_reader("t", mp.MessageId.earliest, **{name: value})
    await client.close()


@pytest.mark.parametrize("consumer_type", [mp.ConsumerType.Shared, mp.ConsumerType.KeyFailover])
async def test_key_shared_policy_needs_key_shared(consumer_type):
    client = mp.Client(NOWHERE)
    with pytest.raises(InvalidConfiguration, match="key_shared_policy"):
        await client.subscribe("t", "sub", consumer_type=consumer_type, key_shared_policy=mp.ConsumerKeySharedPolicy())
    await client.close()


async def test_unacked_timeout_below_one_second_is_refused():
    client = mp.Client(NOWHERE)
    with pytest.raises(InvalidConfiguration, match="unacked_messages_timeout_ms"):
        await client.subscribe("t", "sub", unacked_messages_timeout_ms=500)
    await client.close()


# ---- option objects --------------------------------------------------------------------------
def test_sticky_ranges_only_with_sticky_mode():
    with pytest.raises(InvalidConfiguration, match="sticky_ranges"):
        mp.ConsumerKeySharedPolicy(mp.KeySharedMode.AutoSplit, sticky_ranges=[(0, 100)])
    with pytest.raises(InvalidConfiguration, match="sticky_ranges"):
        mp.ConsumerKeySharedPolicy(mp.KeySharedMode.Sticky)
    assert mp.ConsumerKeySharedPolicy(mp.KeySharedMode.AutoSplit, sticky_ranges=[]).to_proto().hashRanges == []
    meta = mp.ConsumerKeySharedPolicy(mp.KeySharedMode.Sticky, sticky_ranges=[(0, 100)]).to_proto()
    assert [(r.start, r.end) for r in meta.hashRanges] == [(0, 100)]


def test_dead_letter_policy_needs_a_redelivery():
    with pytest.raises(InvalidConfiguration, match="max_redeliver_count"):
        mp.ConsumerDeadLetterPolicy(0)


@pytest.mark.parametrize("value, default, accepted", [
    (None, 600, True), (600, 600, True), (600.0, 600, True), (60, 600, False),
    (False, False, True), (True, False, False), ("", None, True), ("x", None, False),
    (pulsar.RegexSubscriptionMode.PersistentOnly, 0, True), (pulsar.RegexSubscriptionMode.AllTopics, 0, False),
    (object(), None, False),
])
def test_reject_unsupported(value, default, accepted):
    if accepted:
        reject_unsupported(option=(value, default))
    else:
        with pytest.raises(InvalidConfiguration, match="option="):
            reject_unsupported(option=(value, default))


# ---- implemented options ---------------------------------------------------------------------
@pytest.mark.parametrize("total, queue_size, expected", [(50000, 1000, 1000), (100, 1000, 25), (2, 1000, 1),
                                                          (100, 10, 10)])
async def test_max_total_receiver_queue_size_across_partitions(total, queue_size, expected):
    client = mp.Client(NOWHERE)
    conf = ConsumerConfig(subscription_name="s", receiver_queue_size=queue_size,
                          max_total_receiver_queue_size_across_partitions=total)
    consumer = Consumer(client, [("persistent://public/default/t", 4)], conf)
    assert [impl.queue_size for impl in consumer._impls] == [expected] * 4
    single = Consumer(client, [("persistent://public/default/t", 0)], conf)
    assert single._impls[0].queue_size == queue_size  # one handle: the receiver queue size alone


class _RecordingConnection:
    def __init__(self):
        self.requests = []

    async def request(self, command, request_id):
        self.requests.append(command.lookupTopic)
        Response = api.CommandLookupTopicResponse
        return Response(request_id=request_id, response=Response.Connect, brokerServiceUrl="pulsar://b:1")


class _OnePool:
    def __init__(self, cnx):
        self.cnx = cnx

    async def get(self, url, physical=None):
        return self.cnx


@pytest.mark.parametrize("listener_name, sent", [(None, ""), ("external", "external")])
async def test_listener_name_goes_into_lookup(listener_name, sent):
    client = mp.Client(NOWHERE, listener_name=listener_name)
    assert client.lookup.listener_name == sent
    cnx = _RecordingConnection()
    service = LookupService(_OnePool(cnx), NOWHERE, lambda: 7, client.lookup.listener_name)
    assert await service.lookup("persistent://public/default/t") == ("pulsar://b:1", "pulsar://b:1")
    assert cnx.requests[0].advertised_listener_name == sent


# ---- against a broker ------------------------------------------------------------------------
@pytest.fixture
def listener_broker(broker_factory):
    port = free_port()
    return broker_factory(brokerServicePort=port, internalListenerName="internal",
                          advertisedListeners=f"internal:pulsar://127.0.0.1:{port},external:pulsar://localhost:{port}")


async def test_listener_name_picks_the_advertised_listener(listener_broker, topic):
    port = listener_broker.broker.config.broker_service_port
    async with mp.Client(listener_broker.url, operation_timeout_seconds=10, listener_name="external") as client:
        assert await client.lookup.lookup(topic) == (f"pulsar://localhost:{port}", f"pulsar://localhost:{port}")
        consumer = await client.subscribe(topic, "sub")
        producer = await client.create_producer(topic)
        await producer.send(b"via-external")
        assert (await consumer.receive(5000)).data() == b"via-external"


async def test_unknown_listener_name_fails(listener_broker, topic):
    async with mp.Client(listener_broker.url, operation_timeout_seconds=2, listener_name="nope") as client:
        with pytest.raises(mp.PulsarException):
            await client.create_producer(topic)


async def test_official_defaults_are_accepted_by_the_factories(broker, topic):
    async with mp.Client(broker.url, operation_timeout_seconds=10) as client:
        producer = await client.create_producer(
            topic, chunking_enabled=False, lazy_start_partitioned_producers=False, encryption_key=None,
            crypto_key_reader=None, message_router=None, access_mode=pulsar.ProducerAccessMode.Shared)
        consumer = await client.subscribe(
            topic, "sub", broker_consumer_stats_cache_time_ms=30000, pattern_auto_discovery_period=60,
            max_pending_chunked_message=10, auto_ack_oldest_chunked_message_on_queue_full=False,
            regex_subscription_mode=pulsar.RegexSubscriptionMode.PersistentOnly,
            crypto_failure_action=pulsar.ConsumerCryptoFailureAction.FAIL, crypto_key_reader=None,
            batch_receive_policy=None, max_total_receiver_queue_size_across_partitions=50000)
        reader = await client.create_reader(topic, mp.MessageId.earliest, reader_listener=None, crypto_key_reader=None)
        await producer.send(b"x")
        assert (await consumer.receive(5000)).data() == b"x"
        assert (await reader.read_next(5000)).data() == b"x"
