"""--auth-plugin and --auth-params, as Pulsar's tools (pulsar-admin, pulsar-client, pulsar-perf) take
them, and the TLS flags of the client verbs; shared by `minipulsar admin`, `client` and `perf`.

    --auth-plugin org.apache.pulsar.client.impl.auth.AuthenticationToken --auth-params token:<jwt>
    --auth-plugin org.apache.pulsar.client.impl.auth.AuthenticationToken --auth-params file:///path/to/token
    --auth-plugin org.apache.pulsar.client.impl.auth.AuthenticationTls
        --auth-params tlsCertFile:/c.pem,tlsKeyFile:/k.pem
    --auth-plugin org.apache.pulsar.client.impl.auth.AuthenticationBasic
        --auth-params '{"userId":"alice","password":"secret"}'
"""
from __future__ import annotations

import argparse

from minipulsar.cli.runtime import UsageError
from minipulsar.client.auth import Authentication, create_authentication


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    """--auth-plugin and --auth-params, as Pulsar's tools take them."""
    parser.add_argument("--auth-plugin", help="authentication plugin class name, e.g. "
                                              "org.apache.pulsar.client.impl.auth.AuthenticationToken")
    parser.add_argument("--auth-params", default="", help="the plugin's parameters, e.g. token:<jwt> or file:///path")


def authentication_of(args: argparse.Namespace) -> Authentication | None:
    """The plugin --auth-plugin/--auth-params name (None without a plugin); raises UsageError."""
    if not args.auth_plugin:
        if args.auth_params:
            raise UsageError("--auth-params needs --auth-plugin")
        return None
    try:
        return create_authentication(args.auth_plugin, args.auth_params)
    except ValueError as exc:
        raise UsageError(f"--auth-plugin: {exc}") from None


def add_client_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """--tls-trust-cert-path and --tls-allow-insecure of the verbs that connect over pulsar+ssl://
    (client.conf's tlsTrustCertsFilePath and tlsAllowInsecureConnection)."""
    parser.add_argument("--tls-trust-cert-path", help="CAs (PEM) that sign the broker's certificate")
    parser.add_argument("--tls-allow-insecure", action="store_true", help="accept an untrusted broker certificate")


def client_connection_options(args: argparse.Namespace) -> dict:
    """The minipulsar.client.Client options those flags and --auth-plugin/--auth-params give."""
    return {"authentication": authentication_of(args), "tls_trust_certs_file_path": args.tls_trust_cert_path,
            "tls_allow_insecure_connection": args.tls_allow_insecure}
