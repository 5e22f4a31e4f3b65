"""Token authentication: a JSON Web Token names the client's role, as Pulsar's
org.apache.pulsar.broker.authentication.AuthenticationProviderToken.

Settings (Pulsar's keys): tokenSecretKey (HMAC: HS256/384/512) or tokenPublicKey (RSA: RS*/PS*,
EC: ES*), each a key URL (broker/security/keys.py); tokenPublicAlg names the public key's algorithm
(empty: RS256, as Pulsar) and must match the key; tokenAuthClaim is the claim holding the role
(default "sub"; a list claim gives its first string, as Pulsar); tokenAudienceClaim with
tokenAudience: the token must name this broker in that claim (a string or a list). A token is
checked with PyJWT: its signature, and `exp` / `nbf` when present (no leeway). The binary protocol
carries the token as CONNECT.auth_data (method "token"); the web service reads
`Authorization: Bearer <token>`, as Pulsar.
"""
from __future__ import annotations

import logging
from typing import Mapping

import jwt
from minipulsar.broker.config import BrokerConfig, ConfigError
from minipulsar.broker.security import keys
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.state import AuthState

log = logging.getLogger(__name__)

CLASS_NAME = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
BEARER = "Bearer "


class AuthenticationProviderToken:
    """key: the HMAC secret (bytes) or a public key; role_claim, audience_claim, audience as the
    settings above (audience_claim "" = no audience check)."""

    method = "token"

    def __init__(self, key, role_claim: str = "sub", audience_claim: str = "", audience: str = ""):
        self._key = key
        self._algorithms = list(keys.verification_algorithms(key))
        self._role_claim = role_claim or "sub"
        self._audience_claim = audience_claim
        self._audience = audience

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "AuthenticationProviderToken":
        """The provider the token settings describe; raises ConfigError naming the key at fault."""
        if config.token_secret_key and config.token_public_key:
            raise ConfigError("config key tokenPublicKey: set only one of tokenSecretKey and tokenPublicKey")
        if config.token_audience_claim and not config.token_audience:
            raise ConfigError(f"config key tokenAudience: tokenAudienceClaim={config.token_audience_claim} "
                              "needs the audience that stands for this broker")
        if config.token_secret_key:
            key = _load("tokenSecretKey", keys.secret_key, config.token_secret_key)
        elif config.token_public_key:
            key = _load("tokenPublicKey", keys.public_key, config.token_public_key)
            _check_public_alg(config.token_public_alg or "RS256", key)
        else:
            raise ConfigError(f"config key tokenSecretKey: {CLASS_NAME} needs tokenSecretKey or tokenPublicKey "
                              "(no key was provided for token authentication)")
        return cls(key, config.token_auth_claim, config.token_audience_claim, config.token_audience)

    # ---- credentials -----------------------------------------------------------------------
    def authenticate_data(self, data: bytes, peer_certificate: bytes | None = None) -> AuthState:
        """The role of a binary CONNECT / AUTH_RESPONSE carrying a token; raises
        AuthenticationFailedError."""
        return self.authenticate_token(data.decode("utf-8", errors="replace"))

    def authenticate_http(self, headers: Mapping[str, str], peer_certificate: bytes | None) -> AuthState | None:
        """The role of `Authorization: Bearer <token>`; None when the request has no such header."""
        value = headers.get("Authorization")
        if value is None or not value.startswith(BEARER):
            return None
        return self.authenticate_token(value[len(BEARER):])

    def authenticate_token(self, token: str) -> AuthState:
        """Verify token (signature, exp, nbf, audience) and read its role; raises
        AuthenticationFailedError with a reason that never includes the token."""
        token = token.strip()
        if not token:
            raise AuthenticationFailedError("Blank token found")
        try:
            claims = jwt.decode(token, self._key, algorithms=self._algorithms,
                                options={"verify_aud": False, "verify_iat": False})
        except jwt.PyJWTError as exc:
            raise AuthenticationFailedError(f"Failed to authentication token: {exc}") from None
        self._check_audience(claims)
        return AuthState(_role(claims, self._role_claim), self.method, _expiry(claims))

    def _check_audience(self, claims: dict) -> None:
        if not self._audience_claim:
            return
        value = claims.get(self._audience_claim)
        audiences = value if isinstance(value, list) else [value] if isinstance(value, str) else None
        if audiences is None:
            raise AuthenticationFailedError(f"Found no usable audience in token claim {self._audience_claim}")
        if self._audience not in audiences:
            raise AuthenticationFailedError(f"Audiences in token do not contain this broker: {self._audience}")


def _load(key_name: str, loader, value: str):
    try:
        return loader(value)
    except keys.KeyMaterialError as exc:
        raise ConfigError(f"config key {key_name}: {exc}") from None


def _check_public_alg(algorithm: str, key) -> None:
    try:
        family = keys.algorithm_family(algorithm)
    except keys.KeyMaterialError as exc:
        raise ConfigError(f"config key tokenPublicAlg: {exc}") from None
    if family != keys.key_family(key):
        raise ConfigError(f"config key tokenPublicAlg: {algorithm} does not match the {keys.key_family(key)} "
                          "key in tokenPublicKey")


def _role(claims: dict, claim: str) -> str:
    """The role claim: a string, or the first string of a list (Pulsar's getPrincipal)."""
    value = claims.get(claim)
    if isinstance(value, list):
        value = next((item for item in value if isinstance(item, str)), None)
    if not isinstance(value, str) or not value:
        raise AuthenticationFailedError(f"token has no role in claim {claim!r}")
    return value


def _expiry(claims: dict) -> float | None:
    exp = claims.get("exp")
    return float(exp) if isinstance(exp, (int, float)) else None
