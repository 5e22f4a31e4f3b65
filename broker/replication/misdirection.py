"""Replication that reaches the wrong cluster: refused by the receiving broker, reported loudly by
the replicator, and warned about at start-up.

A replicator dials the remote's service URL from ``replicationClusters``, asks it to LOOKUP the
topic and connects to the address the remote advertises. When that address means something else
from here (the default advertised address, 127.0.0.1, seen from another container or host is the
replicator's own broker), the replicator lands on the wrong broker and, unchecked, writes the
entries into that broker's own topic: the remote gets nothing and nobody is told.

Replicator producers are named ``<replicatorPrefix>.<from>--><to>`` (Pulsar's
PersistentReplicator names them so). A broker accepts such a producer only when ``<to>`` is its own
``clusterName`` and ``<from>`` is not; otherwise it answers NotAllowedError with REFUSAL in the
message, and the replicator logs an ERROR naming the settings to fix and keeps retrying with its
back-off. Pulsar relies on correct configuration here; minipulsar checks it.
"""
from __future__ import annotations

import ipaddress
import logging
import time
from urllib.parse import urlparse

from minipulsar.broker.config import BrokerConfig
from minipulsar.broker.errors import NotAllowedError
from minipulsar.broker.listeners import parse_advertised_listeners
from minipulsar.client.exceptions import NotAllowedError as ClientNotAllowedError

log = logging.getLogger(__name__)

REFUSAL = "replicator reached the wrong cluster"
PRODUCER_NAME_DELIMITER = "-->"  # Pulsar REPL_PRODUCER_NAME_DELIMITER
LOG_INTERVAL = 60.0  # seconds between two log lines about the same refused or misdirected name
_last_warned: dict[str, float] = {}  # "<cluster>/<producer name>" -> when last refused with a WARNING


def replicator_producer_name(prefix: str, local: str, remote: str) -> str:
    """The name of local's replicator producer on remote: 'pulsar.repl.a-->b'."""
    return f"{prefix}.{local}{PRODUCER_NAME_DELIMITER}{remote}"


def parse_replicator_name(name: str, prefix: str) -> tuple[str, str | None] | None:
    """(from cluster, to cluster or None) of a replicator producer name; None for other names
    (Pulsar's oldest replicators were named '<prefix>.<from>' without the target)."""
    if not name.startswith(prefix + "."):
        return None
    source, sep, target = name[len(prefix) + 1:].partition(PRODUCER_NAME_DELIMITER)
    return source, (target if sep else None)


def check_replicator_producer(name: str, prefix: str, local: str) -> None:
    """Raise NotAllowedError (message starting with REFUSAL) when a replicator producer named
    `name` ('<prefix>.<from>--><to>') is not meant for cluster `local`: it comes from `local`
    itself (a replication loop) or names another target cluster. Other names, including the
    target-less '<prefix>.<from>' of Pulsar's oldest replicators, pass."""
    parsed = parse_replicator_name(name, prefix)
    if parsed is None or parsed[1] is None:
        return
    source, target = parsed
    if source == local or target != local:
        # The replicator retries every few seconds: one WARNING a minute per name is enough here
        # (the replicator's side logs the ERROR with the settings to fix).
        now = time.monotonic()
        key = f"{local}/{name}"
        loud = now - _last_warned.get(key, -LOG_INTERVAL) >= LOG_INTERVAL
        if loud:
            _last_warned[key] = now
        log.log(logging.WARNING if loud else logging.DEBUG,
                "refusing replicator producer %s: this broker is cluster %s", name, local)
        raise NotAllowedError(f"{REFUSAL}: this broker is cluster {local!r}, the producer {name!r} replicates "
                              f"from {source!r} to {target!r}")


def is_refusal(exc: BaseException) -> bool:
    """True when exc is a remote broker's REFUSAL, as the bundled client raises it."""
    return isinstance(exc, ClientNotAllowedError) and REFUSAL in str(exc)


def refusal_advice(remote: str, url: str) -> str:
    """What to fix when the replicator toward `remote` (dialled at `url`) reached the wrong broker."""
    return (f"check replicationClusters here (cluster {remote} is {url}) and advertisedListeners / "
            f"advertisedAddress on {remote}: its lookups must answer an address this broker reaches "
            f"as {remote} (127.0.0.1 means this broker itself when the two run in separate containers or hosts)")


def warn_if_advertised_loopback(config: BrokerConfig, peers: dict[str, str]) -> bool:
    """Log a WARNING when this broker advertises a loopback address to its lookups while a peer
    cluster is reached at a non-loopback address (another host or container, where our 127.0.0.1
    is not us: that peer's replicators would connect to themselves). Returns whether it warned."""
    listeners, internal = parse_advertised_listeners(config.advertised_listeners, config.internal_listener_name)
    url = listeners[internal].service_url if internal else config.broker_service_url
    host = urlparse(url or "").hostname or ""
    remote = sorted(name for name, peer_url in peers.items() if not _is_loopback(urlparse(peer_url).hostname or ""))
    if not _is_loopback(host) or not remote:
        return False
    key = "advertisedListeners (internal listener)" if internal else "advertisedAddress"
    log.warning("this broker advertises %s, a loopback address, while cluster(s) %s are on other hosts: their "
                "replicators would connect to themselves; set %s to an address they can reach "
                "(e.g. this container's service name)", url, ", ".join(remote), key)
    return True


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
