"""`minipulsar broker [flags]`: run a broker until SIGTERM/SIGINT.

Settings come from --config (broker.conf-style key=value lines with Pulsar key names), then
MINIPULSAR_<key> environment variables, then the flags below. A bad value stops start-up with a
message naming the key (exit status 2); a broker that cannot start (port taken, unreadable data
folder) exits with status 1. `minipulsar standalone` (minipulsar.cli.standalone) takes the same
flags and runs the broker through `run`.

minipulsar.broker is imported when the verb runs, not at import: the router (minipulsar.cli)
builds every verb's parser on each call, and `minipulsar admin|client|perf|tokens` never need the
broker (importing it would add about 0.1 s to each of them).
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys

from minipulsar import __version__
from minipulsar.cli.runtime import configure_logging, install_uvloop

log = logging.getLogger("minipulsar")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
GC_GEN0_THRESHOLD = 100_000  # allocations between young-generation collections (CPython default 700)

# flag -> Pulsar config key
_FLAGS = {
    "data_dir": "dataDir",
    "broker_service_port": "brokerServicePort",
    "web_service_port": "webServicePort",
    "bind_address": "bindAddress",
    "advertised_address": "advertisedAddress",
    "cluster_name": "clusterName",
    "running_standalone": "runningStandalone",  # set by `standalone`, never a flag of its own
}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `broker` on the root parser's sub-commands; returns its parser."""
    broker = subparsers.add_parser("broker", help="run a broker", description=__doc__.splitlines()[0])
    add_broker_flags(broker)
    broker.set_defaults(run=run)
    return broker


def add_broker_flags(parser: argparse.ArgumentParser, config_flags=("--config",),
                     advertised_flags=("--advertised-address",)) -> None:
    """The flags of the verbs that run a broker (`broker`, `standalone`), which `run` reads;
    config_flags and advertised_flags: the names of --config and --advertised-address (standalone
    adds Pulsar's short -c and -a)."""
    parser.add_argument(*config_flags, dest="config", help="broker.conf-style file of key=value lines (Pulsar key names)")
    parser.add_argument("--data-dir", help="where ledgers and cursors live (default ./data)")
    parser.add_argument("--broker-service-port", help="binary protocol port (default 6650)")
    parser.add_argument("--web-service-port", help="HTTP admin port (default 8080)")
    parser.add_argument("--bind-address", help="address to listen on (default 0.0.0.0)")
    parser.add_argument(*advertised_flags, dest="advertised_address", help="host clients are told to connect to")
    parser.add_argument("--cluster-name", help="this broker's cluster name (default standalone)")
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS,
                        help="DEBUG, INFO, WARNING, ERROR (default INFO)")
    parser.add_argument("--version", action="version", version=f"minipulsar {__version__}")


def report_unused_keys(extra: dict[str, str]) -> None:
    """One INFO line for Pulsar keys minipulsar does not use; a WARNING for each key that is
    neither, naming the closest known key (most likely a typo: the setting has no effect)."""
    from minipulsar.broker.config import unused_keys_report

    pulsar, unknown = unused_keys_report(extra)
    if pulsar:
        log.info("ignoring Pulsar config keys minipulsar does not use: %s", ", ".join(pulsar))
    for key, close in unknown:
        hint = f"; did you mean {close}?" if close else ""
        log.warning("config key %s is neither minipulsar's nor Pulsar's and has no effect%s", key, hint)


def report_jvm_options() -> None:
    """One INFO line for PULSAR_MEM / PULSAR_GC / PULSAR_EXTRA_OPTS: the JVM options there mean
    nothing without a JVM; the -D system properties the broker honours are named."""
    from minipulsar.broker.system_properties import HONOURED_PROPERTIES, jvm_options

    options = jvm_options()
    honoured = [o for o in options if o.startswith("-D") and o[2:].partition("=")[0] in HONOURED_PROPERTIES]
    ignored = [o for o in options if o not in honoured]
    if ignored:
        log.info("ignoring JVM options (minipulsar runs no JVM): %s", " ".join(ignored))
    if honoured:
        log.info("honouring system properties: %s", ", ".join(o[2:].partition("=")[0] for o in honoured))


def load_config(args: argparse.Namespace):
    """The BrokerConfig from file, environment and flags; raises ConfigError."""
    from minipulsar.broker.config import build_config, env_overrides, parse_conf_file

    file_values = parse_conf_file(args.config) if args.config else {}
    flag_values = {key: getattr(args, attr) for attr, key in _FLAGS.items() if getattr(args, attr, None) is not None}
    if getattr(args, "no_functions_worker", False):  # `standalone -nfw`
        flag_values["functionsWorkerEnabled"] = "false"
    return build_config(file_values, env_overrides(os.environ), flag_values)


async def run_broker(config) -> None:
    """Run until SIGTERM or SIGINT, then shut down cleanly."""
    from minipulsar.broker.broker import Broker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with Broker(config):
        tune_garbage_collector()
        await stop.wait()
        log.info("shutting down")


def tune_garbage_collector() -> None:
    """Move everything start-up allocated out of the collector's view and collect the youngest
    generation less often: the per-message objects of the publish and dispatch paths die by
    reference counting, and with the default threshold (700) the cyclic collector ran thousands
    of times per 100k messages, scanning the same long-lived objects each time.
    The threshold stays above what one group commit allocates: the count a young collection
    waits for is allocations less deallocations, but deallocations never take it below zero, so
    when a report frees a group's objects at once the next group's allocations count in full. At
    10,000 topics a group's appends allocate 20,000-30,000 tracked objects (operations, their
    lists and arrays, positions, pending publishes); with a threshold of 20,000 that was a young
    collection per group, ten a second, each scanning the group in flight and promoting it."""
    gc.freeze()
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(gen0, GC_GEN0_THRESHOLD), gen1, gen2)


def run(args: argparse.Namespace, prepare=None) -> int:
    """The `broker` (and `standalone`) verb: 0 after a clean shutdown, 2 on a bad setting, 1 if it
    cannot start. prepare(config), when given, runs once the settings are read, before the broker
    starts (standalone's --wipe-data)."""
    from minipulsar.broker.config import ConfigError
    from minipulsar.storage import StorageError

    configure_logging(args.log_level, stream=getattr(args, "log_stream", None))
    try:
        config = load_config(args)
    except ConfigError as exc:
        print(f"minipulsar: {exc}", file=sys.stderr)
        return 2
    report_unused_keys(config.extra)
    report_jvm_options()
    if prepare is not None:
        prepare(config)
    install_uvloop()
    try:
        asyncio.run(run_broker(config))
    except (StorageError, OSError, ConfigError) as exc:  # ConfigError: settings checked at start (listeners)
        print(f"minipulsar: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0
