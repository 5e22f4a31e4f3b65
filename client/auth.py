"""Authentication plugins: what CONNECT carries as auth_method_name and auth_data.

AuthenticationToken(token) sends method "token" and the token bytes, as Pulsar's token plugin.
token may be a string or a zero-argument callable returning one (re-read on every connect).
"""
from __future__ import annotations

from typing import Callable


class Authentication:
    """Base: no credentials."""

    def auth_method_name(self) -> str:
        return "none"

    def auth_data(self) -> bytes:
        return b""


class AuthenticationToken(Authentication):
    def __init__(self, token: str | Callable[[], str]):
        self._token = token

    def auth_method_name(self) -> str:
        return "token"

    def auth_data(self) -> bytes:
        token = self._token() if callable(self._token) else self._token
        return token.encode("utf-8")
