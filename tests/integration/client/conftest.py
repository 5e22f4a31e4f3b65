"""Fixtures for the bundled client's tests: the bundled client on the test's event loop.

The broker runs on its own thread (fixture `broker`) or as a child process (`broker_process`);
`topic` and the official client (`official`, the oracle) come from tests/conftest.py. Blocking
official-client calls that must overlap with bundled-client work go through asyncio.to_thread.
A module that needs a differently configured broker overrides `broker`; `bundled` follows it.
"""
from __future__ import annotations

import pytest

from minipulsar import client as mp


@pytest.fixture
async def bundled(broker):
    """The bundled client connected to `broker`, closed at teardown."""
    async with mp.Client(broker.url, operation_timeout_seconds=10) as c:
        yield c
