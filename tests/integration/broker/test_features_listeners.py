"""Advertised listeners with the official client (issue 7, item 8): LOOKUP with a listener name
answers that listener's URL; an unknown name is refused; bad settings stop start-up."""
from __future__ import annotations

import pulsar
import pytest

from minipulsar.broker.config import ConfigError, build_config
from minipulsar.broker.listeners import AdvertisedListeners
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.launcher import free_port
from tests.helpers import RawConnection

Type = api.BaseCommand.Type


def _lookup(raw: RawConnection, request_id: int, topic: str, listener: str | None):
    request = api.CommandLookupTopic(topic=topic, request_id=request_id)
    if listener is not None:
        request.advertised_listener_name = listener
    raw.send(api.BaseCommand(type=Type.LOOKUP, lookupTopic=request))
    reply = raw.receive()
    assert reply.type == Type.LOOKUP_RESPONSE
    return reply.lookupTopicResponse


@pytest.fixture
def listener_broker(broker_factory):
    port = free_port()
    listeners = (f"internal:pulsar://127.0.0.1:{port},external:pulsar://localhost:{port},"
                 f"external:pulsar+ssl://localhost:{port + 1},elsewhere:pulsar://elsewhere.example:6650")
    return broker_factory(brokerServicePort=port, advertisedListeners=listeners, internalListenerName="internal")


def test_lookup_answers_the_named_listener(listener_broker, topic):
    raw = RawConnection(listener_broker.url)
    try:
        raw.connect()
        port = listener_broker.broker.config.broker_service_port
        internal = _lookup(raw, 1, topic, "")
        assert internal.response == internal.Connect and internal.brokerServiceUrl == f"pulsar://127.0.0.1:{port}"
        external = _lookup(raw, 2, topic, "external")
        assert external.brokerServiceUrl == f"pulsar://localhost:{port}"
        assert external.brokerServiceUrlTls == f"pulsar+ssl://localhost:{port + 1}"
        elsewhere = _lookup(raw, 3, topic, "elsewhere")
        assert elsewhere.brokerServiceUrl == "pulsar://elsewhere.example:6650"
        unknown = _lookup(raw, 4, topic, "nope")
        assert unknown.response == unknown.Failed and unknown.error == api.ServiceNotReady
        assert unknown.message == "the broker do not have nope listener"  # Pulsar's wording
        assert _lookup(raw, 5, topic, "internal").brokerServiceUrl == f"pulsar://127.0.0.1:{port}"
    finally:
        raw.close()


def test_official_client_connects_through_a_listener(listener_broker, topic):
    client = pulsar.Client(listener_broker.url, listener_name="external", operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "sub")
        client.create_producer(topic).send(b"via-external")
        assert consumer.receive(5000).data() == b"via-external"
    finally:
        client.close()


def test_official_client_with_unknown_listener_fails(listener_broker, topic):
    client = pulsar.Client(listener_broker.url, listener_name="nope", operation_timeout_seconds=2)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic)
    finally:
        client.close()


def test_no_listeners_configured(broker, topic):
    raw = RawConnection(broker.url)
    try:
        raw.connect()
        assert _lookup(raw, 1, topic, "").brokerServiceUrl == broker.url
        assert _lookup(raw, 2, topic, "external").error == api.ServiceNotReady
    finally:
        raw.close()


@pytest.mark.parametrize("listeners, internal", [
    ("internal:http://x:1", ""),  # not a pulsar URL
    ("a:pulsar://x:1,a:pulsar://y:2", ""),  # two plain URLs on one listener
    ("a:pulsar://x:1", "b"),  # internal listener not listed
    ("", "internal"),
])
def test_bad_listener_settings(listeners, internal):
    config = build_config({"advertisedListeners": listeners, "internalListenerName": internal})
    with pytest.raises(ConfigError):
        AdvertisedListeners(config.advertised_listeners, config.internal_listener_name, "")
