"""Fixtures of the WebSocket API's tests: a broker with token authentication and authorization whose
WebSocket service has a super-user's credentials (secure_broker), and a headless Chromium driven by
Selenium (browser). Debian's chromium and chromium-driver must be installed (.ci/run installs them);
without them the browser tests fail, naming what is missing."""
from __future__ import annotations

import shutil

import pytest

from tests.pki import TOKEN_PROVIDER, token_settings

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
TLS_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


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
    """A headless Chromium (Selenium WebDriver), shared by the session's browser tests."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if shutil.which(path) is None]
    if missing:
        pytest.fail(f"the browser tests need Debian's chromium and chromium-driver ({', '.join(missing)} missing): "
                    "apt-get install chromium chromium-driver", pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
