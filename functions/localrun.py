"""`python -m minipulsar.functions.localrun`: run a function on this machine against any broker,
without a worker (what `minipulsar admin functions localrun` starts, as pulsar-admin's localrun
starts Pulsar's LocalRunner).

    python -m minipulsar.functions.localrun --function-config '{"className": ..., "inputs": [...]}'
        --py exclamation.py --broker-service-url pulsar://127.0.0.1:6650 [--state-dir DIR]
        [--instance-id-offset 0] [--client-auth-plugin CLASS --client-auth-params PARAMS]
        [--tls-trust-cert-path CA.pem]

The config is checked as a create request is (minipulsar.functions.config); the name defaults to
the class name's last part, the tenant and namespace to public/default, as Pulsar infers them.
`parallelism` instance processes run under the same supervision as a worker's (restarted with
back-off), their output on this process's stdout, until SIGINT or SIGTERM. State goes to
--state-dir (default: a temporary folder, removed at exit: Pulsar's localrun keeps state only
with a state storage URL). Exit status 2 for a config Pulsar would refuse.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import uuid
from pathlib import Path

from minipulsar.functions import config as function_config
from minipulsar.functions.errors import InvalidFunctionError
from minipulsar.functions.spec import InstanceSpec
from minipulsar.functions.supervisor import InstanceSupervisor


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m minipulsar.functions.localrun", description=__doc__.splitlines()[0])
    p.add_argument("--function-config", required=True, help="the FunctionConfig, as JSON")
    p.add_argument("--py", required=True, help="the function's .py, .zip or .whl")
    p.add_argument("--broker-service-url", default="pulsar://127.0.0.1:6650", help="the broker's URL")
    p.add_argument("--state-dir", help="where the function's state table lives (default: a temporary folder)")
    p.add_argument("--instance-id-offset", type=int, default=0, help="the first instance's id (default 0)")
    p.add_argument("--client-auth-plugin", default="", help="Pulsar's client authentication plugin class")
    p.add_argument("--client-auth-params", default="", help="its parameters")
    p.add_argument("--tls-trust-cert-path", default="", help="CAs of a pulsar+ssl:// broker")
    p.add_argument("--cluster-name", default="standalone", help="the cluster label of the instances' metrics")
    return p


def stored_config(raw: dict) -> dict:
    """The checked config, with Pulsar's inferred name, tenant and namespace."""
    class_name = raw.get("className") or ""
    name = raw.get("name") or class_name.split(".")[-1]
    return function_config.normalize(raw, raw.get("tenant") or "public", raw.get("namespace") or "default", name)


async def run(args: argparse.Namespace, config: dict, work: Path) -> None:
    package = Path(args.py).resolve()
    function_id = str(uuid.uuid4())
    state_dir = Path(args.state_dir).resolve() if args.state_dir else work / "state"
    supervisors = [InstanceSupervisor(InstanceSpec(
        config=config, instance_id=args.instance_id_offset + i, function_id=function_id, function_version=0,
        package=str(package), work_dir=str(work / str(args.instance_id_offset + i)), state_dir=str(state_dir),
        service_url=args.broker_service_url, cluster=args.cluster_name, auth_plugin=args.client_auth_plugin,
        auth_params=args.client_auth_params, tls_trust_certs_file_path=args.tls_trust_cert_path), None)
        for i in range(config["parallelism"])]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    for supervisor in supervisors:
        supervisor.start()
    await stop.wait()
    await asyncio.gather(*(s.stop() for s in supervisors))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        raw = json.loads(args.function_config)
        if not isinstance(raw, dict):
            raise InvalidFunctionError("the function config must be a JSON object")
        function_config.check_types(raw)
        config = stored_config(raw)
    except (ValueError, InvalidFunctionError) as exc:
        print(f"localrun: {exc}", file=sys.stderr)
        return 2
    if not Path(args.py).is_file():
        print(f"localrun: The specified python file does not exist: {args.py}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="minipulsar-localrun-") as work:
        asyncio.run(run(args, config, Path(work)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
