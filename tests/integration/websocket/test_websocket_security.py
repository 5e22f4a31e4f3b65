"""Authentication and authorization of WebSocket upgrades: tokens in the header or the query
parameter, permissions per session kind, client certificates and wss:// on the TLS web port, and
what happens without credentials for the service's own client."""
from __future__ import annotations

import logging
import ssl
from urllib.parse import quote

import requests
import websocket

from tests.integration.websocket.conftest import TLS_PROVIDER
from tests.integration.websocket.wsclient import WsSession, b64, refused, ws_url
from tests.pki import token_settings, tls_settings

PRODUCER = "producer/persistent/public/default/secured"
CONSUMER = "consumer/persistent/public/default/secured/sub"
READER = "reader/persistent/public/default/secured"


def _open(url: str, **options) -> WsSession:
    return WsSession(websocket.create_connection(url, timeout=10, **options))


def _produce_one(session: WsSession) -> dict:
    session.send_json({"payload": b64(b"x")})
    answer = session.recv_json()
    session.close()
    return answer


def test_authentication_by_header_or_token_parameter(secure_broker, make_token):
    broker = secure_broker()
    url = ws_url(broker, PRODUCER)
    assert refused(url) == (401, "Failed to authenticate")
    assert refused(url + "?token=not-a-jwt") == (401, "Failed to authenticate")
    assert refused(url, header=[f"Authorization: Bearer {make_token('admin', expires_in=-10)}"]) == \
        (401, "Failed to authenticate")
    token = make_token("admin")
    assert _produce_one(_open(url + f"?token={token}"))["result"] == "ok"
    assert _produce_one(_open(url + f"?token={quote('Bearer ' + token)}"))["result"] == "ok"
    assert _produce_one(_open(url, header=[f"Authorization: Bearer {token}"]))["result"] == "ok"


def test_permissions_per_session_kind(secure_broker, make_token):
    broker = secure_broker()
    bob = f"?token={make_token('bob')}"
    for path in (PRODUCER, CONSUMER, READER):
        assert refused(ws_url(broker, path) + bob) == (403, "Not authorized")
    grant = requests.post(broker.broker.web_service_url + "/admin/v2/namespaces/public/default/permissions/bob",
                          json=["produce"], headers={"Authorization": f"Bearer {make_token('admin')}"}, timeout=10)
    assert grant.status_code == 204
    assert _produce_one(_open(ws_url(broker, PRODUCER) + bob))["result"] == "ok"
    assert refused(ws_url(broker, CONSUMER) + bob) == (403, "Not authorized")
    assert refused(ws_url(broker, READER) + bob) == (403, "Not authorized")


def test_without_credentials_for_its_own_client_sessions_are_refused(broker_factory, jwt_keys, make_token, caplog):
    with caplog.at_level(logging.WARNING, logger="minipulsar.broker.web.websocket.service"):
        broker = broker_factory(**token_settings(jwt_keys))  # authentication, no brokerClientAuthenticationPlugin
    assert any("no brokerClientAuthenticationPlugin" in r.getMessage() for r in caplog.records)
    status, reason = refused(ws_url(broker, PRODUCER) + f"?token={make_token('alice')}")
    assert status == 401 and reason.startswith("Failed to create producer:")


def test_wss_on_the_tls_web_port_with_client_certificates(secure_broker, pki, make_token):
    broker = secure_broker(**tls_settings(pki, authenticationProviders=f"{TLS_PROVIDER},"
                                          "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"))
    url = ws_url(broker, PRODUCER, scheme="wss", port=broker.broker.web.port_tls)

    def sslopt(certificate=None) -> dict:
        options = {"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": str(pki.ca)}
        if certificate is not None:
            options.update(certfile=str(certificate.cert), keyfile=str(certificate.key))
        return options

    assert _produce_one(_open(url, sslopt=sslopt(pki.admin)))["result"] == "ok"  # CN admin: a super-user
    assert refused(url, sslopt=sslopt(pki.alice)) == (403, "Not authorized")  # CN alice: no permission
    assert refused(url, sslopt=sslopt()) == (401, "Failed to authenticate")
    assert _produce_one(_open(url + f"?token={make_token('admin')}", sslopt=sslopt()))["result"] == "ok"

