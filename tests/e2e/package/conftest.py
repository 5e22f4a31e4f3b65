"""The container image for the tests of tests/e2e/package: MINIPULSAR_IMAGE, else the image
docker/build-image tags for this version (minipulsar:<version>); .ci/run builds it before pytest.
Without a Docker engine the tests skip, saying so; with an engine and no image they skip too,
except under CI=true, where a missing image fails them (CI built it, or means to)."""
from __future__ import annotations

import os

import pytest

from minipulsar import __version__
from tests.e2e.package.containers import docker, engine_available


@pytest.fixture(scope="session")
def image() -> str:
    """The image under test, present in the engine."""
    name = os.environ.get("MINIPULSAR_IMAGE") or f"minipulsar:{__version__}"
    if not engine_available():
        pytest.skip("no Docker engine here ('docker info' fails): the image tests need one")
    if docker("image", "inspect", name, check=False).returncode != 0:
        message = f"image {name} is not in the engine: build it with docker/build-image (.ci/run does, before pytest)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return name
