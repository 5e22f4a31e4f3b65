"""Integration-test fixtures. The broker, `topic` and the official client come from tests/conftest.py;
here the official client is also available under the name these tests use, `client`."""
from __future__ import annotations

import pytest


@pytest.fixture
def client(official):
    return official
