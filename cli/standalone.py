"""`minipulsar standalone [flags]`: run a broker until SIGTERM/SIGINT, as Pulsar's `pulsar standalone`.

A thin launcher: the flags are the `broker` verb's (minipulsar.cli.broker.add_broker_flags) and so
are the settings, exit statuses and shutdown. Pulsar's standalone (PulsarStandaloneStarter) also
starts a metadata store and bookies in its process; minipulsar's broker keeps its metadata and
ledgers in its own data folder, so this verb starts nothing else. The functions worker runs in the
broker (functionsWorkerEnabled); -nfw / --no-functions-worker turns it off, as Pulsar's flag does.
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
    # are added here; the broker verb does not take them (functionsWorkerEnabled=false does the same).
    standalone.add_argument("-nfw", "--no-functions-worker", action="store_true",
                            help="Run standalone without the Pulsar Functions worker (functionsWorkerEnabled=false)")
    standalone.set_defaults(run=broker.run)
    return standalone
