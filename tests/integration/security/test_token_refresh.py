"""Expiring tokens while connected (authenticationRefreshCheckSeconds): AUTH_CHALLENGE, then the
connection lives on with fresh credentials or is closed, as Pulsar's refreshAuthenticationCredentials."""
from __future__ import annotations

import pulsar
import pytest
from minipulsar.proto import BROKER_INITIATED_REQUEST_ID
from minipulsar.proto import PulsarApi_pb2 as api

from minipulsar import client as bundled_client
from tests.helpers import RawConnection, wait_for, wait_for_async
from tests.integration.security.conftest import official_client

Type = api.BaseCommand.Type
TOKEN_LIFETIME = 3  # seconds (2 to 3: exp is whole seconds); the broker checks every second


@pytest.fixture
def refresh_broker(token_broker):
    return token_broker(authenticationRefreshCheckSeconds="1")


def authenticated(broker) -> list:
    return broker.run(lambda: [c for c in broker.broker.connections if c.auth is not None and not c.closed])


def raw_session(url: str, token: str, supports_refresh: bool = True) -> RawConnection:
    raw = RawConnection(url)
    raw.sock.settimeout(TOKEN_LIFETIME + 8)
    connect = api.CommandConnect(client_version="raw", protocol_version=20, auth_method_name="token",
                                 auth_data=token.encode())
    connect.feature_flags.supports_auth_refresh = supports_refresh
    raw.send(api.BaseCommand(type=Type.CONNECT, connect=connect))
    assert raw.receive().type == Type.CONNECTED
    return raw


def answer(raw: RawConnection, token: str) -> None:
    raw.send(api.BaseCommand(type=Type.AUTH_RESPONSE, authResponse=api.CommandAuthResponse(
        client_version="raw", protocol_version=20,
        response=api.AuthData(auth_method_name="token", auth_data=token.encode()))))


def expect_challenge(raw: RawConnection) -> None:
    reply = raw.receive()
    assert reply.type == Type.AUTH_CHALLENGE, reply
    assert reply.authChallenge.challenge.auth_method_name == "token"
    assert reply.authChallenge.challenge.auth_data == b"PulsarAuthRefresh"


def closed_without_a_frame(raw: RawConnection) -> bool:
    """True when the broker closes the socket before sending anything more."""
    try:
        reply = raw.receive()
    except (ConnectionError, OSError):
        return True
    raise AssertionError(f"expected the connection to close, got {reply}")


def still_open(raw: RawConnection) -> bool:
    raw.send(api.BaseCommand(type=Type.PING, ping=api.CommandPing()))
    return raw.receive().type == Type.PONG


def test_official_client_refreshes_through_its_token_supplier(refresh_broker, make_token, topic):
    supplied = []

    def supplier() -> str:
        supplied.append(make_token("alice", expires_in=TOKEN_LIFETIME))
        return supplied[-1]

    with official_client(refresh_broker.url, authentication=pulsar.AuthenticationToken(supplier)) as client:
        producer = client.create_producer(topic)
        (connection,) = authenticated(refresh_broker)
        wait_for(lambda: connection.auth.refreshes >= 2, "two credential refreshes", timeout=20)
        producer.send(b"after refresh")
        assert authenticated(refresh_broker) == [connection]  # the same connection, never re-opened
        assert len(supplied) >= 3
        producer.close()


def test_official_client_with_a_stale_token_is_disconnected(refresh_broker, make_token, topic):
    token = make_token("alice", expires_in=TOKEN_LIFETIME)
    with official_client(refresh_broker.url, authentication=pulsar.AuthenticationToken(token)) as client:
        producer = client.create_producer(topic)
        (connection,) = authenticated(refresh_broker)
        wait_for(lambda: connection.closed, "the connection with the expired token to close", timeout=20)
        assert authenticated(refresh_broker) == []  # and the expired token cannot connect again
        producer.close()


def test_challenge_answered_with_fresh_credentials_keeps_the_connection(refresh_broker, make_token):
    raw = raw_session(refresh_broker.url, make_token("alice", expires_in=TOKEN_LIFETIME))
    try:
        expect_challenge(raw)
        answer(raw, make_token("alice", expires_in=60))
        assert still_open(raw)
        wait_for(lambda: [c.auth.refreshes for c in authenticated(refresh_broker)] == [1])
    finally:
        raw.close()


def test_challenge_answered_with_bad_credentials_closes_after_an_error(refresh_broker, make_token):
    raw = raw_session(refresh_broker.url, make_token("alice", expires_in=TOKEN_LIFETIME))
    try:
        expect_challenge(raw)
        answer(raw, make_token("alice", expires_in=-1))
        reply = raw.receive()
        assert reply.type == Type.ERROR and reply.error.error == api.AuthenticationError
        assert reply.error.request_id == BROKER_INITIATED_REQUEST_ID
        assert raw.is_closed_by_peer()
    finally:
        raw.close()


def test_challenge_answered_with_another_role_closes(refresh_broker, make_token):
    raw = raw_session(refresh_broker.url, make_token("alice", expires_in=TOKEN_LIFETIME))
    try:
        expect_challenge(raw)
        answer(raw, make_token("mallory", expires_in=60))
        assert closed_without_a_frame(raw)
    finally:
        raw.close()


def test_unanswered_challenge_closes_at_the_next_check(refresh_broker, make_token):
    raw = raw_session(refresh_broker.url, make_token("alice", expires_in=TOKEN_LIFETIME))
    try:
        expect_challenge(raw)
        assert closed_without_a_frame(raw)
    finally:
        raw.close()


def test_client_without_refresh_support_is_closed_when_its_token_expires(refresh_broker, make_token):
    raw = raw_session(refresh_broker.url, make_token("alice", expires_in=TOKEN_LIFETIME), supports_refresh=False)
    try:
        assert closed_without_a_frame(raw)  # no challenge first: the client said it cannot answer one
    finally:
        raw.close()


def test_token_without_expiry_is_never_challenged(refresh_broker, make_token):
    raw = raw_session(refresh_broker.url, make_token("alice"))
    try:
        raw.sock.settimeout(TOKEN_LIFETIME + 1)
        assert not raw.is_closed_by_peer()  # nothing arrives: no challenge, no close
        assert still_open(raw)
    finally:
        raw.close()


async def test_bundled_client_answers_the_challenge(refresh_broker, make_token, topic):
    supplied = []

    def supplier() -> str:
        supplied.append(make_token("alice", expires_in=TOKEN_LIFETIME))
        return supplied[-1]

    async with bundled_client.Client(refresh_broker.url,
                                     authentication=bundled_client.AuthenticationToken(supplier)) as bundled:
        producer = await bundled.create_producer(topic)
        (connection,) = authenticated(refresh_broker)
        await wait_for_async(lambda: connection.auth.refreshes >= 1, "a credential refresh", timeout=20)
        await producer.send(b"after refresh")
        assert authenticated(refresh_broker) == [connection]
        await producer.close()
