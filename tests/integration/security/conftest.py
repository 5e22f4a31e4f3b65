"""Fixtures of the security integration tests: brokers with token authentication (token_broker),
the official client, and bare frame connections over TCP or TLS (to read replies the official
client hides). Certificates, JWT keys and token minting (pki, jwt_keys, make_token) are fixtures of
tests/conftest.py (the unit tests of security use them too); the broker settings that use them
(token_settings, tls_settings) are in tests/pki.py."""
from __future__ import annotations

import contextlib
import ssl
from pathlib import Path

import pulsar
import pytest

from tests.helpers import RawConnection
from tests.pki import token_settings

ERROR_LOGGER = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


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
