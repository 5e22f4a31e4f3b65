"""Fixtures for the bundled client's tests: unique topic names and an official client (the oracle).

The bundled client runs on the test's event loop; the broker runs on its own thread (fixture
`broker`) or as a child process (`broker_process`). Blocking official-client calls that must overlap
with bundled-client work go through asyncio.to_thread.
"""
from __future__ import annotations

import uuid

import pulsar
import pytest


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/c-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def official(broker):
    c = pulsar.Client(broker.url, operation_timeout_seconds=10,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield c
    c.close()


@pytest.fixture(autouse=True)
def _skip_when_codec_missing(request):
    """Compression-parametrized tests skip (with the package name) when lz4 / zstandard /
    python-snappy is not installed, instead of failing."""
    from client import codec
    from client.exceptions import InvalidConfiguration
    from client.options import CompressionType

    spec = getattr(request.node, "callspec", None)
    for value in (spec.params.values() if spec else ()):
        kind = value if isinstance(value, CompressionType) else CompressionType.__members__.get(value) if isinstance(value, str) else None
        if kind is not None:
            try:
                codec.check_available(kind)
            except InvalidConfiguration as exc:
                pytest.skip(str(exc))
