"""Authentication plugins: what CONNECT carries as auth_method_name and auth_data.

AuthenticationToken(token) sends method "token" and the token bytes, as Pulsar's token plugin.
token may be a string or a zero-argument callable returning one (re-read on every connect).
"""
from __future__ import annotations

from typing import Callable


class Authentication:
    """Base class of authentication plugins: no credentials (auth method "none")."""

    def auth_method_name(self) -> str:
        """CONNECT.auth_method_name."""
        return "none"

    def auth_data(self) -> bytes:
        """CONNECT.auth_data (also sent in AUTH_RESPONSE when the broker challenges)."""
        return b""


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
