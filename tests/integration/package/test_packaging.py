"""The wheel installs one top-level name, `minipulsar`, and nothing of ours collides with proto-plus.

Builds the wheel from a copy of the source tree (so no build/ or egg-info lands in the checkout),
checks its top level and that every module of every room is in it, then installs it beside
proto-plus in a fresh virtualenv and imports both `proto` (proto-plus) and `minipulsar.proto`.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from tests import ROOT

ROOMS = ("broker", "cli", "client", "functions", "pipeline", "proto", "storage")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in (*ROOMS, "minipulsar"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(source)], check=True)
    (built,) = out.glob("minipulsar-*.whl")
    return built


def test_wheel_has_one_top_level_name(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"minipulsar"}


def test_wheel_holds_every_module_of_every_room(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"minipulsar/{path.relative_to(ROOT)}" for room in ROOMS for path in (ROOT / room).rglob("*.py")
                if "__pycache__" not in path.parts}
    assert expected - names == set()
    assert "minipulsar/proto/PulsarApi.proto" in names
    assert "minipulsar/broker/pulsar_config_keys.txt" in names  # package data read at start-up
    assert {"minipulsar/broker/web/console/static/index.html", "minipulsar/broker/web/console/static/app.js"} <= names
    assert not any(name.startswith("minipulsar/proto/regenerate") for name in names)  # a developer tool


def test_installs_beside_proto_plus(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # --no-deps keeps the install small: importing minipulsar.proto needs only protobuf.
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel), "proto-plus", "protobuf"],
                   check=True)
    probe = (
        "import proto, minipulsar.proto\n"
        "from minipulsar.proto import api\n"
        "assert hasattr(proto, 'Message') and hasattr(proto, 'Field'), proto.__file__\n"
        "assert 'site-packages' in minipulsar.proto.__file__, minipulsar.proto.__file__\n"
        "assert api.BaseCommand.Type.Value('SEND') == 6\n"
        "print('ok')\n"
    )
    result = subprocess.run([str(python), "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
