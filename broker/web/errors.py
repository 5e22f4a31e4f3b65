"""REST errors as Pulsar's web service answers them: a status code and {"reason": "..."}.

Status codes follow Pulsar's admin API: 400 bad input, 404 unknown, 409 exists (or a tenant or
namespace that is not empty), 412 a precondition (a topic with connected producers or consumers),
500 an internal error. Source: Pulsar RestException / ErrorData.
"""
from __future__ import annotations

import json
import logging

from aiohttp import web

from minipulsar.broker.errors import (BrokerError, ConflictError, ConsumerBusyError, IncompatibleSchemaError, InvalidTopicNameError,
                                      NotAllowedError, PartitionCountError, SubscriptionNotFoundError, TopicBusyError,
                                      TopicExistsError, TopicNotFoundError, TopicQuotaError)

log = logging.getLogger(__name__)

# A broker error raised by a domain call, as the REST status Pulsar answers for the same failure.
_STATUS_OF = {
    TopicNotFoundError: 404,
    SubscriptionNotFoundError: 404,
    InvalidTopicNameError: 412,
    ConsumerBusyError: 412,
    NotAllowedError: 405,
    IncompatibleSchemaError: 409,
    TopicExistsError: 409,
    TopicBusyError: 412,
    TopicQuotaError: 412,
    PartitionCountError: 409,
    ConflictError: 409,
}


class RestError(Exception):
    """status: the HTTP status; reason: the text of {"reason": ...}."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def bad_request(reason: str) -> RestError:
    return RestError(400, reason)


def not_found(reason: str) -> RestError:
    return RestError(404, reason)


def conflict(reason: str) -> RestError:
    return RestError(409, reason)


def precondition_failed(reason: str) -> RestError:
    return RestError(412, reason)


def error_response(status: int, reason: str) -> web.Response:
    return web.json_response({"reason": reason}, status=status)


@web.middleware
async def error_middleware(request: web.Request, handler) -> web.StreamResponse:
    """Every failure leaves as {"reason": ...}: RestError with its status, a BrokerError with the
    status Pulsar gives it, aiohttp's own 404/405 with theirs, anything else as 500 (logged)."""
    try:
        return await handler(request)
    except RestError as exc:
        return error_response(exc.status, exc.reason)
    except BrokerError as exc:
        return error_response(_STATUS_OF.get(type(exc), 500), str(exc))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_response(exc.status, exc.reason)
    except json.JSONDecodeError as exc:
        return error_response(400, f"request body is not valid JSON: {exc}")
    except Exception as exc:  # a bug must answer this request only, never stop the web service
        log.exception("%s %s failed", request.method, request.path)
        return error_response(500, f"internal error: {exc}")
