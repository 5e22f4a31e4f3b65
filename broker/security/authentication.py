"""AuthenticationService: the providers authenticationProviders names, by auth method name, as
Pulsar's org.apache.pulsar.broker.authentication.AuthenticationService.

A binary CONNECT (or AUTH_RESPONSE) goes to the provider of its auth_method_name; a web request
to the first provider that finds its kind of credentials in it (a Bearer token, a client
certificate, Basic credentials). Credentials of a method no provider serves get anonymousUserRole when that is set,
and are refused otherwise, as in Pulsar.
"""
from __future__ import annotations

from typing import Callable, Mapping, Protocol

from minipulsar.broker.config import BrokerConfig, ConfigError
from minipulsar.broker.security import basic_provider, tls_provider, token_provider
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.state import AuthState

# Pulsar's provider class names -> how to build that provider from the config.
PROVIDERS: dict[str, Callable[[BrokerConfig], "Provider"]] = {
    token_provider.CLASS_NAME: token_provider.AuthenticationProviderToken.from_config,
    tls_provider.CLASS_NAME: lambda config: tls_provider.AuthenticationProviderTls(),
    basic_provider.CLASS_NAME: basic_provider.AuthenticationProviderBasic.from_config,
}


class Provider(Protocol):
    """What every authentication provider offers."""

    method: str

    def authenticate_data(self, data: bytes, peer_certificate: bytes | None) -> AuthState: ...

    def authenticate_http(self, headers: Mapping[str, str], peer_certificate: bytes | None) -> AuthState | None: ...


def provider_class_names(value: str) -> list[str]:
    """The comma-separated class names of authenticationProviders, without blanks."""
    return [name.strip() for name in value.split(",") if name.strip()]


class AuthenticationService:
    """providers: in the order authenticationProviders lists them; anonymous_role: the role of
    clients without credentials any provider serves ("" = refuse them)."""

    def __init__(self, providers: list[Provider], anonymous_role: str = ""):
        self.providers = {provider.method: provider for provider in providers}
        self.anonymous_role = anonymous_role

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "AuthenticationService":
        """Raises ConfigError naming authenticationProviders (none, or a class we do not have) or
        the provider's own key at fault."""
        names = provider_class_names(config.authentication_providers)
        if not names:
            raise ConfigError("config key authenticationProviders: authenticationEnabled=true needs at least one "
                              f"provider ({', '.join(PROVIDERS)}); without one no client could connect")
        unknown = [name for name in names if name not in PROVIDERS]
        if unknown:
            raise ConfigError(f"config key authenticationProviders: unknown provider {', '.join(unknown)} "
                              f"(minipulsar has {', '.join(PROVIDERS)})")
        return cls([PROVIDERS[name](config) for name in dict.fromkeys(names)], config.anonymous_user_role)

    def authenticate(self, method: str, data: bytes, peer_certificate: bytes | None) -> AuthState:
        """The AuthState of binary credentials; raises AuthenticationFailedError."""
        provider = self.providers.get(method)
        if provider is None:
            return self._anonymous(f"no authentication provider for auth method {method!r}")
        return provider.authenticate_data(data, peer_certificate)

    def authenticate_http(self, headers: Mapping[str, str], peer_certificate: bytes | None) -> AuthState:
        """The AuthState of a web request; raises AuthenticationFailedError."""
        for provider in self.providers.values():
            state = provider.authenticate_http(headers, peer_certificate)
            if state is not None:
                return state
        return self._anonymous("Authentication required")

    def _anonymous(self, reason: str) -> AuthState:
        if self.anonymous_role:
            return AuthState(self.anonymous_role, "none")
        raise AuthenticationFailedError(f"{reason}, and no anonymousUserRole")
