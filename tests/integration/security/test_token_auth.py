"""Token authentication on the binary port: the official client with AuthenticationToken, refusals
as Pulsar answers them (read with raw frames, since the official client only retries), and logs
that never carry a secret or a token."""
from __future__ import annotations

import base64
import logging

import pulsar
import pytest
from minipulsar.proto import BROKER_INITIATED_REQUEST_ID
from minipulsar.proto import PulsarApi_pb2 as api

from tests.helpers import RawConnection, wait_for
from tests.integration.security.conftest import official_client
from tests.pki import token_settings

Type = api.BaseCommand.Type


def roles(broker) -> set[str]:
    """Roles of the broker's authenticated connections."""
    return broker.run(lambda: {c.auth.role for c in broker.broker.connections if c.auth is not None})


def raw_connect(url: str, method: str | None = None, data: bytes = b"") -> tuple[RawConnection, api.BaseCommand]:
    raw = RawConnection(url)
    connect = api.CommandConnect(client_version="raw", protocol_version=20)
    if method is not None:
        connect.auth_method_name, connect.auth_data = method, data
    raw.send(api.BaseCommand(type=Type.CONNECT, connect=connect))
    return raw, raw.receive()


def assert_refused(raw: RawConnection, reply: api.BaseCommand) -> None:
    """Pulsar's answer to a refused CONNECT: ERROR -1 / AuthenticationError, then the socket closes."""
    assert reply.type == Type.ERROR, reply
    assert reply.error.error == api.AuthenticationError
    assert reply.error.message == "Failed to authenticate"
    assert reply.error.request_id == BROKER_INITIATED_REQUEST_ID
    assert raw.is_closed_by_peer()


def test_official_client_with_a_token_produces_and_consumes(token_broker, make_token, topic):
    broker = token_broker()
    with official_client(broker.url, authentication=pulsar.AuthenticationToken(make_token("alice"))) as client:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        producer.send(b"hello")
        assert consumer.receive(5000).data() == b"hello"
        assert roles(broker) == {"alice"}
        producer.close()
        consumer.close()


def test_token_supplier_is_asked_for_the_token(token_broker, make_token, topic):
    broker = token_broker()
    asked = []

    def supplier() -> str:
        asked.append(1)
        return make_token("carol")

    with official_client(broker.url, authentication=pulsar.AuthenticationToken(supplier)) as client:
        client.create_producer(topic).close()
    assert asked


@pytest.mark.parametrize("kind, alg", [("rsa", "RS256"), ("ec", "ES256")])
def test_public_key_brokers(broker_factory, jwt_keys, make_token, topic, kind, alg):
    broker = broker_factory(**token_settings(jwt_keys, tokenSecretKey="", tokenPublicAlg=alg,
                                             tokenPublicKey=getattr(jwt_keys, f"{kind}_public").as_uri()))
    with official_client(broker.url, authentication=pulsar.AuthenticationToken(make_token("dave", key=kind))) as client:
        client.create_producer(topic).close()
    raw, reply = raw_connect(broker.url, "token", make_token("dave").encode())  # HS256: not this key
    assert_refused(raw, reply)


def test_official_client_without_credentials_gets_nothing(token_broker, topic):
    broker = token_broker()
    with official_client(broker.url, operation_timeout_seconds=2) as client:
        with pytest.raises(pulsar.PulsarException):  # the C++ client retries until its timeout
            client.create_producer(topic)
    assert broker.run(lambda: list(broker.broker.topics)) == []


def test_raw_connect_without_credentials_is_refused(token_broker):
    raw, reply = raw_connect(token_broker().url)
    try:
        assert_refused(raw, reply)
    finally:
        raw.close()


def test_raw_connect_with_expired_or_forged_token_is_refused(token_broker, make_token):
    broker = token_broker()
    for data in (make_token("alice", expires_in=-10).encode(), b"not.a.token", b""):
        raw, reply = raw_connect(broker.url, "token", data)
        try:
            assert_refused(raw, reply)
        finally:
            raw.close()


def test_raw_connect_with_a_token_is_connected(token_broker, make_token):
    broker = token_broker()
    raw, reply = raw_connect(broker.url, "token", make_token("alice", expires_in=60).encode())
    try:
        assert reply.type == Type.CONNECTED, reply
        assert roles(broker) == {"alice"}
    finally:
        raw.close()


def test_anonymous_user_role_admits_clients_without_credentials(token_broker, topic):
    broker = token_broker(anonymousUserRole="guest")
    with official_client(broker.url) as client:
        client.create_producer(topic).close()
    raw, reply = raw_connect(broker.url)
    try:
        assert reply.type == Type.CONNECTED
        wait_for(lambda: "guest" in roles(broker))
    finally:
        raw.close()


def test_logs_carry_neither_secret_nor_tokens(token_broker, make_token, jwt_keys, topic, caplog):
    secret_forms = {base64.b64encode(jwt_keys.secret_bytes).decode(), jwt_keys.secret_bytes.hex()}
    good, expired = make_token("alice"), make_token("alice", expires_in=-10)
    forged = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    with caplog.at_level(logging.DEBUG):
        broker = token_broker()
        with official_client(broker.url, authentication=pulsar.AuthenticationToken(good)) as client:
            client.create_producer(topic).close()
        for token in (expired, forged):
            raw, reply = raw_connect(broker.url, "token", token.encode())
            assert_refused(raw, reply)
            raw.close()
        broker.stop()
    text = caplog.text
    assert "authentication failed on connect" in text  # the refusals were logged, with their reason
    assert "connected with role=alice" in text
    for token in (good, expired, forged):
        for part in token.split("."):
            assert part not in text
    for form in secret_forms:
        assert form not in text
