"""Authentication plugins: what CONNECT carries as auth_method_name and auth_data.

AuthenticationToken(token) sends method "token" and the token bytes, as Pulsar's token plugin.
token may be a string or a zero-argument callable returning one (re-read on every connect).
AuthenticationTLS(certificate, key) sends method "tls": the credential is the client certificate
the TLS handshake presents (the connection must be pulsar+ssl:// and present it).
AuthenticationBasic(user, password) sends method "basic" and `user:password`, and the web
service gets `Authorization: Basic base64(user:password)`, as Pulsar's AuthenticationBasic.

create_authentication(plugin, params) builds a plugin from the class name and parameter string
Pulsar's tools take (--auth-plugin / --auth-params, brokerClientAuthenticationPlugin /
brokerClientAuthenticationParameters):
    org.apache.pulsar.client.impl.auth.AuthenticationToken   token:<jwt> | file:///path | {"token": "<jwt>"} | <jwt>
    org.apache.pulsar.client.impl.auth.AuthenticationTls     tlsCertFile:/path,tlsKeyFile:/path
                                                             | {"tlsCertFile": ..., "tlsKeyFile": ...}
    org.apache.pulsar.client.impl.auth.AuthenticationBasic   {"userId": ..., "password": ...[, "method": ...]}
                                                             | userId:<user>,password:<password>
("token", "tls" and "basic" are accepted as short names, as the C++ client's AuthFactory accepts them).
"""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlparse

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"
BASIC_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationBasic"


class Authentication:
    """Base class of authentication plugins: no credentials (auth method "none")."""

    def auth_method_name(self) -> str:
        """CONNECT.auth_method_name."""
        return "none"

    def auth_data(self) -> bytes:
        """CONNECT.auth_data (also sent in AUTH_RESPONSE when the broker challenges)."""
        return b""

    def http_headers(self) -> dict[str, str]:
        """Headers a request to the web service (admin REST, HTTP lookup) carries."""
        return {}


class AuthenticationToken(Authentication):
    """Token authentication, as Pulsar's AuthenticationToken (auth method "token").

    Arguments:
        token (str | Callable[[], str]): the token, or a zero-argument function returning it,
            called on every CONNECT and auth challenge. No default.
    """

    def __init__(self, token: str | Callable[[], str]):
        self._token = token

    def auth_method_name(self) -> str:
        """Always "token"."""
        return "token"

    def auth_data(self) -> bytes:
        """The token as UTF-8 bytes (calling the supplier if one was given)."""
        token = self._token() if callable(self._token) else self._token
        return token.encode("utf-8")

    def http_headers(self) -> dict[str, str]:
        """`Authorization: Bearer <token>`, as Pulsar's AuthenticationDataToken sends it."""
        return {"Authorization": "Bearer " + self.auth_data().decode("utf-8")}


class AuthenticationTLS(Authentication):
    """Mutual TLS authentication, as Pulsar's AuthenticationTls (auth method "tls").

    Arguments:
        certificate_path (str): the client certificate (PEM) the TLS handshake presents.
        private_key_path (str): its private key (PEM).
    The broker takes the role from the certificate's CN; CONNECT itself carries no data.
    """

    def __init__(self, certificate_path: str, private_key_path: str):
        self.certificate_path = certificate_path
        self.private_key_path = private_key_path

    def auth_method_name(self) -> str:
        """Always "tls"."""
        return "tls"


class AuthenticationBasic(Authentication):
    """Basic authentication, as Pulsar's AuthenticationBasic (auth method "basic").

    Arguments:
        user_id (str): the user name in the broker's htpasswd data. No default.
        password (str): its password. No default.
        method (str): the auth method name sent (default "basic", the broker's provider's name;
            the official client's `method` argument).
    """

    def __init__(self, user_id: str, password: str, method: str = "basic"):
        self.user_id = user_id
        self._password = password
        self.method = method

    def auth_method_name(self) -> str:
        return self.method

    def auth_data(self) -> bytes:
        """`user:password` as UTF-8 bytes."""
        return f"{self.user_id}:{self._password}".encode("utf-8")

    def http_headers(self) -> dict[str, str]:
        """`Authorization: Basic base64(user:password)`."""
        return {"Authorization": "Basic " + base64.b64encode(self.auth_data()).decode("ascii")}


def token_file_supplier(url: str) -> Callable[[], str]:
    """A supplier reading the token from a file: URL on every call, as Pulsar re-reads it."""
    path = Path(unquote(urlparse(url).path))
    return lambda: path.read_text().strip()


def token_from_params(params: str) -> AuthenticationToken:
    """AuthenticationToken from Pulsar's parameter string (see the module docstring)."""
    params = params.strip()
    if params.startswith("token:"):
        return AuthenticationToken(params[len("token:"):])
    if params.startswith("file:"):
        return AuthenticationToken(token_file_supplier(params))
    if params.startswith("{"):
        try:
            return AuthenticationToken(str(json.loads(params)["token"]))
        except (ValueError, KeyError, TypeError):
            raise ValueError("token auth params as JSON must be {\"token\": \"...\"}") from None
    return AuthenticationToken(params)


def tls_from_params(params: str) -> AuthenticationTLS:
    """AuthenticationTLS from 'tlsCertFile:/path,tlsKeyFile:/path' or the same keys as JSON."""
    params = params.strip()
    if params.startswith("{"):
        values = json.loads(params)
    else:
        values = dict(item.split(":", 1) for item in params.split(",") if ":" in item)
    try:
        return AuthenticationTLS(values["tlsCertFile"].strip(), values["tlsKeyFile"].strip())
    except KeyError:
        raise ValueError("TLS auth params need tlsCertFile and tlsKeyFile") from None


def basic_from_params(params: str) -> AuthenticationBasic:
    """AuthenticationBasic from {"userId": ..., "password": ...[, "method": ...]} or
    'userId:<user>,password:<password>'."""
    params = params.strip()
    try:
        values = json.loads(params) if params.startswith("{") else dict(
            item.split(":", 1) for item in params.split(",") if ":" in item)
        return AuthenticationBasic(str(values["userId"]), str(values["password"]), str(values.get("method", "basic")))
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ValueError("basic auth params must be {\"userId\": \"...\", \"password\": \"...\"}") from None


_PLUGINS = {TOKEN_PLUGIN: token_from_params, "token": token_from_params,
            TLS_PLUGIN: tls_from_params, "tls": tls_from_params,
            BASIC_PLUGIN: basic_from_params, "basic": basic_from_params}


def create_authentication(plugin: str, params: str = "") -> Authentication:
    """The plugin named by its Pulsar class name (or short name) configured from params; raises
    ValueError for an unknown plugin or parameters it cannot use."""
    factory = _PLUGINS.get(plugin.strip())
    if factory is None:
        raise ValueError(f"unknown authentication plugin {plugin!r} (one of {TOKEN_PLUGIN}, {TLS_PLUGIN}, "
                         f"{BASIC_PLUGIN})")
    return factory(params)
