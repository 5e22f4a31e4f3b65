"""The docker CLI for the image tests (tests/e2e/package): one call, and whether an engine answers."""
from __future__ import annotations

import shutil
import subprocess


def docker(*args: str, check: bool = True, timeout: float = 120,
           input: str | None = None) -> subprocess.CompletedProcess:
    """The docker CLI, input on its stdin; raises AssertionError with its stderr when check and it fails."""
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, input=input)
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
