"""What every web handler reads from its request: the broker, path parameters as names, JSON bodies."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aiohttp import web

from minipulsar.broker.web.errors import bad_request

if TYPE_CHECKING:
    from minipulsar.broker.broker import Broker

BROKER: web.AppKey["Broker"] = web.AppKey("broker")


def broker_of(request: web.Request) -> "Broker":
    return request.app[BROKER]


async def json_body(request: web.Request, default: Any = None) -> Any:
    """The request's JSON body; default when it is empty; RestError 400 when it does not parse."""
    text = await request.text()
    if not text.strip():
        return default
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad_request(f"request body is not valid JSON: {exc}") from exc


def query_bool(request: web.Request, name: str, default: bool = False) -> bool:
    """A boolean query parameter as Pulsar's JAX-RS reads it ('true' in any case is true)."""
    value = request.query.get(name)
    return default if value is None else value.strip().lower() == "true"


def no_content() -> web.Response:
    return web.Response(status=204)
