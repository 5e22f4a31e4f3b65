"""The `minipulsar` command line: `minipulsar broker [flags]` runs a broker until SIGTERM/SIGINT.

Settings come from --config (broker.conf-style key=value lines with Pulsar key names), then
MINIPULSAR_<key> environment variables, then the flags below. A bad value stops start-up with a
message naming the key (exit status 2).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

from minipulsar.broker.config import ConfigError, build_config, env_overrides, parse_conf_file
from minipulsar.broker.server import Broker
from minipulsar.storage import StorageError

log = logging.getLogger("minipulsar")

# flag -> Pulsar config key
_FLAGS = {
    "data_dir": "dataDir",
    "broker_service_port": "brokerServicePort",
    "web_service_port": "webServicePort",
    "bind_address": "bindAddress",
    "advertised_address": "advertisedAddress",
    "cluster_name": "clusterName",
}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="minipulsar", description="A broker that speaks the Apache Pulsar protocol.")
    commands = root.add_subparsers(dest="command", required=True)
    broker = commands.add_parser("broker", help="run a broker")
    broker.add_argument("--config", help="broker.conf-style file of key=value lines (Pulsar key names)")
    broker.add_argument("--data-dir", help="where ledgers and cursors live (default ./data)")
    broker.add_argument("--broker-service-port", help="binary protocol port (default 6650)")
    broker.add_argument("--web-service-port", help="HTTP admin port (default 8080)")
    broker.add_argument("--bind-address", help="address to listen on (default 0.0.0.0)")
    broker.add_argument("--advertised-address", help="host clients are told to connect to")
    broker.add_argument("--cluster-name", help="this broker's cluster name (default standalone)")
    broker.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR (default INFO)")
    return root


def load_config(args: argparse.Namespace):
    """The BrokerConfig from file, environment and flags; raises ConfigError."""
    file_values = parse_conf_file(args.config) if args.config else {}
    flag_values = {key: getattr(args, attr) for attr, key in _FLAGS.items() if getattr(args, attr) is not None}
    return build_config(file_values, env_overrides(os.environ), flag_values)


async def run_broker(config) -> None:
    """Run until SIGTERM or SIGINT, then shut down cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with Broker(config):
        await stop.wait()
        log.info("shutting down")


def _install_uvloop() -> None:
    try:
        import uvloop
    except ImportError:  # uvloop is optional on platforms without it
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_config(args)
    except ConfigError as exc:
        print(f"minipulsar: {exc}", file=sys.stderr)
        return 2
    if config.extra:
        log.info("ignoring config keys minipulsar does not use: %s", ", ".join(sorted(config.extra)))
    _install_uvloop()
    try:
        asyncio.run(run_broker(config))
    except (StorageError, OSError, ConfigError) as exc:  # ConfigError: settings checked at start (listeners)
        print(f"minipulsar: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
