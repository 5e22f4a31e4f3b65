"""HTTP lookup, as Pulsar's web service answers it to clients whose service URL is http://.

The C++ client (and so the Python one) asks GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}
and reads `brokerUrl` and `brokerUrlTls` (both must be present); its partition metadata comes from
GET /admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitions?checkAllowAutoCreation=true, and regex
subscriptions list GET /admin/v2/namespaces/{tenant}/{namespace}/topics?mode=. One broker owns every
topic, so lookup always names this broker. Source: Pulsar TopicLookupBase / LookupData,
the C++ client's HTTPLookupService.
"""
from __future__ import annotations

from aiohttp import web

from minipulsar.broker.errors import ServiceNotReadyError
from minipulsar.broker.web.context import broker_of, query_bool
from minipulsar.broker.web.errors import not_found
from minipulsar.broker.web.routes import STRING_LIST, Query, RouteTable
from minipulsar.broker.web.topic_path import TOPIC_PATH, namespace_name, topic_name

LOOKUP_DATA = {"type": "object", "properties": {name: {"type": "string"} for name in (
    "brokerUrl", "brokerUrlTls", "httpUrl", "httpUrlTls", "nativeUrl")}, "required": ["brokerUrl", "brokerUrlTls"]}
PARTITIONS = {"type": "object", "properties": {"partitions": {"type": "integer"}}, "required": ["partitions"]}


def add_routes(table: RouteTable) -> None:
    table.add("GET", "/lookup/v2/topic" + TOPIC_PATH, lookup_topic, "the broker serving a topic", "lookup",
              query=(Query("listenerName", description="an advertised listener's name"),), response=LOOKUP_DATA)
    table.add("GET", "/admin/v2" + TOPIC_PATH + "/partitions", partitions,
              "a topic's partition count (0: not partitioned)", "topics",
              query=(Query("checkAllowAutoCreation", "boolean",
                           "create partitioned metadata as allowAutoTopicCreationType says"),),
              response=PARTITIONS)
    table.add("GET", "/admin/v2/namespaces/{tenant}/{namespace}/topics", namespace_topics,
              "the topics of a namespace (partitions by their own names)", "namespaces",
              query=(Query("mode", description="PERSISTENT, NON_PERSISTENT or ALL"),), response=STRING_LIST)


async def lookup_topic(request: web.Request) -> web.Response:
    broker = broker_of(request)
    topic_name(request)  # validates the name
    config = broker.config
    try:
        listener = broker.listeners.lookup(request.query.get("listenerName", ""), config.broker_service_url)
    except ServiceNotReadyError as exc:  # an unknown listener name: nothing to look up
        raise not_found(str(exc)) from exc
    http_url = broker.web_service_url
    return web.json_response({
        "brokerUrl": listener.service_url or "",
        "brokerUrlTls": listener.service_url_tls or "",
        "httpUrl": http_url,
        "httpUrlTls": "",
        "nativeUrl": listener.service_url or "",
    })


async def partitions(request: web.Request) -> web.Response:
    broker = broker_of(request)
    name = topic_name(request)
    if query_bool(request, "checkAllowAutoCreation"):
        count = await broker.partitions_of(name)
    else:
        broker.namespaces.check(name)
        count = broker.partition_count(name)
    return web.json_response({"partitions": count})


async def namespace_topics(request: web.Request) -> web.Response:
    broker = broker_of(request)
    namespace = namespace_name(request)
    broker.namespaces.check_namespace(namespace)
    mode = request.query.get("mode", "PERSISTENT").upper()
    return web.json_response([] if mode == "NON_PERSISTENT" else broker.list_topics(namespace))
