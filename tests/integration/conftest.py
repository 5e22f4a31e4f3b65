"""Integration-test helpers around the official client."""
from __future__ import annotations

import uuid

import pulsar
import pytest


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client(broker):
    c = pulsar.Client(broker.url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield c
    c.close()
