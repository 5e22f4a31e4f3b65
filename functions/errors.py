"""The functions room's errors: what the function worker refuses and why, in Pulsar's words.

Each error names the HTTP status Pulsar's FunctionsImpl / ComponentImpl answers for the same
failure (`status`), so the web layer that serves /admin/v3/functions maps them without knowing the
worker's internals. Source: Pulsar ComponentImpl, FunctionsImpl, RestUtils.
"""
from __future__ import annotations


class FunctionsError(Exception):
    """A request to the function worker failed; status: Pulsar's HTTP status for it."""

    status = 500


class InvalidFunctionError(FunctionsError):
    """A FunctionConfig, package or argument Pulsar's validation refuses (400)."""

    status = 400


class FunctionExistsError(FunctionsError):
    """Create of a name already taken: Pulsar answers 400 "Function <name> already exists"."""

    status = 400


class FunctionNotFoundError(FunctionsError):
    """No function of that name: 404 "Function <name> doesn't exist" (400 on update, as Pulsar)."""

    status = 404


class StateKeyNotFoundError(FunctionsError):
    """GET of a state key that was never written: 404 "key '<key>' doesn't exist."."""

    status = 404


class TriggerTimeoutError(FunctionsError):
    """No output for a triggered input in time: 408 "Request Timed Out"."""

    status = 408


class WorkerUnavailableError(FunctionsError):
    """The worker is starting or stopping: 503, Pulsar's "Function worker service is not done
    initializing. Please try again in a little while."."""

    status = 503


class UserCodeError(Exception):
    """Inside an instance process: the function's package, class or serde cannot be loaded.
    Not a request error: the instance reports it and its status shows it."""
