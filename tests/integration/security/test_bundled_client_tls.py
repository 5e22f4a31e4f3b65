"""The bundled asyncio client over pulsar+ssl://: the server certificate checked against a trusted
CA, mutual TLS with AuthenticationTLS (role = CN), an untrusted server refused, and the web
health check when only TLS ports are open."""
import asyncio

import pytest
import requests

from minipulsar.client import Client
from minipulsar.client.auth import AuthenticationTLS
from minipulsar.client.exceptions import PulsarException
from tests.pki import TLS_PROVIDER, TOKEN_PROVIDER, tls_settings, token_settings


async def round_trip(client: Client, topic: str) -> bytes:
    consumer = await client.subscribe(topic, "s")
    producer = await client.create_producer(topic)
    await producer.send(b"bundled over tls")
    message = await consumer.receive()
    await consumer.acknowledge(message)
    return message.data()


def test_bundled_client_validates_the_server(broker_factory, pki, topic):
    broker = broker_factory(**tls_settings(pki))

    async def scenario():
        async with Client(broker.broker.service_url_tls, tls_trust_certs_file_path=str(pki.ca),
                          tls_validate_hostname=True) as client:
            return await round_trip(client, topic)
    assert asyncio.run(scenario()) == b"bundled over tls"


def test_bundled_client_refuses_an_untrusted_server(broker_factory, pki, topic):
    broker = broker_factory(**tls_settings(pki))

    async def scenario():
        async with Client(broker.broker.service_url_tls, tls_trust_certs_file_path=str(pki.alice.cert),
                          operation_timeout_seconds=3, connection_timeout_ms=2000) as client:
            await client.create_producer(topic)
    with pytest.raises(PulsarException, match="CERTIFICATE_VERIFY_FAILED|certificate"):
        asyncio.run(scenario())


def test_bundled_client_mutual_tls_role_is_the_cn(broker_factory, pki, jwt_keys, topic):
    broker = broker_factory(**token_settings(jwt_keys, authenticationProviders=f"{TLS_PROVIDER},{TOKEN_PROVIDER}"),
                            **tls_settings(pki))

    async def scenario():
        auth = AuthenticationTLS(str(pki.admin.cert), str(pki.admin.key))
        async with Client(broker.broker.service_url_tls, authentication=auth,
                          tls_trust_certs_file_path=str(pki.ca)) as client:
            data = await round_trip(client, topic)
            # read on the broker's loop while the connection is open (blocking this loop briefly)
            roles = broker.run(lambda: {c.auth.role for c in broker.broker.connections if c.auth is not None})
            return data, roles
    data, roles = asyncio.run(scenario())
    assert data == b"bundled over tls" and roles == {"admin"}


def test_health_check_when_only_tls_ports_are_open(broker_factory, pki):
    broker = broker_factory(brokerServicePort="", webServicePort="", **tls_settings(pki))
    reply = requests.get(broker.broker.web_service_url + "/admin/v2/brokers/health", verify=str(pki.ca), timeout=30)
    assert reply.status_code == 200 and reply.text == "ok"
