"""Basic authentication (AuthenticationProviderBasic) with the official client: over pulsar://,
an http:// lookup URL and pulsar+ssl://; the web service's `Authorization: Basic`; wrong
passwords, unknown users and a wrong method refused; the htpasswd data from basicAuthConf and
from -Dpulsar.auth.basic.conf in PULSAR_EXTRA_OPTS; the bundled client and `minipulsar admin`."""
from __future__ import annotations

import asyncio
import base64
import subprocess
import sys

import pulsar
import pytest
import requests
from passlib.hash import apr_md5_crypt, des_crypt

from minipulsar import client as bundled
from tests.integration.security.conftest import official_client
from tests.pki import tls_settings

BASIC_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic"
BASIC_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationBasic"


@pytest.fixture
def htpasswd(tmp_path):
    """An htpasswd file in both formats Pulsar checks: alice ($apr1$ MD5), bob (crypt)."""
    path = tmp_path / ".htpasswd"
    path.write_text(f"alice:{apr_md5_crypt.hash('wonderland')}\nbob:{des_crypt.hash('builder')}\n")
    return path


def basic_settings(htpasswd, **extra) -> dict:
    return {"authenticationEnabled": "true", "authenticationProviders": BASIC_PROVIDER,
            "basicAuthConf": str(htpasswd), **extra}


def round_trip(url: str, topic: str, auth, **options) -> bytes:
    with official_client(url, authentication=auth, **options) as client:
        consumer = client.subscribe(topic, "sub")
        client.create_producer(topic).send(b"hello")
        message = consumer.receive(10_000)
        consumer.acknowledge(message)
        return message.data()


def test_both_hash_formats_authenticate_over_the_binary_port_and_http_lookup(broker_factory, htpasswd, topic):
    broker = broker_factory(**basic_settings(htpasswd))
    assert round_trip(broker.url, topic, pulsar.AuthenticationBasic("alice", "wonderland")) == b"hello"
    assert round_trip(broker.broker.web_service_url, topic + "-http",
                      pulsar.AuthenticationBasic("bob", "builder")) == b"hello"


@pytest.mark.parametrize("user, password, method", [
    ("alice", "wrong", "basic"),        # a wrong password
    ("mallory", "wonderland", "basic"),  # an unknown user
    ("alice", "wonderland", "other"),    # the right password under a method no provider serves
])
def test_bad_credentials_are_refused(broker_factory, htpasswd, topic, user, password, method):
    broker = broker_factory(**basic_settings(htpasswd))
    with official_client(broker.url, authentication=pulsar.AuthenticationBasic(user, password, method),
                         operation_timeout_seconds=2) as client:
        with pytest.raises(pulsar.PulsarException):  # the C++ client retries until its timeout
            client.create_producer(topic)
    assert broker.run(lambda: list(broker.broker.topics)) == []  # nothing was created for it


def test_tls_port_with_basic_authentication(broker_factory, htpasswd, pki, topic):
    broker = broker_factory(**basic_settings(htpasswd, **tls_settings(pki)))
    assert round_trip(broker.broker.service_url_tls, topic, pulsar.AuthenticationBasic("alice", "wonderland"),
                      tls_trust_certs_file_path=str(pki.ca)) == b"hello"


def test_web_service_takes_basic_credentials(broker_factory, htpasswd):
    broker = broker_factory(**basic_settings(htpasswd))
    url = broker.broker.web_service_url + "/admin/v2/clusters"
    good = "Basic " + base64.b64encode(b"alice:wonderland").decode()
    bad = "Basic " + base64.b64encode(b"alice:nope").decode()
    assert requests.get(url, headers={"Authorization": good}, timeout=10).json() == ["standalone"]
    assert requests.get(url, headers={"Authorization": bad}, timeout=10).status_code == 401
    assert requests.get(url, timeout=10).status_code == 401


def test_htpasswd_from_the_system_property_in_pulsar_extra_opts(broker_process, htpasswd, topic):
    data = base64.b64encode(htpasswd.read_bytes()).decode()  # Pulsar also takes the data as base64
    # anonymousUserRole: the launcher's readiness probe carries no credentials. Without the
    # property the broker would not start at all (test_security_cli), and a client whose
    # credentials the provider refuses is not taken for anonymous (its method has a provider).
    proc = broker_process(env={"PULSAR_EXTRA_OPTS": f"-Xss512k -Dpulsar.auth.basic.conf={data}"},
                          settings={"authenticationEnabled": "true", "authenticationProviders": BASIC_PROVIDER,
                                    "anonymousUserRole": "anonymous"})
    assert round_trip(proc.url, topic, pulsar.AuthenticationBasic("bob", "builder")) == b"hello"


def test_bundled_client_and_admin_speak_basic(broker_factory, htpasswd, topic):
    broker = broker_factory(**basic_settings(htpasswd))

    async def bundled_round_trip() -> bytes:
        async with bundled.Client(broker.url, authentication=bundled.AuthenticationBasic("alice", "wonderland")) as c:
            consumer = await c.subscribe(topic, "sub")
            await (await c.create_producer(topic)).send(b"bundled")
            return (await consumer.receive()).data()

    assert asyncio.run(asyncio.wait_for(bundled_round_trip(), 30)) == b"bundled"
    admin = [sys.executable, "-m", "minipulsar", "admin", "--admin-url", broker.broker.web_service_url,
             "--auth-plugin", BASIC_PLUGIN]
    listed = subprocess.run([*admin, "--auth-params", '{"userId":"alice","password":"wonderland"}',
                             "clusters", "list"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and listed.stdout.split() == ["standalone"], listed.stderr
    refused = subprocess.run([*admin, "--auth-params", '{"userId":"alice","password":"nope"}', "clusters", "list"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "401" in refused.stderr
