"""The container image for the tests of tests/e2e/package: MINIPULSAR_IMAGE, else the image
docker/build-image tags for this version (minipulsar:<version>); .ci/run builds it before pytest.
Without a Docker engine the tests skip, saying so; with an engine and no image they skip too,
except under CI=true, where a missing image fails them (CI built it, or means to)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from minipulsar import __version__


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """The docker CLI; raises AssertionError with its stderr when check and it fails."""
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"docker {' '.join(args)}: {result.stderr.strip()}"
    return result


def engine_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return docker("info", check=False, timeout=30).returncode == 0
    except subprocess.TimeoutExpired:
        return False


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
