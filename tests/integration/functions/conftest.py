"""Fixtures of the functions room: the in-process broker of tests/conftest.py with its function
worker (negative acks redelivered after NACK_DELAY_MS, so retries take a fraction of a second),
`functions` (FunctionsAdmin on its web service) and `code` (a folder for the packages a test
writes). The broker's stop stops every instance process a test started."""
from __future__ import annotations

import pytest

from tests.integration.functions.support import FunctionsAdmin

NACK_DELAY_MS = 300


@pytest.fixture
def broker(broker_factory):
    return broker_factory(functionsNegativeAckRedeliveryDelayMs=NACK_DELAY_MS)


@pytest.fixture
def functions(broker) -> FunctionsAdmin:
    admin = FunctionsAdmin(broker.broker.web_service_url)
    yield admin
    admin.session.close()


@pytest.fixture
def code(tmp_path):
    return tmp_path / "code"
