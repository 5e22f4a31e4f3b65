"""The cli room's line (the rooms table of the design): the command line is a client of the broker.

Every module of cli/ is read with `ast`, and an import of minipulsar.broker anywhere in a file counts:
at module level, inside a function, under `if TYPE_CHECKING:`, relative (`from ... import broker`)
or through importlib. Only the verbs that run a broker (cli/broker.py, cli/standalone.py) may
import minipulsar.broker, and tokens may import minipulsar.broker.security.keys (Pulsar's own
`pulsar tokens` lives in pulsar-broker); both only inside functions, so that building the parser
loads no more of the broker than keys, which a child process checks
(tests/integration/cli/test_cli_room.py).
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from minipulsar.cli import broker as broker_verb
from minipulsar.cli import parser
from minipulsar.cli import standalone as standalone_verb
from minipulsar.cli.perf import InvalidTopicNameError, expand_topics
from minipulsar.proto.topic_name import full_topic_name
from tests import ROOT

CLI = ROOT / "cli"
BROKER = "minipulsar.broker"
# cli module -> what of minipulsar.broker it may import, inside functions only
ALLOWED = {
    "minipulsar.cli.broker": BROKER,
    "minipulsar.cli.standalone": BROKER,
    "minipulsar.cli.tokens": "minipulsar.broker.security.keys",
}


def cli_modules() -> dict[str, Path]:
    """'minipulsar.cli.admin.args' -> its file, for every .py file under cli/."""
    found = {}
    for path in sorted(CLI.rglob("*.py")):
        parts = ["minipulsar", "cli", *path.relative_to(CLI).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def broker_imports(source: str, module: str, is_package: bool) -> list[tuple[int, str, bool]]:
    """(line, dotted name, inside a function) of every import of minipulsar.broker in source.

    `from X import a` names X.a (a submodule or an attribute of X, either way something of X);
    relative imports resolve against `module`; importlib.import_module("...") and __import__("...")
    with a literal name count too."""
    package = module if is_package else module.rpartition(".")[0]
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        found.extend((node.lineno, name, in_function) for name in names
                     if name == BROKER or name.startswith(BROKER + "."))
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


def violations(module: str, path: Path) -> list[str]:
    """What the module imports of minipulsar.broker beyond what ALLOWED lets it, one line each."""
    allowed = ALLOWED.get(module)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    out = []
    for line, name, in_function in broker_imports(path.read_text(), module, path.name == "__init__.py"):
        if allowed is None or not (name == allowed or name.startswith(allowed + ".")):
            out.append(f"{where}:{line} imports {name}")
        elif not in_function:
            out.append(f"{where}:{line} imports {name} at module level (only inside the verb)")
    return out


def test_the_cli_room_has_its_verbs():
    modules = cli_modules()
    for name in ("minipulsar.cli", "minipulsar.cli.broker", "minipulsar.cli.standalone", "minipulsar.cli.tokens",
                 "minipulsar.cli.admin", "minipulsar.cli.client", "minipulsar.cli.perf", "minipulsar.cli.runtime"):
        assert name in modules
    assert not (ROOT / "broker" / "commands").exists() and not (ROOT / "broker" / "cli.py").exists()


def test_only_the_broker_verbs_and_tokens_import_the_broker():
    found = [line for module, path in cli_modules().items() for line in violations(module, path)]
    assert found == []


@pytest.mark.parametrize("source", [
    "import minipulsar.broker.broker\n",
    "from minipulsar.broker.topic_name import TopicName\n",
    "from minipulsar import broker\n",
    "from ... import broker\n",
    "from ...broker import config\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from minipulsar.broker.broker import Broker\n",
    "def f():\n    from minipulsar.broker.config import build_config\n",
    "import importlib\nmodule = importlib.import_module('minipulsar.broker.config')\n",
])
def test_the_check_sees_every_spelling_of_a_broker_import(source):
    assert [name.startswith(BROKER) for _, name, _ in broker_imports(source, "minipulsar.cli.admin.args", False)] \
        == [True]


@pytest.mark.parametrize("source", [
    "from minipulsar.cli import broker\n",  # the broker verb, not the broker
    "from .. import broker\n",  # from cli/admin/: minipulsar.cli.broker
    "from minipulsar.client import auth\n",
    "from minipulsar.proto.topic_name import full_topic_name\n",
])
def test_the_check_leaves_other_imports_alone(source):
    assert broker_imports(source, "minipulsar.cli.admin.args", False) == []


def test_tokens_may_import_keys_only_inside_a_function(tmp_path):
    module_level = tmp_path / "tokens.py"
    module_level.write_text("from minipulsar.broker.security import keys\n")
    assert "at module level" in violations("minipulsar.cli.tokens", module_level)[0]
    server = tmp_path / "tokens2.py"
    server.write_text("def run():\n    from minipulsar.broker.broker import Broker\n")
    assert violations("minipulsar.cli.tokens", server) and violations("minipulsar.cli.client", server)


# ---- standalone ------------------------------------------------------------------------------

def _verb_parser(name: str) -> argparse.ArgumentParser:
    (commands,) = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices[name]


def _flags(verb: argparse.ArgumentParser) -> list[tuple]:
    return [(tuple(a.option_strings), a.dest, a.default, a.type, a.choices, a.help, type(a).__name__)
            for a in verb._actions]


def test_standalone_takes_the_broker_flags_and_pulsar_standalone_flags():
    standalone, broker = _verb_parser("standalone"), _verb_parser("broker")
    by_dest = {flag[1]: flag for flag in _flags(broker)}
    for flag in _flags(standalone):  # the broker's flags, some under Pulsar's extra short names too
        if flag[1] in by_dest:
            assert set(by_dest[flag[1]][0]) <= set(flag[0]) and flag[2:] == by_dest[flag[1]][2:]
    extra = {name for flag in _flags(standalone) if flag[1] not in by_dest for name in flag[0]}
    assert extra == {"--wipe-data", "-nss", "--no-stream-storage", "-nfw", "--no-functions-worker", "--only-broker",
                     "--no-broker", "--bookkeeper-dir", "--zookeeper-dir", "--zookeeper-port", "--bookkeeper-port",
                     "--num-bookies", "--stream-storage-port", "--metadata-dir", "--metadata-url", "-fwc",
                     "--functions-worker-conf"}
    args = parser().parse_args(["standalone", "-c", "conf/standalone.conf", "-a", "localhost", "-nss", "-nfw",
                                "--bookkeeper-dir", "data/bk", "--data-dir", "/tmp/d", "--log-level", "debug"])
    assert (args.config, args.advertised_address, args.data_dir, args.log_level) == (
        "conf/standalone.conf", "localhost", "/tmp/d", "DEBUG")
    assert args.running_standalone and standalone_verb.ignored_flags(args) == [
        "--no-stream-storage", "--bookkeeper-dir data/bk"]
    assert not broker_verb.load_config(parser().parse_args(["standalone", "-nfw"])).functions_worker_enabled
    assert broker_verb.load_config(parser().parse_args(["standalone"])).functions_worker_enabled


# ---- perf without the broker's TopicName -----------------------------------------------------

def test_perf_expands_one_topic_to_fully_qualified_names():
    assert expand_topics(["t"], 2) == ["persistent://public/default/t-0", "persistent://public/default/t-1"]
    assert expand_topics(["a", "b"], None) == ["a", "b"]
    assert full_topic_name("non-persistent://a/b/c") == "non-persistent://a/b/c"


def test_perf_refuses_a_bad_topic_with_invalid_topic_name_error():
    with pytest.raises(InvalidTopicNameError, match="expected tenant/namespace/topic"):
        expand_topics(["a/b"], 2)
    with pytest.raises(ValueError):
        full_topic_name("a/b")
