"""Topics: /admin/v2/persistent/{tenant}/{namespace}[/{topic}/...].

List, create, delete (412 while clients are connected unless force=true), partition counts,
stats, internal stats (the managed ledger and its cursors as Pulsar names them), the last message
id, a message by position or by its place in the topic, and unload. JSON shapes and headers are
Pulsar's. Source: Pulsar PersistentTopicsBase, PersistentTopicInternalStats, TopicStats.
"""
from __future__ import annotations

import json

from aiohttp import web

from minipulsar.broker.topic_name import TopicName
from minipulsar.broker.stats_shapes import sum_topic_stats, without_nulls
from minipulsar.broker.web import internal_stats
from minipulsar.broker.web.context import broker_of, json_body, no_content, query_bool
from minipulsar.broker.web.errors import RestError, bad_request, not_found
from minipulsar.broker.web.formats import date_text, position_text
from minipulsar.broker.web.routes import OBJECT, STRING_LIST, Query, RouteTable
from minipulsar.broker.web.topic_path import DOMAIN, TOPIC_PATH, namespace_name, topic_name
from minipulsar.proto.entries import open_entry
from minipulsar.proto.errors import CodecUnavailableError, EntryError, FrameError
from minipulsar.storage import Position

BASE = "/admin/v2" + TOPIC_PATH
FORCE = Query("force", "boolean", "also when producers or consumers are connected (they are disconnected)")
MESSAGE_ID = {"type": "object", "properties": {
    "ledgerId": {"type": "integer"}, "entryId": {"type": "integer"}, "partitionIndex": {"type": "integer"},
    "batchIndex": {"type": "integer"}}, "required": ["ledgerId", "entryId"]}
BINARY = {"type": "string", "format": "binary"}


def add_routes(table: RouteTable) -> None:
    table.add("GET", f"/admin/v2/{DOMAIN}/{{tenant}}/{{namespace}}", list_topics,
              "the topics of a namespace (partitions by their own names)", "topics", response=STRING_LIST)
    table.add("GET", f"/admin/v2/{DOMAIN}/{{tenant}}/{{namespace}}/partitioned", list_partitioned,
              "the partitioned topics of a namespace", "topics", response=STRING_LIST)
    table.add("PUT", BASE, create_topic, "create a non-partitioned topic", "topics", status=204)
    table.add("DELETE", BASE, delete_topic, "delete a topic", "topics", query=(FORCE,), status=204)
    table.add("PUT", BASE + "/partitions", create_partitioned, "create a partitioned topic", "topics",
              body={"type": "integer"}, status=204)
    table.add("POST", BASE + "/partitions", update_partitions, "grow a partitioned topic's partition count",
              "topics", body={"type": "integer"}, status=204)
    table.add("DELETE", BASE + "/partitions", delete_partitioned, "delete a partitioned topic and its partitions",
              "topics", query=(FORCE,), status=204)
    table.add("GET", BASE + "/stats", stats, "a topic's stats (TopicStats)", "topics", response=OBJECT)
    table.add("GET", BASE + "/partitioned-stats", partitioned_stats,
              "a partitioned topic's stats, summed, and per partition", "topics",
              query=(Query("perPartition", "boolean", "include each partition's stats (default true)"),),
              response=OBJECT)
    table.add("GET", BASE + "/internalStats", internal, "the managed ledger and its cursors", "topics",
              response=OBJECT)
    table.add("GET", BASE + "/partitioned-internalStats", partitioned_internal,
              "each partition's internal stats", "topics", response=OBJECT)
    table.add("GET", BASE + "/lastMessageId", last_message_id, "the id of the last message", "topics",
              response=MESSAGE_ID)
    table.add("GET", BASE + "/ledger/{ledgerId}/entry/{entryId}", message_by_id, "a message by its position",
              "topics", response=BINARY)
    table.add("GET", BASE + "/examinemessage", examine_message, "the n-th message from the start or the end",
              "topics", query=(Query("initialPosition", description="earliest or latest (default latest)"),
                               Query("messagePosition", "integer", "1 for the first (or last) message")),
              response=BINARY)
    table.add("PUT", BASE + "/compaction", trigger_compaction, "start compacting the topic (409 while one runs)",
              "topics", status=204)
    table.add("GET", BASE + "/compaction", compaction_status, "the last compaction's status (LongRunningProcessStatus)",
              "topics", response=OBJECT)
    table.add("PUT", BASE + "/unload", unload, "close the topic; clients reconnect", "topics", status=204)
    table.add("POST", BASE + "/terminate", terminate, "take no more messages; answers the last message id",
              "topics", response=MESSAGE_ID)
    table.add("POST", BASE + "/terminate/partitions", terminate_partitions,
              "terminate every partition; answers each one's last message id by partition index", "topics",
              response={"type": "object", "additionalProperties": MESSAGE_ID})


def int_param(text: str, what: str, minimum: int | None = None) -> int:
    """A path or query parameter as an int; RestError 400 naming `what` when it is not one, or is
    below minimum."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise bad_request(f"{what} must be an integer, not {text!r}") from None
    if minimum is not None and value < minimum:
        raise bad_request(f"{what} must be at least {minimum}, not {value}")
    return value


async def loaded_topic(request: web.Request):
    """The topic of the path, loaded (never created); RestError 404 when it does not exist."""
    broker = broker_of(request)
    name = topic_name(request)
    if not broker.topic_admin.exists(name):
        raise not_found(f"Topic {name} not found")
    return await broker.get_topic(name, create=False)


async def stored_topic(request: web.Request):
    """loaded_topic for what only a persistent topic has (its ledger, cursors, termination);
    RestError 405 on a non-persistent topic."""
    _persistent_only(request)
    return await loaded_topic(request)


def _persistent_only(request: web.Request) -> None:
    if request.match_info["domain"] != "persistent":
        raise RestError(405, "This operation is not supported on a non-persistent topic")


# ---- listing and lifecycle -----------------------------------------------------------------
async def list_topics(request: web.Request) -> web.Response:
    broker = broker_of(request)
    namespace = namespace_name(request)
    broker.namespaces.check_namespace(namespace)
    return web.json_response(broker.list_topics(namespace, request.match_info["domain"]))


async def list_partitioned(request: web.Request) -> web.Response:
    broker = broker_of(request)
    namespace = namespace_name(request)
    broker.namespaces.check_namespace(namespace)
    return web.json_response(broker.topic_admin.partitioned_topics(namespace))


async def create_topic(request: web.Request) -> web.Response:
    await broker_of(request).topic_admin.create(topic_name(request))
    return no_content()


async def delete_topic(request: web.Request) -> web.Response:
    await broker_of(request).topic_admin.delete(topic_name(request), query_bool(request, "force"))
    return no_content()


async def _partition_count(request: web.Request) -> int:
    count = await json_body(request)
    if not isinstance(count, int) or isinstance(count, bool):
        raise bad_request("the body must be the number of partitions, a JSON integer")
    return count


async def create_partitioned(request: web.Request) -> web.Response:
    await broker_of(request).topic_admin.create_partitioned(topic_name(request), await _partition_count(request))
    return no_content()


async def update_partitions(request: web.Request) -> web.Response:
    await broker_of(request).topic_admin.update_partitions(topic_name(request), await _partition_count(request))
    return no_content()


async def delete_partitioned(request: web.Request) -> web.Response:
    await broker_of(request).topic_admin.delete_partitioned(topic_name(request), query_bool(request, "force"))
    return no_content()


async def unload(request: web.Request) -> web.Response:
    await broker_of(request).topic_admin.unload(topic_name(request))
    return no_content()


async def terminate(request: web.Request) -> web.Response:
    topic = await stored_topic(request)
    return web.json_response(_message_id_json(await topic.terminate(), topic.partition_index))


async def terminate_partitions(request: web.Request) -> web.Response:
    _persistent_only(request)
    topics = await _existing_partition_topics(request)
    answer = {}
    for topic in topics.values():
        answer[str(topic.partition_index)] = _message_id_json(await topic.terminate(), topic.partition_index)
    return web.json_response(answer)


def _message_id_json(position: Position, partition: int) -> dict:
    """Pulsar's MessageIdImpl JSON."""
    return {"ledgerId": position.ledger_id, "entryId": position.entry_id, "partitionIndex": partition}


# ---- compaction ----------------------------------------------------------------------------
async def trigger_compaction(request: web.Request) -> web.Response:
    (await stored_topic(request)).compaction.trigger()  # ConflictError -> 409
    return no_content()


async def compaction_status(request: web.Request) -> web.Response:
    return web.json_response((await stored_topic(request)).compaction.status_json())


# ---- stats ---------------------------------------------------------------------------------
async def stats(request: web.Request) -> web.Response:
    stats = {**(await loaded_topic(request)).stats(), "ownerBroker": _owner_broker(request)}
    return web.json_response(without_nulls(stats))


def _owner_broker(request: web.Request) -> str:
    """TopicStats.ownerBroker: the owning broker's web address, host:port as Pulsar names it."""
    return broker_of(request).web_service_url.split("://", 1)[-1]


def _partitions(request: web.Request) -> list[TopicName]:
    broker = broker_of(request)
    name = topic_name(request)
    count = broker.partition_count(name)
    if not count:
        raise not_found(f"Partitioned topic {name} not found")
    return [name.partition(i) for i in range(count)]


async def _existing_partition_topics(request: web.Request):
    broker = broker_of(request)
    return {str(p): await broker.get_topic(p, create=False)
            for p in _partitions(request) if broker.topic_admin.exists(p)}


async def partitioned_stats(request: web.Request) -> web.Response:
    per_partition = {name: topic.stats() for name, topic in (await _existing_partition_topics(request)).items()}
    result = sum_topic_stats(list(per_partition.values()))
    result["ownerBroker"] = _owner_broker(request)
    result["metadata"] = {"partitions": len(_partitions(request))}
    if query_bool(request, "perPartition", default=True):
        result["partitions"] = per_partition
    return web.json_response(without_nulls(result))


async def internal(request: web.Request) -> web.Response:
    return web.json_response(internal_stats.of_topic(await stored_topic(request)))


async def partitioned_internal(request: web.Request) -> web.Response:
    _persistent_only(request)
    topics = await _existing_partition_topics(request)
    return web.json_response({
        "metadata": {"partitions": len(_partitions(request))},
        "partitions": {name: internal_stats.of_topic(topic) for name, topic in topics.items()},
    })


# ---- messages ------------------------------------------------------------------------------
async def last_message_id(request: web.Request) -> web.Response:
    topic = await stored_topic(request)
    position, batch_index = await topic.last_message_id()
    answer = _message_id_json(position, topic.partition_index)
    if batch_index is not None:
        answer["batchIndex"] = batch_index
    return web.json_response(answer)


async def message_by_id(request: web.Request) -> web.Response:
    topic = await stored_topic(request)
    position = Position(int_param(request.match_info["ledgerId"], "ledgerId"), int_param(request.match_info["entryId"], "entryId"))
    entry = await topic.ledger.read_entry(position)
    if entry is None:
        raise not_found(f"Message {position} not found in {topic.name}")
    return message_response(position, entry.data)


async def examine_message(request: web.Request) -> web.Response:
    topic = await stored_topic(request)
    n = int_param(request.query.get("messagePosition", "1"), "messagePosition", minimum=1)
    latest = request.query.get("initialPosition", "latest").lower() != "earliest"
    position = topic.ledger.nth_position(n, from_end=latest)
    entry = await topic.ledger.read_entry(position) if position is not None else None
    if entry is None:
        raise not_found(f"Could not examine message {n} from the {'latest' if latest else 'earliest'} "
                        f"in {topic.name}: the topic has fewer messages")
    return message_response(position, entry.data)


def message_response(position: Position, data: bytes) -> web.Response:
    """The payload (decompressed) with the metadata as X-Pulsar-* headers, as Pulsar answers;
    RestError 404 when the metadata does not parse, 500 when the payload does not decompress."""
    try:
        metadata, body = open_entry(bytes(data), verify=False)
    except FrameError:
        raise not_found(f"Message {position} is not readable") from None
    except (EntryError, CodecUnavailableError) as exc:
        raise RestError(500, f"Message {position} cannot be read: {exc}") from None
    headers = {"X-Pulsar-Message-ID": position_text(position)}
    for item in metadata.properties:
        headers[f"X-Pulsar-PROPERTY-{item.key}"] = item.value
    if metadata.properties:  # header names lose their case: the newer JSON form keeps the keys exact
        headers["X-Pulsar-Property"] = json.dumps({item.key: item.value for item in metadata.properties})
    if metadata.HasField("publish_time"):
        headers["X-Pulsar-publish-time"] = date_text(metadata.publish_time)
    if metadata.HasField("event_time"):
        headers["X-Pulsar-event-time"] = date_text(metadata.event_time)
    if metadata.HasField("num_messages_in_batch"):
        headers["X-Pulsar-num-batch-message"] = str(metadata.num_messages_in_batch)
    if metadata.HasField("partition_key"):
        headers["X-Pulsar-partition-key"] = metadata.partition_key
    headers["X-Pulsar-producer-name"] = metadata.producer_name
    headers["X-Pulsar-sequence-id"] = str(metadata.sequence_id)
    return web.Response(body=body, headers=headers, content_type="application/octet-stream")
