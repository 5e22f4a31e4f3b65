"""Advertised listeners (PIP-61): named addresses a LOOKUP can ask for.

`advertisedListeners` is "name:url,name:url,..." as in broker.conf, where each listener has at
most one pulsar:// and one pulsar+ssl:// URL (listed as two entries with the same name).
`internalListenerName` names the one the broker itself is known by; empty means the first listed.
LOOKUP.advertised_listener_name (the C++ client always sends it, empty when the application set no
listener_name) picks the listener whose URLs go into brokerServiceUrl / brokerServiceUrlTls; empty
means the internal listener, or the plain advertised URL when no listener is configured. An unknown
name is answered as Pulsar does: Failed with ServiceNotReady "the broker do not have <name> listener".
Source: Pulsar MultipleListenerValidator, ServiceConfigurationUtils.getInternalListener,
NamespaceService (lookup by listener name).
"""
from __future__ import annotations

from dataclasses import dataclass

from minipulsar.broker.config import ConfigError
from minipulsar.broker.errors import ServiceNotReadyError

_SCHEMES = ("pulsar", "pulsar+ssl")


@dataclass
class Listener:
    """name; service_url: pulsar://host:port or None; service_url_tls: pulsar+ssl://host:port or None."""

    name: str
    service_url: str | None = None
    service_url_tls: str | None = None


def parse_advertised_listeners(text: str, internal_name: str) -> tuple[dict[str, Listener], str | None]:
    """(listeners by name, internal listener name); ({}, None) when text is empty.
    Raises ConfigError for a malformed entry, two URLs of one scheme on a listener, or an
    internalListenerName that is not listed."""
    listeners: dict[str, Listener] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, url = item.partition(":")
        scheme = url.split("://", 1)[0] if "://" in url else ""
        if not sep or not name or scheme not in _SCHEMES or not url.split("://", 1)[1]:
            raise ConfigError(f"config key advertisedListeners: invalid entry {item!r} "
                              "(expected name:pulsar://host:port or name:pulsar+ssl://host:port)")
        listener = listeners.setdefault(name, Listener(name))
        attribute = "service_url" if scheme == "pulsar" else "service_url_tls"
        if getattr(listener, attribute) is not None:
            raise ConfigError(f"config key advertisedListeners: listener {name} has more than one {scheme}:// URL")
        setattr(listener, attribute, url)
    if not listeners:
        if internal_name:
            raise ConfigError("config key internalListenerName: set but advertisedListeners is empty")
        return {}, None
    internal = internal_name or next(iter(listeners))
    if internal not in listeners:
        raise ConfigError(f"config key internalListenerName: {internal} is not in advertisedListeners")
    return listeners, internal


class AdvertisedListeners:
    """The broker's listeners; default_url: the plain advertised pulsar:// URL (no listeners);
    default_url_tls: the pulsar+ssl:// one of brokerServicePortTls, answered beside it."""

    def __init__(self, advertised_listeners: str, internal_listener_name: str, default_url: str):
        self.listeners, self.internal_name = parse_advertised_listeners(advertised_listeners, internal_listener_name)
        self._default_url = default_url
        # pulsar+ssl:// URL of brokerServicePortTls, set once that port listens (None: no TLS port)
        self.default_url_tls: str | None = None

    def lookup(self, listener_name: str, default_url: str | None = None) -> Listener:
        """The listener a LOOKUP asked for; raises ServiceNotReadyError for an unknown name."""
        if not self.listeners:
            if listener_name:
                raise ServiceNotReadyError(f"the broker do not have {listener_name} listener")
            return Listener("", default_url or self._default_url, self.default_url_tls)
        name = listener_name or self.internal_name
        listener = self.listeners.get(name)
        if listener is None:
            raise ServiceNotReadyError(f"the broker do not have {listener_name} listener")
        return listener
