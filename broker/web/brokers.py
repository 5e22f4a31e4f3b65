"""Broker paths: health and readiness checks, the runtime configuration and dynamic settings.

GET /admin/v2/brokers/health produces a message on a heartbeat topic and reads it back through
this broker's own binary port (with the bundled client), as Pulsar's health check does with its
internal client; it answers "ok" or 500 with the reason. Dynamic settings (config.DYNAMIC_KEYS)
change with POST /admin/v2/brokers/configuration/{configName}/{configValue} and are kept in the
metadata store, so they survive a restart, as Pulsar keeps them in ZooKeeper.
Source: Pulsar BrokersBase (healthCheck, getRuntimeConfiguration, updateDynamicConfiguration).
"""
from __future__ import annotations

import asyncio
import logging
import uuid

from aiohttp import web

from minipulsar.broker.config import DYNAMIC_KEYS, ConfigError, runtime_values
from minipulsar.broker.web.context import broker_of, no_content
from minipulsar.broker.web.errors import RestError, precondition_failed
from minipulsar.broker.web.routes import STRING_LIST, RouteTable
from minipulsar.client import Client, MessageId

log = logging.getLogger(__name__)

HEALTH_CHECK_TOPIC = "persistent://pulsar/system/healthcheck"
HEALTH_CHECK_TIMEOUT_SECONDS = 10.0
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
OK = {"type": "string"}


def add_routes(table: RouteTable) -> None:
    table.add("GET", "/admin/v2/brokers/health", health, "produce and consume on a heartbeat topic", "brokers",
              response=OK, text=True)
    table.add("GET", "/admin/v2/brokers/ready", ready, "the broker is started", "brokers", response=OK, text=True)
    table.add("GET", "/admin/v2/brokers/configuration", dynamic_names, "the settings that can change while running",
              "brokers", response=STRING_LIST)
    table.add("GET", "/admin/v2/brokers/configuration/values", dynamic_values,
              "the dynamic settings changed through this API", "brokers", response=STRING_MAP)
    table.add("GET", "/admin/v2/brokers/configuration/runtime", runtime, "every setting in force", "brokers",
              response=STRING_MAP)
    table.add("POST", "/admin/v2/brokers/configuration/{configName}/{configValue}", update_dynamic,
              "change a dynamic setting", "brokers", status=204)
    table.add("DELETE", "/admin/v2/brokers/configuration/{configName}", delete_dynamic,
              "forget a dynamic setting's change (back to broker.conf at the next start)", "brokers", status=204)


async def ready(request: web.Request) -> web.Response:
    if not broker_of(request).running:
        raise RestError(503, "broker is not running")
    return web.Response(text="ok")


async def health(request: web.Request) -> web.Response:
    broker = broker_of(request)
    payload = f"health-{uuid.uuid4().hex}".encode()
    try:
        async with asyncio.timeout(HEALTH_CHECK_TIMEOUT_SECONDS):
            # With the plain port off, service_url is pulsar+ssl://, checked against tlsTrustCertsFilePath.
            async with Client(broker.service_url, operation_timeout_seconds=HEALTH_CHECK_TIMEOUT_SECONDS,
                              authentication=broker.security.broker_client_authentication(),
                              tls_trust_certs_file_path=broker.config.tls_trust_certs_file_path or None) as client:
                reader = await client.create_reader(HEALTH_CHECK_TOPIC, MessageId.latest)
                await (await client.create_producer(HEALTH_CHECK_TOPIC)).send(payload)
                while (await reader.read_next()).data() != payload:
                    pass
    except Exception as exc:  # any failure is the answer: the broker is not healthy
        log.warning("health check failed: %s", exc)
        raise RestError(500, f"health check failed: {exc or type(exc).__name__}") from exc
    return web.Response(text="ok")


async def dynamic_names(request: web.Request) -> web.Response:
    return web.json_response(list(DYNAMIC_KEYS))


async def dynamic_values(request: web.Request) -> web.Response:
    return web.json_response(broker_of(request).metadata.data.get("dynamicConfiguration", {}))


async def runtime(request: web.Request) -> web.Response:
    return web.json_response(runtime_values(broker_of(request).config))


async def update_dynamic(request: web.Request) -> web.Response:
    broker = broker_of(request)
    key, value = request.match_info["configName"], request.match_info["configValue"]
    if key not in DYNAMIC_KEYS:
        raise precondition_failed(f"Broker configuration {key} is not dynamic; dynamic ones: {', '.join(DYNAMIC_KEYS)}")
    try:
        broker.update_config(key, value)
    except ConfigError as exc:
        raise precondition_failed(str(exc)) from exc
    broker.metadata.data.setdefault("dynamicConfiguration", {})[key] = value
    await broker.metadata.save()
    return no_content()


async def delete_dynamic(request: web.Request) -> web.Response:
    broker = broker_of(request)
    key = request.match_info["configName"]
    if key not in DYNAMIC_KEYS:
        raise precondition_failed(f"Broker configuration {key} is not dynamic")
    broker.metadata.data.get("dynamicConfiguration", {}).pop(key, None)
    await broker.metadata.save()
    return no_content()
