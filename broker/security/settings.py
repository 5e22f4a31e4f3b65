"""The security keys checked together at start-up.

Each key parses on its own in broker/config.py; what only makes sense in combination is checked
here, and anything that would leave security silently doing nothing stops start-up with a
ConfigError naming the key:
- an empty brokerServicePort / webServicePort (plain port off) without its TLS port;
- authorizationEnabled without authenticationEnabled (every role would be unknown);
- AuthenticationProviderTls without a TLS port or without tlsTrustCertsFilePath (no client
  certificate could ever be verified);
- an unknown brokerClientAuthenticationPlugin, or parameters it cannot use.
Providers and token keys configured while authenticationEnabled=false only get a WARNING: that
is what the key says, and Pulsar ignores them likewise.
"""
from __future__ import annotations

import logging

from minipulsar.broker.config import PORT_OFF, BrokerConfig, ConfigError
from minipulsar.broker.security import tls_provider
from minipulsar.broker.security.authentication import provider_class_names
from minipulsar.client.auth import Authentication, create_authentication

log = logging.getLogger(__name__)

AUTHENTICATION_DISABLED = "org.apache.pulsar.client.impl.auth.AuthenticationDisabled"  # Pulsar's default plugin


def tls_port(value: str) -> int | None:
    """brokerServicePortTls / webServicePortTls as a port number, None when empty (off)."""
    return int(value) if value.strip() else None


def tls_ports_configured(config: BrokerConfig) -> bool:
    return tls_port(config.broker_service_port_tls) is not None or tls_port(config.web_service_port_tls) is not None


def check_settings(config: BrokerConfig) -> None:
    """Raise ConfigError for a combination of security keys that cannot work; warn about keys
    that have no effect."""
    for plain, plain_key, tls, tls_key in ((config.broker_service_port, "brokerServicePort",
                                            config.broker_service_port_tls, "brokerServicePortTls"),
                                           (config.web_service_port, "webServicePort",
                                            config.web_service_port_tls, "webServicePortTls")):
        if plain == PORT_OFF and tls_port(tls) is None:
            raise ConfigError(f"config key {plain_key}: empty turns the plain port off, which needs {tls_key}")
    if config.authorization_enabled and not config.authentication_enabled:
        raise ConfigError("config key authorizationEnabled: needs authenticationEnabled=true (without "
                          "authentication no client has a role to authorize)")
    providers = provider_class_names(config.authentication_providers)
    if not config.authentication_enabled:
        ignored = [key for key, value in (("authenticationProviders", providers),
                                          ("tokenSecretKey", config.token_secret_key),
                                          ("tokenPublicKey", config.token_public_key)) if value]
        if ignored:
            log.warning("authenticationEnabled=false: %s set but not used; every client is accepted",
                        ", ".join(ignored))
        return
    if tls_provider.CLASS_NAME in providers:
        if not tls_ports_configured(config):
            raise ConfigError(f"config key authenticationProviders: {tls_provider.CLASS_NAME} needs a TLS port "
                              "(brokerServicePortTls or webServicePortTls)")
        if not config.tls_trust_certs_file_path:
            raise ConfigError(f"config key tlsTrustCertsFilePath: {tls_provider.CLASS_NAME} needs the CAs client "
                              "certificates are verified against")
    if config.authorization_enabled and not config.super_user_roles.strip():
        log.warning("authorizationEnabled=true with no superUserRoles: nobody can create tenants or administer "
                    "the broker")


def broker_client_authentication(config: BrokerConfig) -> Authentication | None:
    """What the broker's own clients (replicators, health check) authenticate with, from
    brokerClientAuthenticationPlugin / brokerClientAuthenticationParameters; None when unset.
    Raises ConfigError naming the key."""
    plugin = config.broker_client_authentication_plugin.strip()
    if not plugin or plugin == AUTHENTICATION_DISABLED:
        if config.broker_client_authentication_parameters:
            raise ConfigError("config key brokerClientAuthenticationPlugin: brokerClientAuthenticationParameters "
                              "is set but no plugin uses it")
        return None
    try:
        return create_authentication(plugin, config.broker_client_authentication_parameters)
    except ValueError as exc:
        raise ConfigError(f"config key brokerClientAuthenticationPlugin: {exc}") from None
