"""Basic authentication: a user name and password checked against an htpasswd file, as Pulsar's
org.apache.pulsar.broker.authentication.AuthenticationProviderBasic.

Settings (Pulsar's): `basicAuthConf` (broker.conf), else the JVM system property
`pulsar.auth.basic.conf` (broker/system_properties.py: `-Dpulsar.auth.basic.conf=...` in
PULSAR_EXTRA_OPTS, as Pulsar's scripts hand it to the JVM). Either names the htpasswd data the way
Pulsar's readData does: a `file:` or `data:` URL, a path to an existing file, or base64 text.
Each line is `user:hash`, the hash in one of the two formats Pulsar checks: Apache's `$apr1$` MD5
and traditional DES crypt (13 characters; Pulsar's Crypt.crypt with the hash's first two
characters as salt). The hashes are checked with libpass (the maintained fork of passlib).

The binary protocol carries `user:password` as CONNECT.auth_data under auth method "basic"; the
web service reads `Authorization: Basic base64(user:password)`. An unknown user and a wrong
password get the same refusal ("Unknown user or invalid password"), as in Pulsar.

Where minipulsar is stricter than Pulsar: an entry whose hash is in neither format (bcrypt
`$2y$`, `{SHA}`, plain text) stops start-up naming basicAuthConf, where Pulsar starts and then
refuses that user forever.
"""
from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Mapping

from passlib.hash import apr_md5_crypt, des_crypt

from minipulsar.broker.config import BrokerConfig, ConfigError
from minipulsar.broker.security import keys
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.state import AuthState
from minipulsar.broker.system_properties import system_property

CLASS_NAME = "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic"
SYSTEM_PROPERTY = "pulsar.auth.basic.conf"
BASIC = "basic "
REFUSAL = "Unknown user or invalid password"


def _hash_scheme(hashed: str):
    """The libpass handler of a stored hash, or None for a format Pulsar does not check."""
    if hashed.startswith("$apr1$") and apr_md5_crypt.identify(hashed):
        return apr_md5_crypt
    if des_crypt.identify(hashed):
        return des_crypt
    return None


def read_users(text: str, source: str = "basicAuthConf") -> dict[str, str]:
    """{user: hash} from htpasswd lines; raises ConfigError naming source for a line that is not
    `user:hash` or a hash in a format Pulsar does not check. Blank lines are skipped."""
    users = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        parts = line.split(":")
        if len(parts) != 2 or not parts[0]:
            raise ConfigError(f"config key {source}: line {number} is not user:hash "
                              "(the format of the password auth conf file is invalid)")
        user, hashed = parts
        if _hash_scheme(hashed) is None:
            raise ConfigError(f"config key {source}: user {user!r} has a hash in a format Pulsar's "
                              "AuthenticationProviderBasic does not check (use $apr1$ MD5 or crypt: "
                              "htpasswd -m or -d)")
        users[user] = hashed
    return users


def read_conf_data(value: str) -> bytes:
    """The htpasswd bytes a setting names, as Pulsar's readData: file:/data: URL, an existing
    path, or base64. Raises keys.KeyMaterialError."""
    value = value.strip()
    if value.startswith(("file:", "data:")):
        return keys.read_key_url(value)
    path = Path(value)
    if path.is_file():
        try:
            return path.read_bytes()
        except OSError as exc:
            raise keys.KeyMaterialError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise keys.KeyMaterialError(f"{value!r} is not an existing file, a file:/data: URL or base64 "
                                    "(Pulsar: Not supported config)") from None


class AuthenticationProviderBasic:
    """users: {user name: stored hash} (read_users)."""

    method = "basic"

    def __init__(self, users: dict[str, str]):
        self._users = users

    @classmethod
    def from_config(cls, config: BrokerConfig, environ: Mapping[str, str] = os.environ) -> "AuthenticationProviderBasic":
        """The provider basicAuthConf (else -Dpulsar.auth.basic.conf) describes; raises
        ConfigError naming the key when neither is set or the data cannot be used."""
        source, value = "basicAuthConf", config.basic_auth_conf
        if not value:
            source, value = f"-D{SYSTEM_PROPERTY}", system_property(SYSTEM_PROPERTY, environ) or ""
        if not value:
            raise ConfigError(f"config key basicAuthConf: {CLASS_NAME} needs basicAuthConf or "
                              f"-D{SYSTEM_PROPERTY}=... in PULSAR_EXTRA_OPTS (no basic authentication "
                              "config provided)")
        try:
            data = read_conf_data(value)
        except keys.KeyMaterialError as exc:
            raise ConfigError(f"config key {source}: {exc}") from None
        return cls(read_users(data.decode("utf-8", errors="replace"), source))

    # ---- credentials -----------------------------------------------------------------------
    def authenticate_data(self, data: bytes, peer_certificate: bytes | None = None) -> AuthState:
        """The role of CONNECT / AUTH_RESPONSE data `user:password`; raises AuthenticationFailedError."""
        return self.authenticate_credentials(data.decode("utf-8", errors="replace"))

    def authenticate_http(self, headers: Mapping[str, str], peer_certificate: bytes | None) -> AuthState | None:
        """The role of `Authorization: Basic ...`; None when the request has no such header."""
        value = headers.get("Authorization")
        if value is None or not value[:len(BASIC)].lower() == BASIC:
            return None
        parts = value.split(" ")
        if len(parts) != 2:
            raise AuthenticationFailedError("Base64 encoded token is not found")
        try:
            decoded = base64.b64decode(parts[1], validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise AuthenticationFailedError("Base64 decoding is failure") from None
        return self.authenticate_credentials(decoded)

    def authenticate_credentials(self, credentials: str) -> AuthState:
        """`user:password` -> the user's AuthState; raises AuthenticationFailedError (the reason
        never carries the password)."""
        parts = credentials.split(":")
        if len(parts) != 2:
            raise AuthenticationFailedError("Base64 decoded params are invalid")
        user, password = parts
        hashed = self._users.get(user)
        if hashed is None or not _hash_scheme(hashed).verify(password, hashed):
            raise AuthenticationFailedError(REFUSAL)
        return AuthState(user, self.method)
