"""The web service with authentication and authorization: 401 without valid credentials, 403 for a
role that may not, the HTTP lookup the official client uses with an http:// service URL, and
/metrics (open unless authenticateMetricsEndpoint)."""
from __future__ import annotations

import base64
import logging

import pulsar
import pytest
import requests

from tests.integration.security.conftest import official_client
from tests.pki import token_settings


@pytest.fixture
def web_broker(token_broker):
    return token_broker(authorizationEnabled="true", superUserRoles="admin")


def get(broker, path: str, token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(broker.broker.web_service_url + path, headers=headers, timeout=10)


def test_requests_need_valid_credentials(web_broker, make_token, caplog):
    expired = make_token("admin", expires_in=-5)
    with caplog.at_level(logging.DEBUG):
        missing = get(web_broker, "/admin/v2/tenants")
        stale = get(web_broker, "/admin/v2/tenants", expired)
        garbage = get(web_broker, "/admin/v2/tenants", "garbage")
    for answer in (missing, stale, garbage):
        assert answer.status_code == 401
        assert answer.json() == {"reason": "Authentication required"}
    assert get(web_broker, "/admin/v2/tenants", make_token("admin")).json() == ["public", "pulsar"]
    assert "authentication failed" in caplog.text
    assert expired.split(".")[1] not in caplog.text and expired.split(".")[2] not in caplog.text


def test_roles_need_permission(web_broker, make_token):
    bob = make_token("bob")
    denied = get(web_broker, "/admin/v2/clusters", bob)
    assert denied.status_code == 403 and "super-user" in denied.json()["reason"]
    assert get(web_broker, "/admin/v2/namespaces/public/default", bob).status_code == 403
    assert get(web_broker, "/admin/v2/openapi.json", bob).status_code == 200
    assert get(web_broker, "/admin/v2/no/such/path", bob).status_code == 404


def test_http_lookup_needs_produce_or_consume(web_broker, make_token, topic):
    path = "/lookup/v2/topic/" + topic.replace("://", "/")
    assert get(web_broker, path, make_token("bob")).status_code == 403
    grant = requests.post(web_broker.broker.web_service_url + "/admin/v2/namespaces/public/default/permissions/bob",
                          json=["consume"], headers={"Authorization": f"Bearer {make_token('admin')}"}, timeout=10)
    assert grant.status_code == 204
    assert get(web_broker, path, make_token("bob")).json()["brokerUrl"] == web_broker.url


def test_official_client_with_an_http_service_url(web_broker, make_token, topic):
    token = pulsar.AuthenticationToken(make_token("admin"))
    with official_client(web_broker.broker.web_service_url, authentication=token) as client:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        producer.send(b"via http lookup")
        assert consumer.receive(5000).data() == b"via http lookup"
        producer.close()
        consumer.close()


def test_metrics_are_open_unless_configured(token_broker, make_token):
    open_metrics = token_broker()
    assert get(open_metrics, "/metrics").status_code == 200
    closed = token_broker(authenticateMetricsEndpoint="true")
    assert get(closed, "/metrics").status_code == 401
    assert get(closed, "/metrics", make_token("anyone")).status_code == 200


def test_runtime_configuration_hides_secrets(broker_factory, jwt_keys, make_token):
    secret = "data:;base64," + base64.b64encode(jwt_keys.secret_bytes).decode()
    broker = broker_factory(**token_settings(jwt_keys, tokenSecretKey=secret,
                                             brokerClientAuthenticationPlugin="org.apache.pulsar.client.impl.auth."
                                                                              "AuthenticationToken",
                                             brokerClientAuthenticationParameters=f"token:{make_token('broker')}"))
    answer = get(broker, "/admin/v2/brokers/configuration/runtime", make_token("admin"))
    values = answer.json()
    assert values["tokenSecretKey"] == values["brokerClientAuthenticationParameters"] == "********"
    assert values["authenticationEnabled"] == "true"
    assert base64.b64encode(jwt_keys.secret_bytes).decode() not in answer.text
