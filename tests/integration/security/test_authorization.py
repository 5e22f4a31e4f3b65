"""Authorization with the official client and the admin REST API: super-users, tenant admins,
namespace and topic permissions granted, listed and revoked on Pulsar's paths, kept across a
restart; denied PRODUCER/SUBSCRIBE/LOOKUP get AuthorizationError."""
from __future__ import annotations

import pulsar
import pytest
import requests
from minipulsar.proto import PulsarApi_pb2 as api

from tests.helpers import RawConnection
from tests.integration.security.conftest import official_client
from tests.pki import token_settings

Type = api.BaseCommand.Type
NS = "/admin/v2/namespaces/public/default"


class Rest:
    """The admin REST API as one role (Authorization: Bearer)."""

    def __init__(self, base_url: str, token: str | None):
        self.base_url = base_url
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def __call__(self, method: str, path: str, body=None) -> requests.Response:
        return requests.request(method, self.base_url + path, json=body, headers=self.headers, timeout=30)


@pytest.fixture
def authz_settings(jwt_keys):
    return token_settings(jwt_keys, authorizationEnabled="true", superUserRoles="admin,ops")


@pytest.fixture
def authz_broker(broker_factory, authz_settings):
    return broker_factory(**authz_settings)


@pytest.fixture
def rest(authz_broker, make_token):
    """rest(role) -> Rest for that role on the broker's web port."""
    return lambda role: Rest(authz_broker.broker.web_service_url, make_token(role) if role else None)


def client_as(broker, make_token, role: str):
    return official_client(broker.url, authentication=pulsar.AuthenticationToken(make_token(role)),
                           operation_timeout_seconds=5)


def can_produce(broker, make_token, role: str, topic: str) -> bool:
    with client_as(broker, make_token, role) as client:
        try:
            producer = client.create_producer(topic)
        except pulsar.AuthorizationError:
            return False
        producer.send(b"x")
        producer.close()
        return True


def can_consume(broker, make_token, role: str, topic: str) -> bool:
    with client_as(broker, make_token, role) as client:
        try:
            consumer = client.subscribe(topic, f"sub-{role}")
        except pulsar.AuthorizationError:
            return False
        consumer.close()
        return True


def test_super_user_may_do_everything(authz_broker, make_token, rest, topic):
    assert can_produce(authz_broker, make_token, "admin", topic)
    assert can_consume(authz_broker, make_token, "ops", topic)
    assert rest("admin")("GET", "/admin/v2/tenants").status_code == 200


def test_a_role_without_permissions_is_refused(authz_broker, make_token, topic):
    assert not can_produce(authz_broker, make_token, "bob", topic)
    assert not can_consume(authz_broker, make_token, "bob", topic)


def test_namespace_permissions_grant_list_revoke(authz_broker, make_token, rest, topic):
    admin = rest("admin")
    assert admin("POST", f"{NS}/permissions/bob", ["produce"]).status_code == 204
    assert admin("GET", f"{NS}/permissions").json() == {"bob": ["produce"]}
    assert can_produce(authz_broker, make_token, "bob", topic)
    assert not can_consume(authz_broker, make_token, "bob", topic)  # the lookup passes, SUBSCRIBE does not
    assert admin("POST", f"{NS}/permissions/bob", ["produce", "consume", "functions"]).status_code == 204
    assert admin("GET", f"{NS}/permissions").json() == {"bob": ["consume", "functions", "produce"]}
    assert can_consume(authz_broker, make_token, "bob", topic)
    assert admin("DELETE", f"{NS}/permissions/bob").status_code == 204
    assert admin("GET", f"{NS}/permissions").json() == {}
    assert not can_produce(authz_broker, make_token, "bob", topic)


def test_topic_permissions_grant_list_revoke(authz_broker, make_token, rest, topic):
    admin = rest("admin")
    path = "/admin/v2/" + topic.replace("://", "/") + "/permissions"
    other = topic + "-other"
    assert admin("POST", f"{NS}/permissions/carol", ["produce"]).status_code == 204
    assert admin("POST", f"{path}/carol", ["consume"]).status_code == 204
    assert admin("GET", path).json() == {"carol": ["consume", "produce"]}  # namespace's and topic's, united
    assert can_consume(authz_broker, make_token, "carol", topic)
    assert not can_consume(authz_broker, make_token, "carol", other)
    assert admin("DELETE", f"{path}/carol").status_code == 204
    assert not can_consume(authz_broker, make_token, "carol", topic)
    second = admin("DELETE", f"{path}/carol")
    assert second.status_code == 412 and "not set at the topic level" in second.json()["reason"]


def test_a_partitioned_topics_permissions_cover_its_partitions(authz_broker, make_token, rest, topic):
    admin = rest("admin")
    base = "/admin/v2/" + topic.replace("://", "/")
    assert admin("PUT", f"{base}/partitions", 2).status_code == 204
    assert admin("POST", f"{base}/permissions/dan", ["produce"]).status_code == 204
    assert can_produce(authz_broker, make_token, "dan", topic)  # both partitions


def test_bad_grants_are_answered_as_pulsar(authz_broker, rest):
    admin = rest("admin")
    assert admin("POST", f"{NS}/permissions/bob", ["write"]).status_code == 400
    assert admin("POST", f"{NS}/permissions/bob", {"produce": True}).status_code == 400
    assert admin("GET", "/admin/v2/namespaces/public/nope/permissions").status_code == 404
    assert admin("POST", "/admin/v2/namespaces/public/nope/permissions/bob", ["produce"]).status_code == 404


def test_denied_lookups_answer_authorization_error(authz_broker, make_token, topic):
    raw = RawConnection(authz_broker.url)
    try:
        connect = api.CommandConnect(client_version="raw", protocol_version=20, auth_method_name="token",
                                     auth_data=make_token("bob").encode())
        raw.send(api.BaseCommand(type=Type.CONNECT, connect=connect))
        assert raw.receive().type == Type.CONNECTED
        raw.send(api.BaseCommand(type=Type.LOOKUP, lookupTopic=api.CommandLookupTopic(topic=topic, request_id=1)))
        lookup = raw.receive().lookupTopicResponse
        assert lookup.response == api.CommandLookupTopicResponse.Failed
        assert (lookup.error, lookup.message) == (api.AuthorizationError, "Client is not authorized to Lookup")
        raw.send(api.BaseCommand(type=Type.PARTITIONED_METADATA, partitionMetadata=api.CommandPartitionedTopicMetadata(
            topic=topic, request_id=2)))
        metadata = raw.receive().partitionMetadataResponse
        assert metadata.error == api.AuthorizationError
        listing_request = api.CommandGetTopicsOfNamespace(namespace="public/default", request_id=3)
        raw.send(api.BaseCommand(type=Type.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=listing_request))
        listing = raw.receive()
        assert listing.type == Type.ERROR and listing.error.error == api.AuthorizationError
    finally:
        raw.close()


def test_tenant_admins_administer_their_tenant_only(authz_broker, make_token, rest):
    admin, alice = rest("admin"), rest("alice")
    assert alice("PUT", "/admin/v2/tenants/acme", {"adminRoles": ["alice"]}).status_code == 403  # super-users only
    assert admin("PUT", "/admin/v2/tenants/acme", {"adminRoles": ["alice"]}).status_code == 204
    assert alice("PUT", "/admin/v2/namespaces/acme/orders").status_code == 204
    assert alice("POST", "/admin/v2/namespaces/acme/orders/permissions/bob", ["consume"]).status_code == 204
    assert alice("GET", "/admin/v2/namespaces/acme/orders/permissions").json() == {"bob": ["consume"]}
    assert can_produce(authz_broker, make_token, "alice", "persistent://acme/orders/o1")
    assert can_consume(authz_broker, make_token, "bob", "persistent://acme/orders/o1")
    denied = alice("POST", f"{NS}/permissions/alice", ["produce"])
    assert denied.status_code == 403 and "permission" in denied.json()["reason"]
    assert alice("GET", "/admin/v2/clusters").status_code == 403
    assert alice("GET", "/admin/v2/tenants/acme").status_code == 200
    assert not can_produce(authz_broker, make_token, "alice", "persistent://public/default/x")


def test_permissions_survive_a_restart(broker_factory, authz_settings, make_token, tmp_path, topic):
    first = broker_factory(tmp_path / "kept", **authz_settings)
    admin = Rest(first.broker.web_service_url, make_token("admin"))
    assert admin("POST", f"{NS}/permissions/erin", ["produce"]).status_code == 204
    first.stop()
    second = broker_factory(tmp_path / "kept", **authz_settings)
    admin = Rest(second.broker.web_service_url, make_token("admin"))
    assert admin("GET", f"{NS}/permissions").json() == {"erin": ["produce"]}
    assert admin("GET", NS).json()["auth_policies"]["namespace_auth"] == {"erin": ["produce"]}
    assert can_produce(second, make_token, "erin", topic)


def test_producer_and_subscribe_refusals_on_the_wire(authz_broker, make_token, rest, topic):
    assert rest("admin")("POST", f"{NS}/permissions/frank", ["consume"]).status_code == 204
    assert not can_produce(authz_broker, make_token, "frank", topic)  # the lookup passes, PRODUCER does not
    raw = RawConnection(authz_broker.url)
    try:
        raw.send(api.BaseCommand(type=Type.CONNECT, connect=api.CommandConnect(
            client_version="raw", protocol_version=20, auth_method_name="token",
            auth_data=make_token("frank").encode())))
        assert raw.receive().type == Type.CONNECTED
        raw.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
            topic=topic, producer_id=1, request_id=1)))
        refused = raw.receive()
        assert refused.type == Type.ERROR and refused.error.request_id == 1
        assert (refused.error.error, refused.error.message) == (api.AuthorizationError,
                                                                "Client is not authorized to Produce")
        raw.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription="s", subType=api.CommandSubscribe.Shared, consumer_id=1, request_id=2)))
        assert raw.receive().type == Type.SUCCESS  # frank may consume
    finally:
        raw.close()


def test_namespace_body_with_only_namespace_auth_serves_lookups(authz_broker, rest, make_token):
    """apache/pulsar-client-python's CI creates namespaces this way; every field of a policy body
    may be left out, as Pulsar's JSON allows."""
    assert rest("admin")("PUT", "/admin/v2/tenants/private", {"adminRoles": [], "allowedClusters": ["standalone"]}).ok
    body = {"auth_policies": {"namespace_auth": {"token-principal": ["produce", "consume"]}},
            "replication_clusters": ["standalone"]}
    assert rest("admin")("PUT", "/admin/v2/namespaces/private/auth", body).status_code in (200, 204)
    topic = "persistent://private/auth/orders"
    with client_as(authz_broker, make_token, "token-principal") as client:
        consumer = client.subscribe(topic, "sub")
        client.create_producer(topic).send(b"granted")
        assert consumer.receive(5000).data() == b"granted"
    assert not can_produce(authz_broker, make_token, "stranger", topic)


def test_missing_tenant_is_topic_not_found_before_any_permission_check(authz_broker, make_token):
    """Pulsar looks the namespace up before it checks permissions."""
    with client_as(authz_broker, make_token, "stranger") as client:
        with pytest.raises(pulsar.TopicNotFound):
            client.create_producer("persistent://no-such-tenant/ns/topic")
