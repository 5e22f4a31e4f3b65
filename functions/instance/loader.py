"""Loading the user's code inside an instance process: the package onto sys.path, the function,
its SerDe classes and schemas, as Pulsar's python_instance_main and util.import_class do.

- A `.py` package: its folder goes on sys.path; classname "exclamation.Exclaim" imports module
  `exclamation` and takes `Exclaim`.
- A `.zip` (Pulsar's layout: `<name>/src/...`, optional `<name>/deps/*.whl`) is unpacked in the
  instance's work folder; `<name>/src` goes on sys.path (the archive's top folder when it has no
  src), and the wheels of `deps/` are installed with pip, offline (`--no-index`), into the work
  folder, as Pulsar does.
- A `.whl` is unpacked and its top folder goes on sys.path.

The function is called as Pulsar calls it: a class is instantiated once and its
`process(input, context)` called per message (pulsar.Function subclasses and plain classes
alike); a module named by classname has its `process(input)` called without a context (the plain
function form). A plain `def` named by classname is called as `f(input)` (Pulsar would call
`f.process(input)` and fail on every message). SerDe names are classes of the package or Pulsar's
`serde.IdentitySerDe` / `serde.PickleSerDe`: the latter is pulsar.functions.serde's, the former
this module's IdentitySerDe, which answers what Pulsar's does without trying int(), float() and
complex() on text none of them can parse (three exceptions per message). Any failure raises
UserCodeError with the cause, which the instance reports and the function's status shows.
"""
from __future__ import annotations

import importlib
import inspect
import pickle
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Callable

from minipulsar.functions.errors import UserCodeError

DEFAULT_SERDE = "serde.IdentitySerDe"
PULSAR_SERDES = {"serde.IdentitySerDe": "IdentitySerDe", "serde.PickleSerDe": "PickleSerDe"}


def prepare(package: Path, work_dir: Path) -> Path:
    """Put the package's code on sys.path; returns the folder its modules are imported from."""
    if not package.is_file():
        raise UserCodeError(f"function package {package} does not exist")
    if package.suffix in (".zip", ".whl"):
        code = work_dir / "code"
        try:
            with zipfile.ZipFile(package) as archive:
                archive.extractall(code)
        except (zipfile.BadZipFile, OSError) as exc:
            raise UserCodeError(f"cannot unpack {package.name}: {exc}") from None
        folder = code / package.stem / "src" if (code / package.stem / "src").is_dir() else code
        _install_deps(code / package.stem / "deps", work_dir / "site")
    else:
        folder = package.parent
    for path in (work_dir / "site", folder):
        if path.is_dir() and str(path) not in sys.path:
            sys.path.insert(0, str(path))
    return folder


def _install_deps(deps: Path, target: Path) -> None:
    wheels = sorted(str(w) for w in deps.glob("*.whl")) if deps.is_dir() else []
    if not wheels:
        return
    result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(deps),
                             "--target", str(target), *wheels], capture_output=True, text=True)
    if result.returncode != 0:
        raise UserCodeError("Could not install user dependencies specified by the zip file: "
                            + (result.stderr.strip().splitlines() or ["pip failed"])[-1])


def import_name(full_name: str) -> Any:
    """The module (no dot) or the attribute `a.b.C` names; UserCodeError with the cause."""
    module_name, _, attribute = full_name.rpartition(".")
    try:
        if not module_name:
            return importlib.import_module(full_name)
        module = importlib.import_module(module_name)
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, SystemExit included
        raise UserCodeError(f"Could not import User Function Module {full_name}: "
                            f"{type(exc).__name__}: {exc}") from None
    if not hasattr(module, attribute):
        raise UserCodeError(f"Could not import User Function Module {full_name}: module {module_name!r} "
                            f"has no attribute {attribute!r}")
    return getattr(module, attribute)


def load_function(class_name: str) -> tuple[Callable[[Any, Any], Any], bool]:
    """(call, uses_context): call(input, context) runs the user's code for one message."""
    target = import_name(class_name)
    if inspect.isclass(target):
        try:
            instance = target()
        except BaseException as exc:  # noqa: BLE001
            raise UserCodeError(f"cannot create {class_name}(): {type(exc).__name__}: {exc}") from None
        if not callable(getattr(instance, "process", None)):
            raise UserCodeError(f"{class_name} has no process(input, context) method")
        return instance.process, True
    if inspect.ismodule(target):
        process = getattr(target, "process", None)
        if not callable(process):
            raise UserCodeError(f"module {class_name} has no process(input) function")
        return (lambda value, context: process(value)), False
    if callable(target):
        return (lambda value, context: target(value)), False
    raise UserCodeError(f"{class_name} is neither a class, a module nor a function")


def load_serde(name: str | None) -> Any:
    """An instance of the SerDe class `name` (Pulsar's IdentitySerDe when None or empty)."""
    name = name or DEFAULT_SERDE
    if name == DEFAULT_SERDE:
        return IdentitySerDe()
    if name in PULSAR_SERDES:
        return _pulsar_serde(PULSAR_SERDES[name])
    serde = import_name(name)
    try:
        return serde()
    except BaseException as exc:  # noqa: BLE001
        raise UserCodeError(f"cannot create SerDe {name}(): {type(exc).__name__}: {exc}") from None


def _pulsar_serde(class_name: str) -> Any:
    try:
        from pulsar.functions import serde
        return getattr(serde, class_name)()
    except ImportError:
        return PickleSerDe()


# A digit, or the letters of inf, infinity, nan and complex's j: what int/float/complex could parse.
_MAYBE_NUMBER = re.compile(r"[\dnNjJ]")


class IdentitySerDe:
    """Pulsar's IdentitySerDe: str/int/float/complex out as UTF-8 text, bytes as they are; in, the
    first of int, float, complex, str that parses the UTF-8 text, else the bytes. Text without a
    digit and without n/N/j/J cannot be a number, so it is a str without the three attempts."""

    _numbers = (int, float, complex)
    _types = (*_numbers, str)

    def serialize(self, value: Any) -> bytes:
        if type(value) in self._types:
            return str(value).encode("utf-8")
        if type(value) is bytes:
            return value
        raise TypeError(f"IdentitySerde cannot serialize object of type {type(value)}")

    def deserialize(self, data: bytes) -> Any:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        if _MAYBE_NUMBER.search(text):
            for kind in self._numbers:
                try:
                    return kind(text)
                except ValueError:
                    continue
        return text


class PickleSerDe:
    """Pulsar's PickleSerDe."""

    def serialize(self, value: Any) -> bytes:
        return pickle.dumps(value)

    def deserialize(self, data: bytes) -> Any:
        return pickle.loads(data)


def load_schema(schema_type: str | None, record_class: str | None, properties: dict | None) -> Any:
    """The pulsar.schema object of Pulsar's Python runtime (get_schema): None for no schema, then
    "string", "json" / "avro" of the record class, or a custom Schema class of the package."""
    if not schema_type:
        return None
    import pulsar.schema

    kind = schema_type.lower()
    if kind == "string":
        return pulsar.schema.StringSchema()
    if kind == "bytes":
        return None
    record = import_name(record_class) if record_class else None
    try:
        if kind == "json":
            return pulsar.schema.JsonSchema(record)
        if kind == "avro":
            return pulsar.schema.AvroSchema(record)
        custom = import_name(schema_type)
        arguments = len(inspect.signature(custom.__init__).parameters)
        if arguments <= 1:
            return custom()
        return custom(record) if arguments == 2 else custom(record, properties or {})
    except UserCodeError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise UserCodeError(f"cannot build schema {schema_type} of {record_class}: {exc}") from None
