"""Fixtures of the WebSocket API's tests: a broker with token authentication and authorization whose
WebSocket service has a super-user's credentials (secure_broker), and a headless Chromium driven by
Selenium (browser, tests/browser.py)."""
from __future__ import annotations

import pytest

from tests.browser import start_browser
from tests.pki import TOKEN_PROVIDER, token_settings

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
TLS_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"


@pytest.fixture
def secure_broker(broker_factory, jwt_keys, make_token):
    """secure_broker(**settings): tokens authenticate, authorization is on, `admin` and `broker` are
    super-users, and the broker's own clients (the WebSocket service's) present `broker`'s token."""

    def start(**settings):
        return broker_factory(**token_settings(
            jwt_keys, authorizationEnabled="true", superUserRoles="admin,broker",
            brokerClientAuthenticationPlugin=TOKEN_PLUGIN,
            brokerClientAuthenticationParameters=f"token:{make_token('broker')}",
            authenticationProviders=settings.pop("authenticationProviders", TOKEN_PROVIDER), **settings))

    return start


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (tests/browser.py), shared by the session's WebSocket browser tests (one
    of them is refused on purpose, so the browser's console is not checked here)."""
    driver = start_browser()
    yield driver
    driver.quit()
