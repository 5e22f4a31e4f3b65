"""Pulsar's conf/client.conf, read the way Pulsar's tools read it (pulsar-admin, pulsar-client,
pulsar-perf): the service URLs, the authentication plugin and its parameters, and the TLS keys.

The file is key=value lines ('#' comments), found at $PULSAR_CLIENT_CONF, else
<PULSAR_HOME>/conf/client.conf. Its settings become the flags of minipulsar's own verbs; flags on
the command line come after them and win, as Pulsar's tools let their options override the file.
Keys read: webServiceUrl, brokerServiceUrl, authPlugin, authParams, tlsTrustCertsFilePath,
tlsAllowInsecureConnection (every other key of Pulsar's client.conf is left alone).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping


def client_conf_path(home: Path, environ: Mapping[str, str] = os.environ) -> Path:
    """$PULSAR_CLIENT_CONF, else home/conf/client.conf (Pulsar's bin scripts' default)."""
    return Path(environ.get("PULSAR_CLIENT_CONF") or home / "conf" / "client.conf")


def read_client_conf(path: Path) -> dict[str, str]:
    """The non-empty settings of the file ({} when there is no file); lines without '=' are skipped,
    as Java's Properties keeps them as keys without a value."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    settings = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")) or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if value.strip():
            settings[key.strip()] = value.strip()
    return settings


def auth_flags(conf: Mapping[str, str]) -> list[str]:
    """--auth-plugin / --auth-params of authPlugin / authParams."""
    flags = []
    if conf.get("authPlugin"):
        flags += ["--auth-plugin", conf["authPlugin"]]
        if conf.get("authParams"):
            flags += ["--auth-params", conf["authParams"]]
    return flags


def tls_flags(conf: Mapping[str, str]) -> list[str]:
    """--tls-trust-cert-path / --tls-allow-insecure of tlsTrustCertsFilePath / tlsAllowInsecureConnection."""
    flags = []
    if conf.get("tlsTrustCertsFilePath"):
        flags += ["--tls-trust-cert-path", conf["tlsTrustCertsFilePath"]]
    if conf.get("tlsAllowInsecureConnection", "").lower() == "true":
        flags.append("--tls-allow-insecure")
    return flags


def admin_flags(conf: Mapping[str, str]) -> list[str]:
    """`minipulsar admin`'s global flags from client.conf (webServiceUrl is pulsar-admin's URL)."""
    url = ["--admin-url", conf["webServiceUrl"]] if conf.get("webServiceUrl") else []
    return url + auth_flags(conf) + tls_flags(conf)


def service_url(conf: Mapping[str, str]) -> str | None:
    """The URL pulsar-client and pulsar-perf connect to: brokerServiceUrl, else webServiceUrl."""
    return conf.get("brokerServiceUrl") or conf.get("webServiceUrl")
