"""Pulsar Functions' admin REST API, /admin/v3/functions (Pulsar's FunctionsApiV3Resource), over
the broker's function worker (minipulsar.functions.worker).

Bodies are Pulsar's: create and update take multipart/form-data with `functionConfig` (the
FunctionConfig JSON) and the package as a `data` file part or a `url` field (file:, http:,
https:); trigger takes `data` (the value), or `dataStream` (a file), and `topic`; a state POST
takes `state` (the FunctionState JSON). The package part is streamed to the worker's staging
folder as it arrives (it comes before functionConfig in pulsar-admin's requests) and dropped when
the request fails. Changes answer 204, reads JSON; errors are {"reason": ...} with Pulsar's
status (the worker's errors carry it). Tenant and namespace must exist (400 "Tenant does not
exist" / "Namespace does not exist", as Pulsar checks them). With functionsWorkerEnabled=false
every path answers 409, Pulsar's "Pulsar Function Worker is not enabled, probably
functionsWorkerEnabled is set to false". Who may call them is decided in broker/security/web.py
(tenant admins, and roles granted `functions` on the namespace).

The handlers reach the broker only through the FunctionsAccess the web service puts in the
application (the worker, and whether a tenant or namespace exists), not through the Broker, so this
module stays out of the Broker's import cycle with the web service (tools/import_cycles.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import AsyncIterator, Callable

from aiohttp import BodyPartReader, web

from minipulsar.broker.web.errors import RestError, bad_request
from minipulsar.broker.web.routes import OBJECT, STRING_LIST, RouteTable
from minipulsar.functions import config as function_config
from minipulsar.functions.errors import FunctionsError
from minipulsar.functions.packages import StagedPackage
from minipulsar.functions.worker import FunctionWorker

BASE = "/admin/v3/functions/{tenant}/{namespace}"
FUNCTION = BASE + "/{functionName}"
INSTANCE = FUNCTION + "/{instanceId}"
TAG = "functions"
NOT_ENABLED = "Pulsar Function Worker is not enabled, probably functionsWorkerEnabled is set to false"
MAX_FIELD_BYTES = 10 << 20  # a text form field (functionConfig, state, trigger data) larger than this is refused
_TEXT = {"type": "string"}
_BINARY = {"type": "string", "format": "binary"}
FUNCTION_FORM = {"type": "object", "properties": {"functionConfig": _TEXT, "data": _BINARY, "url": _TEXT,
                                                  "updateOptions": _TEXT}}
TRIGGER_FORM = {"type": "object", "properties": {"data": _TEXT, "dataStream": _BINARY, "topic": _TEXT}}
STATE_FORM = {"type": "object", "properties": {"state": _TEXT}}
STATE = {"type": "object", "properties": {"key": _TEXT, "stringValue": {"type": "string", "nullable": True},
                                          "byteValue": {"type": "string", "nullable": True},
                                          "numberValue": {"type": "integer", "nullable": True},
                                          "version": {"type": "integer"}}}


@dataclass(frozen=True)
class FunctionsAccess:
    """What the routes need of the broker: worker() its function worker (None when it is off),
    tenant_exists(tenant) and namespace_exists("tenant/namespace")."""

    worker: Callable[[], FunctionWorker | None]
    tenant_exists: Callable[[str], bool]
    namespace_exists: Callable[[str], bool]


ACCESS: web.AppKey[FunctionsAccess] = web.AppKey("functions")


def no_content() -> web.Response:
    return web.Response(status=204)


def add_routes(table: RouteTable) -> None:
    table.add("GET", BASE, list_functions, "the functions of a namespace", TAG, response=STRING_LIST)
    table.add("POST", FUNCTION, create, "create a function (multipart: functionConfig, data or url)", TAG,
              form=FUNCTION_FORM, status=204)
    table.add("PUT", FUNCTION, update, "update a function (multipart: functionConfig, data or url)", TAG,
              form=FUNCTION_FORM, status=204)
    table.add("DELETE", FUNCTION, delete, "delete a function", TAG, status=204)
    table.add("GET", FUNCTION, get, "a function's FunctionConfig", TAG, response=OBJECT)
    table.add("GET", FUNCTION + "/state/{key}", get_state, "a state key's FunctionState", TAG, response=STATE)
    table.add("POST", FUNCTION + "/state/{key}", put_state, "put a state key (multipart: state)", TAG,
              form=STATE_FORM, status=204)
    table.add("GET", FUNCTION + "/status", status, "FunctionStatus", TAG, response=OBJECT)
    table.add("GET", FUNCTION + "/stats", stats, "FunctionStats", TAG, response=OBJECT)
    table.add("POST", FUNCTION + "/trigger", trigger, "publish a value to an input and answer its output", TAG,
              form=TRIGGER_FORM, response={"type": "string"}, text=True)
    for action in ("start", "stop", "restart"):
        table.add("POST", f"{FUNCTION}/{action}", _instances(action, False), f"{action} every instance", TAG,
                  status=204)
    table.add("GET", INSTANCE + "/status", status, "an instance's FunctionInstanceStatusData", TAG, response=OBJECT)
    table.add("GET", INSTANCE + "/stats", stats, "an instance's FunctionInstanceStatsData", TAG, response=OBJECT)
    for action in ("start", "stop", "restart"):
        table.add("POST", f"{INSTANCE}/{action}", _instances(action, True), f"{action} one instance", TAG,
                  status=204)


# ---- what every handler reads ----------------------------------------------------------------
def worker_of(request: web.Request) -> FunctionWorker:
    """The broker's worker; 409 when it is off; its tenant and namespace must exist (400)."""
    access = request.app[ACCESS]
    worker = access.worker()
    if worker is None:
        raise RestError(409, NOT_ENABLED)
    info = request.match_info
    if not access.tenant_exists(info["tenant"]):
        raise bad_request("Tenant does not exist")
    if not access.namespace_exists(f"{info['tenant']}/{info['namespace']}"):
        raise bad_request("Namespace does not exist")
    return worker


def _names(request: web.Request) -> tuple[str, str, str]:
    info = request.match_info
    return info["tenant"], info["namespace"], info["functionName"]


def _instance_id(request: web.Request) -> int:
    try:
        return int(request.match_info["instanceId"])
    except ValueError:
        raise bad_request("Invalid Instance Id") from None


async def _call(coroutine):
    """Await a worker call; its FunctionsError becomes the RestError of Pulsar's status."""
    try:
        return await coroutine
    except FunctionsError as exc:
        raise RestError(exc.status, str(exc)) from None


def _sync(function, *args):
    try:
        return function(*args)
    except FunctionsError as exc:
        raise RestError(exc.status, str(exc)) from None


# ---- multipart forms -------------------------------------------------------------------------
async def _parts(request: web.Request) -> AsyncIterator[BodyPartReader]:
    """The parts of a multipart/form-data body; 415 for any other body, 400 for a broken one."""
    if not request.content_type.startswith("multipart/"):
        raise RestError(415, "Unsupported Media Type: the body must be multipart/form-data")
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if isinstance(part, BodyPartReader):
                yield part
    except (ValueError, AssertionError) as exc:  # aiohttp's multipart parser reports malformed bodies so
        raise bad_request(f"malformed multipart body: {exc}") from None


async def _read(part: BodyPartReader) -> bytes:
    data = bytearray()
    while chunk := await part.read_chunk():
        data += chunk
        if len(data) > MAX_FIELD_BYTES:
            raise RestError(413, f"form field {part.name} is larger than {MAX_FIELD_BYTES} bytes")
    return bytes(data)


async def _text(part: BodyPartReader) -> str:
    return (await _read(part)).decode("utf-8", errors="replace")


async def _chunks(part: BodyPartReader) -> AsyncIterator[bytes]:
    while chunk := await part.read_chunk():
        yield chunk


async def _function_form(request: web.Request, worker: FunctionWorker) -> tuple[dict, StagedPackage | None]:
    """(the functionConfig dict, the staged package or None); the caller discards the package."""
    config_text, url, package = None, None, None
    try:
        async for part in _parts(request):
            if part.name == "data" and package is None:
                package = await _call(worker.stage_upload(_chunks(part), part.filename))
            elif part.name == "functionConfig":
                config_text = await _text(part)
            elif part.name == "url":
                url = (await _text(part)).strip()
        raw = _sync(function_config.parse, config_text)
        if package is None and url:
            package = await _call(worker.stage_url(url))
    except BaseException:
        await worker.discard(package)
        raise
    return raw, package


# ---- handlers --------------------------------------------------------------------------------
async def list_functions(request: web.Request) -> web.Response:
    info = request.match_info
    return web.json_response(_sync(worker_of(request).list, info["tenant"], info["namespace"]))


async def create(request: web.Request) -> web.Response:
    return await _register(request, "create")


async def update(request: web.Request) -> web.Response:
    return await _register(request, "update")


async def _register(request: web.Request, verb: str) -> web.Response:
    worker = worker_of(request)
    raw, package = await _function_form(request, worker)
    try:
        await _call(getattr(worker, verb)(*_names(request), raw, package))
    finally:
        await worker.discard(package)
    return no_content()


async def delete(request: web.Request) -> web.Response:
    await _call(worker_of(request).delete(*_names(request)))
    return no_content()


async def get(request: web.Request) -> web.Response:
    return web.json_response(_sync(worker_of(request).get, *_names(request)))


async def status(request: web.Request) -> web.Response:
    instance = _instance_id(request) if "instanceId" in request.match_info else None
    return web.json_response(_sync(worker_of(request).status, *_names(request), instance))


async def stats(request: web.Request) -> web.Response:
    instance = _instance_id(request) if "instanceId" in request.match_info else None
    return web.json_response(_sync(worker_of(request).stats, *_names(request), instance))


def _instances(action: str, one: bool):
    async def handler(request: web.Request) -> web.Response:
        worker = worker_of(request)
        instance = _instance_id(request) if one else None
        await _call(getattr(worker, f"{action}_instances")(*_names(request), instance))
        return no_content()

    handler.__name__ = f"{action}_{'instance' if one else 'function'}"
    return handler


async def trigger(request: web.Request) -> web.Response:
    worker = worker_of(request)
    data, topic = None, None
    async for part in _parts(request):
        if part.name in ("data", "dataStream"):
            data = await _read(part)
        elif part.name == "topic":
            topic = (await _text(part)).strip() or None
    if data is None:
        raise bad_request("Trigger Data is not provided")
    result = await _call(worker.trigger(*_names(request), data, topic))
    return no_content() if result is None else web.Response(text=result)


async def get_state(request: web.Request) -> web.Response:
    key = request.match_info["key"]
    return web.json_response(await _call(worker_of(request).get_state(*_names(request), key)))


async def put_state(request: web.Request) -> web.Response:
    worker = worker_of(request)
    key = request.match_info["key"]
    state = None
    async for part in _parts(request):
        if part.name == "state":
            state = await _text(part)
    if state is None:
        raise bad_request("State is not provided (form field `state`)")
    try:
        parsed = json.loads(state)
    except ValueError as exc:
        raise bad_request(f"state is not valid JSON: {exc}") from None
    await _call(worker.put_state(*_names(request), key, parsed))
    return no_content()
