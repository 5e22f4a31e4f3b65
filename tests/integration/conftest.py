"""Fixtures of every integration room. The broker, `topic` and the official client come from
tests/conftest.py; here the official client is also available under the name the broker's tests
use, `client`, and `admin` is a REST session on the broker's web port (tests.helpers.Admin)."""
from __future__ import annotations

import pytest

from tests.helpers import Admin


@pytest.fixture
def client(official):
    return official


@pytest.fixture
def admin(broker) -> Admin:
    """requests on the test broker's web service (base URL its http:// address)."""
    admin = Admin(broker.broker.web_service_url)
    yield admin
    admin.session.close()
