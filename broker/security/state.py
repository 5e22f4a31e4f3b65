"""AuthState: what authenticating one set of credentials established, as Pulsar's
AuthenticationState (role, method, and when the credentials stop being valid)."""
from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class AuthState:
    """role: the authenticated principal; method: the auth method name ("token", "tls");
    expires_at: when the credentials expire, in seconds since the epoch (None: never)."""

    role: str
    method: str
    expires_at: float | None = None

    def is_expired(self, now: float | None = None) -> bool:
        """True once the credentials' expiry has passed (Pulsar's AuthenticationState.isExpired)."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at
