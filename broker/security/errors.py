"""Security failures a client sees, with the ServerError value Pulsar answers them with."""
from __future__ import annotations

from minipulsar.broker.errors import BrokerError
from minipulsar.proto import PulsarApi_pb2 as api


class AuthenticationFailedError(BrokerError):
    """Credentials missing, malformed, expired or not signed by a trusted key. The message is for
    the broker's log only: it never carries the credentials themselves, and clients are told no
    more than Pulsar tells them ("Failed to authenticate")."""

    server_error = api.AuthenticationError


class NotAuthorizedError(BrokerError):
    """An authenticated role lacks the permission an operation needs (Pulsar's wording, e.g.
    "Client is not authorized to Produce")."""

    server_error = api.AuthorizationError
