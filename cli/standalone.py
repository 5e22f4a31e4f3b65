"""`minipulsar standalone [flags]`: run a broker until SIGTERM/SIGINT, as Pulsar's `pulsar standalone`.

The broker verb's flags, settings, exit statuses and shutdown (minipulsar.cli.broker), plus what
Pulsar's standalone (PulsarStandaloneStarter) does differently from its broker:
  * it logs to stdout, as Pulsar's standalone logs to its console, so the readiness lines
    "HTTP Service started at http://..." and "messaging service is ready" are on stdout;
  * it runs with Pulsar's runningStandalone, so lookups that answer a loopback address keep
    clients on the address they connected to (a container's published port);
  * it takes Pulsar's standalone flags: `-c/--config`, `-a/--advertised-address`, `--wipe-data`
    (the data folder is emptied before start, as Pulsar wipes its ZooKeeper and bookie data);
    `-nfw/--no-functions-worker` turns off the functions worker the broker runs
    (functionsWorkerEnabled=false); the flags of the parts minipulsar does not run (stream storage,
    ZooKeeper, bookies, a separate worker config) are accepted and reported in one INFO line, so
    Pulsar's command lines run unchanged.
Pulsar's standalone also starts a metadata store and bookies in its process; minipulsar's broker
keeps its metadata and ledgers in its own data folder, so nothing else starts.
"""
from __future__ import annotations

import argparse
import logging
import shutil
import sys
from pathlib import Path

from minipulsar.cli import broker

log = logging.getLogger("minipulsar")

# Pulsar standalone's flags for the parts minipulsar does not run: (names, takes a value).
IGNORED_FLAGS = (
    (("-nss", "--no-stream-storage"), False),
    (("--only-broker",), False), (("--no-broker",), False),
    (("--bookkeeper-dir",), True), (("--zookeeper-dir",), True), (("--zookeeper-port",), True),
    (("--bookkeeper-port",), True), (("--num-bookies",), True), (("--stream-storage-port",), True),
    (("--metadata-dir",), True), (("--metadata-url",), True), (("-fwc", "--functions-worker-conf"), True),
)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `standalone` on the root parser's sub-commands; returns its parser."""
    standalone = subparsers.add_parser("standalone", help="run a broker (as pulsar standalone)",
                                       description=__doc__.splitlines()[0])
    broker.add_broker_flags(standalone, config_flags=("-c", "--config"), advertised_flags=("-a", "--advertised-address"))
    standalone.add_argument("--wipe-data", action="store_true", help="empty the data folder before starting")
    standalone.add_argument("-nfw", "--no-functions-worker", action="store_true",
                            help="run without the Pulsar Functions worker (functionsWorkerEnabled=false)")
    ignored = standalone.add_argument_group("Pulsar standalone flags with nothing to act on here (accepted, ignored)")
    for names, takes_value in IGNORED_FLAGS:
        options = {"metavar": "VALUE"} if takes_value else {"action": "store_true"}
        ignored.add_argument(*names, dest=_dest(names), help=f"{'/'.join(names)}: accepted, ignored", **options)
    standalone.set_defaults(run=run, running_standalone=True, log_stream=sys.stdout)
    return standalone


def _dest(names: tuple[str, ...]) -> str:
    return "ignored_" + names[-1].lstrip("-").replace("-", "_")


def ignored_flags(args: argparse.Namespace) -> list[str]:
    """The Pulsar flags given that have nothing to act on here, as typed (long names)."""
    given = []
    for names, takes_value in IGNORED_FLAGS:
        value = getattr(args, _dest(names))
        if value:
            given.append(f"{names[-1]} {value}" if takes_value else names[-1])
    return given


def run(args: argparse.Namespace) -> int:
    """The broker verb's run, with the standalone-only flags acted on once the settings are read."""

    def prepare(config) -> None:
        ignored = ignored_flags(args)
        if ignored:
            log.info("ignoring Pulsar standalone flags for parts minipulsar does not run: %s", ", ".join(ignored))
        if args.wipe_data:
            wipe(Path(config.data_dir))

    return broker.run(args, prepare=prepare)


def wipe(data_dir: Path) -> None:
    """Empty data_dir, keeping the folder itself (it may be a mount point, a tmpfs)."""
    if not data_dir.is_dir():
        return
    log.info("--wipe-data: removing everything in %s", data_dir.resolve())
    for child in data_dir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
