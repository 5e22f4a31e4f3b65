"""TLS listeners with real certificates: the official client over pulsar+ssl:// (trust, hostname
validation, client certificates), mutual TLS as authentication (role = CN), required client
certificates, protocol bounds, the web service on its TLS port, and certificate reloads."""
from __future__ import annotations

import shutil
import socket
import ssl

import pulsar
import pytest
import requests
from cryptography import x509
from cryptography.x509.oid import NameOID
from minipulsar.proto import PulsarApi_pb2 as api

from tests.helpers import RawConnection, wait_for
from tests.integration.security.conftest import TlsRawConnection, official_client
from tests.pki import TLS_PROVIDER, TOKEN_PROVIDER, tls_settings, token_settings

Type = api.BaseCommand.Type


def tls_client(broker, pki, certificate=None, host="127.0.0.1", **options):
    url = broker.broker.service_url_tls.replace("127.0.0.1", host)
    if certificate is not None:
        options["authentication"] = pulsar.AuthenticationTLS(str(certificate.cert), str(certificate.key))
    return official_client(url, tls_trust_certs_file_path=str(pki.ca), tls_validate_hostname=True,
                           operation_timeout_seconds=options.pop("operation_timeout_seconds", 10), **options)


def round_trip(client, topic: str) -> bytes:
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic)
    producer.send(b"over tls")
    data = consumer.receive(5000).data()
    producer.close()
    consumer.close()
    return data


def roles(broker) -> set[str]:
    return broker.run(lambda: {c.auth.role for c in broker.broker.connections if c.auth is not None})


def served_certificate_cn(port: int, ca) -> str:
    """The CN of the certificate a fresh TLS handshake on port presents."""
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as plain:
        with context.wrap_socket(plain, server_hostname="127.0.0.1") as tls:
            der = tls.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value


@pytest.fixture
def mtls_broker(broker_factory, pki, jwt_keys):
    """TLS listeners, authentication by client certificate (and tokens), admin as super-user."""
    return broker_factory(**token_settings(jwt_keys, authenticationProviders=f"{TLS_PROVIDER},{TOKEN_PROVIDER}",
                                           authorizationEnabled="true", superUserRoles="admin"), **tls_settings(pki))


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_official_client_over_tls_validates_the_server(broker_factory, pki, topic, host):
    broker = broker_factory(**tls_settings(pki))
    with tls_client(broker, pki, host=host) as client:
        assert round_trip(client, topic) == b"over tls"


def test_untrusted_server_is_refused_by_the_client(broker_factory, pki, topic):
    broker = broker_factory(**tls_settings(pki))
    with official_client(broker.broker.service_url_tls, tls_trust_certs_file_path=str(pki.alice.cert),
                         operation_timeout_seconds=2) as client:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic)


def test_lookup_answers_the_tls_url(broker_factory, pki, topic):
    broker = broker_factory(**tls_settings(pki))
    raw = RawConnection(broker.url)
    try:
        raw.connect()
        raw.send(api.BaseCommand(type=Type.LOOKUP, lookupTopic=api.CommandLookupTopic(topic=topic, request_id=1)))
        answer = raw.receive().lookupTopicResponse
        port = broker.broker.config.broker_service_port_tls
        assert answer.brokerServiceUrl == broker.url
        assert answer.brokerServiceUrlTls == f"pulsar+ssl://127.0.0.1:{port}" == broker.broker.service_url_tls
    finally:
        raw.close()


def test_client_certificate_authenticates_its_cn(mtls_broker, pki, topic):
    with tls_client(mtls_broker, pki, pki.admin) as client:
        assert round_trip(client, topic) == b"over tls"
        assert roles(mtls_broker) == {"admin"}
    with tls_client(mtls_broker, pki, pki.alice) as client:  # alice: authenticated, but no permission
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(topic)


def test_tls_method_without_a_certificate_is_refused(mtls_broker, pki):
    raw = TlsRawConnection(mtls_broker.broker.service_url_tls, pki.ca)
    try:
        raw.send(api.BaseCommand(type=Type.CONNECT, connect=api.CommandConnect(
            client_version="raw", protocol_version=20, auth_method_name="tls")))
        reply = raw.receive()
        assert reply.type == Type.ERROR and reply.error.error == api.AuthenticationError
        assert raw.is_closed_by_peer()
    finally:
        raw.close()
    raw = TlsRawConnection(mtls_broker.broker.service_url_tls, pki.ca, pki.bob.cert, pki.bob.key)
    try:
        raw.send(api.BaseCommand(type=Type.CONNECT, connect=api.CommandConnect(
            client_version="raw", protocol_version=20, auth_method_name="tls")))
        assert raw.receive().type == Type.CONNECTED
        wait_for(lambda: "bob" in roles(mtls_broker))
    finally:
        raw.close()


def test_required_client_certificates(broker_factory, pki, topic):
    broker = broker_factory(**tls_settings(pki, tlsRequireTrustedClientCertOnConnect="true"))
    with tls_client(broker, pki, operation_timeout_seconds=2) as client:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic)
    with tls_client(broker, pki, tls_private_key_file_path=str(pki.stranger.key),
                    tls_certificate_file_path=str(pki.stranger.cert), operation_timeout_seconds=2) as client:
        with pytest.raises(pulsar.PulsarException):  # signed by a CA the broker does not trust
            client.create_producer(topic)
    with tls_client(broker, pki, tls_private_key_file_path=str(pki.bob.key),
                    tls_certificate_file_path=str(pki.bob.cert)) as client:
        assert round_trip(client, topic) == b"over tls"


def test_tls_protocols_bound_the_handshake(broker_factory, pki):
    broker = broker_factory(**tls_settings(pki, tlsProtocols="TLSv1.2"))
    port = int(broker.broker.config.broker_service_port_tls)
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    with socket.create_connection(("127.0.0.1", port), timeout=5) as plain:
        with pytest.raises(ssl.SSLError):
            context.wrap_socket(plain, server_hostname="127.0.0.1")
    assert served_certificate_cn(port, pki.ca) == "server"  # TLS 1.2 is served


def test_web_service_on_its_tls_port(mtls_broker, pki, make_token):
    base = mtls_broker.broker.web_service_url_tls + "/admin/v2/tenants"
    assert base.startswith("https://127.0.0.1:")
    assert requests.get(base, verify=str(pki.ca), cert=(str(pki.admin.cert), str(pki.admin.key)), timeout=10).ok
    assert requests.get(base, verify=str(pki.ca), timeout=10).status_code == 401
    bearer = {"Authorization": f"Bearer {make_token('admin')}"}
    assert requests.get(base, verify=str(pki.ca), headers=bearer, timeout=10).ok
    assert requests.get(base, verify=str(pki.ca), cert=(str(pki.alice.cert), str(pki.alice.key)),
                        timeout=10).status_code == 403


def test_certificates_are_reloaded_when_their_files_change(broker_factory, pki, tmp_path):
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    shutil.copy(pki.server.cert, cert)
    shutil.copy(pki.server.key, key)
    broker = broker_factory(**tls_settings(pki, tlsCertificateFilePath=str(cert), tlsKeyFilePath=str(key),
                                           tlsCertRefreshCheckDurationSec="1"))
    binary_port = int(broker.broker.config.broker_service_port_tls)
    web_port = int(broker.broker.config.web_service_port_tls)
    assert served_certificate_cn(binary_port, pki.ca) == "server"
    shutil.copy(pki.server2.key, key)
    shutil.copy(pki.server2.cert, cert)
    wait_for(lambda: served_certificate_cn(binary_port, pki.ca) == "server2", "the binary port to serve server2")
    assert served_certificate_cn(web_port, pki.ca) == "server2"


def test_tls_instead_of_the_plain_ports(broker_factory, pki, topic):
    broker = broker_factory(brokerServicePort="", webServicePort="", **tls_settings(pki))
    assert broker.url == broker.broker.service_url_tls  # the plain ports are off
    assert broker.broker.web_service_url == broker.broker.web_service_url_tls
    with tls_client(broker, pki) as client:
        assert round_trip(client, topic) == b"over tls"
    raw = TlsRawConnection(broker.url, pki.ca)
    try:
        raw.connect()
        raw.send(api.BaseCommand(type=Type.LOOKUP, lookupTopic=api.CommandLookupTopic(topic=topic, request_id=1)))
        answer = raw.receive().lookupTopicResponse
        assert not answer.HasField("brokerServiceUrl") and answer.brokerServiceUrlTls == broker.url
    finally:
        raw.close()
    assert requests.get(broker.broker.web_service_url + "/admin/v2/tenants", verify=str(pki.ca), timeout=10).ok
