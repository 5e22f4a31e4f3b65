"""What an instance process is told: the InstanceSpec the worker (or localrun) writes on the
process's stdin as one JSON line, as Pulsar's process runtime passes --function_details and the
connection flags to python_instance_main.

Secrets and credentials travel this way, not on the command line, so `ps` does not show them.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class InstanceSpec:
    """config: the stored FunctionConfig (minipulsar.functions.config); instance_id: 0 ..
    parallelism-1; function_id: the function's UUID; function_version: its metadata version;
    package: absolute path of the .py, .zip or .whl; work_dir: this instance's own folder (archives
    are unpacked there); state_dir: the folder of the state tables (minipulsar.functions.state);
    service_url: the broker's pulsar:// or pulsar+ssl:// URL; cluster: the cluster name (a metrics
    label); auth_plugin / auth_params: Pulsar's client authentication plugin class and parameters
    ("" for none); tls_trust_certs_file_path: CAs for a pulsar+ssl:// URL ("" for the system's);
    negative_ack_redelivery_delay_ms: delay of the input consumers' negative acks."""

    config: dict
    instance_id: int
    function_id: str
    function_version: int
    package: str
    work_dir: str
    state_dir: str
    service_url: str
    cluster: str = "standalone"
    auth_plugin: str = ""
    auth_params: str = ""
    tls_trust_certs_file_path: str = ""
    negative_ack_redelivery_delay_ms: int = 60_000

    @property
    def fqfn(self) -> str:
        return f"{self.config['tenant']}/{self.config['namespace']}/{self.config['name']}"

    def to_line(self) -> bytes:
        """The spec as one JSON line, what the instance reads first on its stdin."""
        return json.dumps(asdict(self)).encode() + b"\n"

    @classmethod
    def from_line(cls, line: bytes | str) -> "InstanceSpec":
        return cls(**json.loads(line))
