"""`minipulsar standalone [flags]`: run a broker until SIGTERM/SIGINT, as Pulsar's `pulsar standalone`.

A thin launcher: the flags are the `broker` verb's (minipulsar.cli.broker.add_broker_flags) and so
are the settings, exit statuses and shutdown. Pulsar's standalone (PulsarStandaloneStarter) also
starts a metadata store, bookies and a functions worker in its process; minipulsar's broker keeps
its metadata and ledgers in its own data folder, so this verb starts nothing else.
"""
from __future__ import annotations

import argparse

from minipulsar.cli import broker


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `standalone` on the root parser's sub-commands; returns its parser."""
    standalone = subparsers.add_parser("standalone", help="run a broker (as pulsar standalone)",
                                       description=__doc__.splitlines()[0])
    broker.add_broker_flags(standalone)
    # Flags only Pulsar's standalone has (PulsarStandalone: --wipe-data, --no-functions-worker, ...)
    # are added here; the broker verb does not take them.
    standalone.set_defaults(run=broker.run)
    return standalone
