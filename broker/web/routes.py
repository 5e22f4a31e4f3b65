"""The route table: every path the web service serves, with what the OpenAPI document says of it.

A route names its method, aiohttp path pattern, handler, a one-line summary, its query parameters
and the JSON schemas of its request and response bodies. `register` hands the routes to aiohttp;
`openapi` builds the OpenAPI 3.0 document from the same table, so the document cannot drift from
what is served.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from aiohttp import web

from minipulsar.broker.config import DYNAMIC_KEYS

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_PATH_PARAM = re.compile(r"\{(\w+)(?::[^}]*)?\}")

ERROR_SCHEMA = {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}
_INTEGER = {"type": "integer"}
# Path parameters whose values are narrower than any string, by name, wherever they appear.
PATH_PARAM_SCHEMAS = {
    "domain": {"type": "string", "enum": ["persistent", "non-persistent"]},
    "ledgerId": _INTEGER, "entryId": _INTEGER, "timestamp": _INTEGER, "numMessages": _INTEGER,
    "expireTimeInSeconds": _INTEGER,
    "configName": {"type": "string", "enum": list(DYNAMIC_KEYS)},
}
STRING_LIST = {"type": "array", "items": {"type": "string"}}
OBJECT = {"type": "object"}


@dataclass(frozen=True)
class Query:
    """A query parameter: name, JSON schema type ("string", "integer", "boolean"), description."""

    name: str
    type: str = "string"
    description: str = ""


@dataclass(frozen=True)
class Route:
    """One served path. status: the success status (204 answers no body); body/response: JSON
    schemas of the request and success bodies (None: none); form: the schema of a
    multipart/form-data request body instead (its properties are the form fields); text: the
    response is plain text."""

    method: str
    path: str
    handler: Handler
    summary: str
    tag: str
    query: tuple[Query, ...] = ()
    body: dict | None = None
    response: dict | None = None
    status: int = 200
    text: bool = False
    form: dict | None = None


@dataclass
class RouteTable:
    routes: list[Route] = field(default_factory=list)

    def add(self, method: str, path: str, handler: Handler, summary: str, tag: str, **details: Any) -> None:
        self.routes.append(Route(method, path, handler, summary, tag, **details))

    def register(self, app: web.Application) -> None:
        for route in self.routes:
            app.router.add_route(route.method, route.path, route.handler)

    def openapi(self, title: str, version: str) -> dict:
        """The OpenAPI 3.0 document of every route."""
        paths: dict[str, dict] = {}
        for route in self.routes:
            paths.setdefault(_openapi_path(route.path), {})[route.method.lower()] = _operation(route)
        return {"openapi": "3.0.3", "info": {"title": title, "version": version}, "paths": paths}


def _openapi_path(path: str) -> str:
    return _PATH_PARAM.sub(lambda m: "{" + m.group(1) + "}", path)


def _operation(route: Route) -> dict:
    parameters = [{"name": name, "in": "path", "required": True,
                   "schema": PATH_PARAM_SCHEMAS.get(name, {"type": "string", "minLength": 1})}
                  for name in _PATH_PARAM.findall(route.path)]
    parameters += [{"name": q.name, "in": "query", "required": False, "schema": {"type": q.type},
                    "description": q.description} for q in route.query]
    operation: dict[str, Any] = {
        "summary": route.summary,
        "tags": [route.tag],
        "operationId": f"{route.method.lower()}_{re.sub(r'[^A-Za-z0-9]+', '_', _openapi_path(route.path)).strip('_')}",
        "parameters": parameters,
        "responses": {"default": {"description": "an error",
                                  "content": {"application/json": {"schema": ERROR_SCHEMA}}}},
    }
    if route.body is not None:
        operation["requestBody"] = {"required": False, "content": {"application/json": {"schema": route.body}}}
    if route.form is not None:
        operation["requestBody"] = {"required": False, "content": {"multipart/form-data": {"schema": route.form}}}
    success: dict[str, Any] = {"description": route.summary}
    if route.response is not None:
        media = "text/plain" if route.text else "application/json"
        success["content"] = {media: {"schema": route.response}}
    operation["responses"][str(route.status)] = success
    return operation
