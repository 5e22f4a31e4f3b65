"""The instance's pulsar.Client: the broker's URL with the credentials and CAs the worker passed.

The worker's authentication plugin and parameters are Pulsar's (brokerClientAuthenticationPlugin /
...Parameters): AuthenticationToken ("token:<jwt>" or "file:///path") and AuthenticationTls
("tlsCertFile:...,tlsKeyFile:..."), read by the bundled client's parser and handed to the official
client's own classes.
"""
from __future__ import annotations

from typing import Any

import pulsar

from minipulsar.client.auth import AuthenticationTLS, AuthenticationToken, create_authentication
from minipulsar.functions.spec import InstanceSpec

OPERATION_TIMEOUT_SECONDS = 30  # as Pulsar's python_instance_main
# The C++ core writes its own log lines (INFO and up) to stdout, captured with the instance's output.
# A Python logger here would make the core call into the interpreter for every record it considers,
# debug ones included: measured at about half the instance's time per message.
CLIENT_LOG_LEVEL = pulsar.LoggerLevel.Info


def official_authentication(plugin: str, params: str) -> Any:
    """The official client's authentication for Pulsar's plugin class name and parameters; None
    when plugin is empty. Raises ValueError for a plugin the official client cannot take."""
    if not plugin:
        return None
    parsed = create_authentication(plugin, params)
    if isinstance(parsed, AuthenticationToken):
        return pulsar.AuthenticationToken(lambda: parsed.auth_data().decode())  # a file: token is re-read
    if isinstance(parsed, AuthenticationTLS):
        return pulsar.AuthenticationTLS(parsed.certificate_path, parsed.private_key_path)
    return None


def connect(spec: InstanceSpec) -> Any:
    """A pulsar.Client for spec's broker (connections open lazily, at the first subscribe)."""
    return pulsar.Client(spec.service_url, authentication=official_authentication(spec.auth_plugin, spec.auth_params),
                         operation_timeout_seconds=OPERATION_TIMEOUT_SECONDS,
                         tls_trust_certs_file_path=spec.tls_trust_certs_file_path or None,
                         logger=pulsar.ConsoleLogger(CLIENT_LOG_LEVEL))
