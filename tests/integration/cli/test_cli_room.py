"""The cli room's line, checked in a child process: building the `minipulsar` parser loads no more of
minipulsar.broker than tokens' keys (and the packages above them). The import rules themselves,
read with `ast`: tests/unit/cli/test_cli_room.py."""
import subprocess
import sys

# what building the parser may load of the broker: tokens' keys and the packages above it
PARSER_LOADS = ["minipulsar.broker", "minipulsar.broker.security", "minipulsar.broker.security.keys"]


def test_building_the_parser_loads_no_more_of_the_broker_than_keys(tmp_path):
    probe = ("import sys\nimport minipulsar.cli\nminipulsar.cli.parser()\n"
             "print(sorted(m for m in sys.modules if m == 'minipulsar.broker' or m.startswith('minipulsar.broker.')))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(PARSER_LOADS)
