"""The `minipulsar` command line (also `python -m minipulsar`): a thin router over verb groups.

    minipulsar broker [flags]                        run a broker
    minipulsar standalone [flags]                    the same, as Pulsar's pulsar standalone
    minipulsar client [--url URL] produce|consume    as Pulsar's pulsar-client
    minipulsar perf produce|consume                  as Pulsar's pulsar-perf
    minipulsar admin GROUP VERB                      as Pulsar's pulsar-admin, over the REST API
    minipulsar tokens VERB                           as Pulsar's pulsar tokens (JWT keys and tokens)

Each verb group is one module of this package with `add_parser(subparsers)`: it registers its
sub-command (and its own verbs) and sets `run`, a function Namespace -> exit status, as the parser
default. A new group is a new module appended to VERB_GROUPS. `runtime` is what the verbs share
(logging, uvloop, one-line errors, exit statuses, rate limiting).

The command line is a client of the broker, as Apache Pulsar's tools are kept outside
pulsar-broker: admin, client and perf import minipulsar.client and minipulsar.proto, never
minipulsar.broker. Only the verbs that run a broker (broker, standalone) import it, and tokens
reads keys with the broker's own key module; both do so when the verb runs.
tests/unit/cli/test_cli_room.py holds that line.
"""
from __future__ import annotations

import argparse
import sys

from minipulsar import __version__
from minipulsar.cli import admin, broker, client, perf, standalone, tokens

VERB_GROUPS = (broker, standalone, client, perf, admin, tokens)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="minipulsar", description="A broker that speaks the Apache Pulsar protocol.")
    root.add_argument("--version", action="version", version=f"minipulsar {__version__}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in VERB_GROUPS:
        group.add_parser(commands)
    return root


def main(argv: list[str] | None = None) -> int:
    """Parse argv (default sys.argv[1:]) and run the chosen verb; returns its exit status."""
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
