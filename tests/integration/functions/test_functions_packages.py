"""Packages that carry their dependencies, as Pulsar's Python runtime takes them: a `.whl` as the
function's package, and a `.zip` in Pulsar's layout whose `<name>/deps/*.whl` the instance
installs (pip, offline) before it imports the function. The wheels are built here, by hand, as
the wheel spec lays them out (no network, no build backend)."""
from __future__ import annotations

import base64
import hashlib
import textwrap
import zipfile
from pathlib import Path

from tests.integration.functions.support import collect, create_and_wait

HELPER = """
    def shout(text):
        return text.upper() + "!!"
"""
USES_HELPER = """
    import helperlib

    def process(input):
        return helperlib.shout(input)
"""


def build_wheel(folder: Path, name: str, modules: dict[str, str]) -> Path:
    """folder/<name>-1.0-py3-none-any.whl holding the modules (module name -> code) and the
    dist-info pip reads: METADATA, WHEEL and RECORD with each file's sha256."""
    files = {f"{module}.py": textwrap.dedent(code).encode() for module, code in modules.items()}
    info = f"{name}-1.0.dist-info"
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in files.items():
            wheel.writestr(member, data)
    return path


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_a_wheel_as_the_function_package(functions, official, code):
    wheel = build_wheel(code, "wheelfn", {"wheelfn": USES_HELPER, "helperlib": HELPER})
    create_and_wait(functions, "wheeled", {"className": "wheelfn", "inputs": ["whl-in"], "output": "whl-out"}, wheel)
    out = official.subscribe("whl-out", "check")
    official.create_producer("whl-in").send(b"hey")
    assert collect(out, 1)[0].data() == b"HEY!!"


def test_a_zip_whose_deps_wheels_are_installed_at_instance_start(functions, official, code, tmp_path):
    helper = build_wheel(tmp_path / "built", "helperlib", {"helperlib": HELPER})
    archive = code / "zipdeps.zip"
    code.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipdeps/src/zipdeps_fn.py", textwrap.dedent(USES_HELPER))
        z.write(helper, f"zipdeps/deps/{helper.name}")
    create_and_wait(functions, "zipdeps", {"className": "zipdeps_fn", "inputs": ["zd-in"], "output": "zd-out"}, archive)
    out = official.subscribe("zd-out", "check")
    official.create_producer("zd-in").send(b"hi")
    assert collect(out, 1)[0].data() == b"HI!!", "helperlib came from the deps wheel"
