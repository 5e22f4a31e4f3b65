"""Fixtures of the security tests: certificates and JWT keys made for the session, token minting,
brokers with authentication/authorization/TLS settings, the official client, and bare frame
connections over TCP or TLS (to read replies the official client hides)."""
from __future__ import annotations

import contextlib
import ssl
import time
from pathlib import Path

import jwt
import pulsar
import pytest

from tests.integration.helpers import RawConnection
from tests.security.pki import JwtKeys, Pki, make_jwt_keys, make_pki

TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
TLS_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"
ERROR_LOGGER = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def jwt_keys(tmp_path_factory) -> JwtKeys:
    return make_jwt_keys(tmp_path_factory.mktemp("jwt"))


@pytest.fixture
def make_token(jwt_keys):
    """make_token(subject, expires_in=None, key="secret"|"rsa"|"ec", **claims) -> a signed JWT."""

    def make(subject: str | None, expires_in: float | None = None, key: str = "secret", **claims) -> str:
        if subject is not None:
            claims["sub"] = subject
        if expires_in is not None:
            claims["exp"] = int(time.time() + expires_in)
        signing = {"secret": (jwt_keys.secret_bytes, "HS256"), "rsa": (jwt_keys.rsa_key, "RS256"),
                   "ec": (jwt_keys.ec_key, "ES256")}[key]
        return jwt.encode(claims, signing[0], algorithm=signing[1])

    return make


def token_settings(jwt_keys: JwtKeys, **extra) -> dict:
    """Settings of a broker that authenticates tokens signed with the session's secret key."""
    return {"authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
            "tokenSecretKey": jwt_keys.secret.as_uri(), **extra}


def tls_settings(pki: Pki, **extra) -> dict:
    """Settings of a broker with TLS listeners (binary and web) on free ports."""
    return {"brokerServicePortTls": "0", "webServicePortTls": "0", "tlsCertificateFilePath": str(pki.server.cert),
            "tlsKeyFilePath": str(pki.server.key), "tlsTrustCertsFilePath": str(pki.ca), **extra}


@pytest.fixture
def token_broker(broker_factory, jwt_keys):
    """token_broker(**settings): a broker that authenticates tokens (and whatever settings add)."""
    return lambda **settings: broker_factory(**token_settings(jwt_keys, **settings))


@contextlib.contextmanager
def official_client(url: str, **options):
    """The official client (errors logged only), closed on exit."""
    client = pulsar.Client(url, operation_timeout_seconds=options.pop("operation_timeout_seconds", 10),
                           logger=ERROR_LOGGER, **options)
    try:
        yield client
    finally:
        client.close()


class TlsRawConnection(RawConnection):
    """RawConnection over TLS to a pulsar+ssl:// URL, trusting ca, presenting cert/key if given."""

    def __init__(self, url: str, ca: Path, cert: Path | None = None, key: Path | None = None):
        host, port = url.removeprefix("pulsar+ssl://").split(":")
        context = ssl.create_default_context(cafile=str(ca))
        if cert is not None:
            context.load_cert_chain(str(cert), str(key))
        super().__init__(f"pulsar://{host}:{port}")  # the frame decoder and a plain socket...
        self.sock = context.wrap_socket(self.sock, server_hostname=host)  # ...that becomes TLS
