"""Subscriptions: /admin/v2/persistent/{tenant}/{namespace}/{topic}/subscription[s]...

List, create at a position, delete (412 while consumers are connected unless force=true), peek at
the n-th message after the mark-delete position, reset the cursor to a publish time or a message id, skip n messages, skip all (clear the backlog), expire
messages older than n seconds, and PIP-33's replicated-subscription flag. Source: Pulsar
PersistentTopicsBase (internalCreateSubscription, internalPeekNthMessage, internalResetCursor, internalSkipMessages,
internalExpireMessagesForSinglePartition, internalSetReplicatedSubscriptionStatus).
"""
from __future__ import annotations

from aiohttp import web

from minipulsar.broker.errors import TopicBusyError
from minipulsar.broker.replication.topic_replication import is_replicated, set_replicated
from minipulsar.broker.specs import SubscriptionSpec
from minipulsar.broker.topic import is_system_cursor
from minipulsar.broker.web.context import broker_of, json_body, no_content, query_bool
from minipulsar.broker.web.errors import bad_request, conflict, not_found
from minipulsar.broker.web.routes import STRING_LIST, Query, RouteTable
from minipulsar.broker.web.topic_path import topic_name
from minipulsar.broker.web.topics import (BASE, BINARY, FORCE, MESSAGE_ID, int_param, loaded_topic, message_response,
                                          stored_topic)
from minipulsar.storage import Position

SUB = BASE + "/subscription/{subscription}"
LATEST = Position((1 << 63) - 1, (1 << 63) - 1)


def add_routes(table: RouteTable) -> None:
    table.add("GET", BASE + "/subscriptions", list_subscriptions, "a topic's subscriptions", "subscriptions",
              response=STRING_LIST)
    table.add("PUT", SUB, create, "create a durable subscription at a message id (default latest)",
              "subscriptions", query=(Query("replicated", "boolean", "PIP-33 replicated subscription"),),
              body=MESSAGE_ID, status=204)
    table.add("DELETE", SUB, delete, "delete a subscription", "subscriptions", query=(FORCE,), status=204)
    table.add("POST", SUB + "/resetcursor/{timestamp}", reset_to_time,
              "reset the cursor to a publish time (ms since the epoch)", "subscriptions", status=204)
    table.add("POST", SUB + "/resetcursor", reset_to_id, "reset the cursor to a message id", "subscriptions",
              body=MESSAGE_ID, status=204)
    table.add("POST", SUB + "/skip/{numMessages}", skip, "acknowledge the next n messages", "subscriptions",
              status=204)
    table.add("GET", SUB + "/position/{messagePosition}", peek,
              "the n-th message after the mark-delete position (peek; 1 for the first)", "subscriptions",
              response=BINARY)
    table.add("POST", SUB + "/skip_all", skip_all, "acknowledge everything (clear the backlog)", "subscriptions",
              status=204)
    table.add("POST", SUB + "/expireMessages/{expireTimeInSeconds}", expire,
              "acknowledge messages published more than n seconds ago", "subscriptions", status=204)
    table.add("GET", SUB + "/replicatedSubscriptionStatus", replicated_status,
              "whether the subscription is replicated (PIP-33), by topic", "subscriptions",
              response={"type": "object", "additionalProperties": {"type": "boolean"}})
    table.add("POST", SUB + "/replicatedSubscriptionStatus", set_replicated_status,
              "make the subscription replicated or not (PIP-33)", "subscriptions", body={"type": "boolean"},
              status=204)


async def _subscription(request: web.Request):
    topic = await stored_topic(request)
    name = request.match_info["subscription"]
    subscription = topic.subscriptions.get(name)
    if subscription is None:
        raise not_found(f"Subscription {name} not found")
    return subscription


async def _message_id(request: web.Request, default: Position | None = None) -> Position:
    body = await json_body(request, None)
    if body is None and default is not None:
        return default
    if not isinstance(body, dict) or not all(isinstance(body.get(k), int) for k in ("ledgerId", "entryId")):
        raise bad_request('the body must be a message id {"ledgerId": int, "entryId": int}')
    return Position(body["ledgerId"], body["entryId"])


async def list_subscriptions(request: web.Request) -> web.Response:
    return web.json_response(sorted((await loaded_topic(request)).subscriptions))


async def create(request: web.Request) -> web.Response:
    """The topic is created when missing, under allowAutoTopicCreation, as Pulsar does."""
    broker = broker_of(request)
    topic = await broker.get_topic(topic_name(request), create=True)
    name = request.match_info["subscription"]
    if name in topic.subscriptions:
        raise conflict(f"Subscription already exists for topic: {name}")
    if not name or is_system_cursor(name, broker.replicator_prefix):
        raise bad_request(f"Subscription with reserved subscription name attempted: {name}")
    position = await _message_id(request, LATEST)
    subscription = await topic.subscribe(SubscriptionSpec(name))
    subscription.reset_cursor(position)
    if query_bool(request, "replicated"):
        set_replicated(subscription, True)
    return no_content()


async def delete(request: web.Request) -> web.Response:
    subscription = await _subscription(request)
    if subscription.consumers:
        if not query_bool(request, "force"):
            raise TopicBusyError(f"Subscription {subscription.name} has active consumers")
        subscription.disconnect_consumers()
    await subscription.topic.remove_subscription(subscription.name)
    return no_content()


async def reset_to_time(request: web.Request) -> web.Response:
    subscription = await _subscription(request)
    await subscription.reset_cursor_by_timestamp(int_param(request.match_info["timestamp"], "timestamp"))
    return no_content()


async def reset_to_id(request: web.Request) -> web.Response:
    subscription = await _subscription(request)
    subscription.reset_cursor(await _message_id(request))
    return no_content()


async def skip(request: web.Request) -> web.Response:
    subscription = await _subscription(request)
    subscription.skip_entries(int_param(request.match_info["numMessages"], "numMessages", minimum=0))
    return no_content()


async def peek(request: web.Request) -> web.Response:
    """Pulsar's peekNthMessage: the n-th entry after the mark-delete position, skipping the entries
    acknowledged individually, with the headers of GET .../ledger/{l}/entry/{e}; 404 past the end."""
    subscription = await _subscription(request)
    n = int_param(request.match_info["messagePosition"], "messagePosition", minimum=1)
    cursor = subscription.cursor
    last = subscription.topic.ledger.last_confirmed_position
    position, seen = cursor.mark_delete_position, 0
    while seen < n:
        position = cursor.next_valid_position(position)
        if position > last:
            raise not_found(f"Could not find the message at position {n} of subscription {subscription.name}: "
                            f"it has fewer messages")
        if not cursor.is_deleted(position):
            seen += 1
    entry = await subscription.topic.ledger.read_entry(position)
    if entry is None:
        raise not_found(f"Message {position} not found in {subscription.topic.name}")
    return message_response(position, entry.data)


async def skip_all(request: web.Request) -> web.Response:
    (await _subscription(request)).clear_backlog()
    return no_content()


async def expire(request: web.Request) -> web.Response:
    subscription = await _subscription(request)
    await subscription.expire_messages(int_param(request.match_info["expireTimeInSeconds"], "expireTimeInSeconds",
                                                 minimum=0))
    return no_content()


async def replicated_status(request: web.Request) -> web.Response:
    subscription = await _subscription(request)
    return web.json_response({str(subscription.topic.name): is_replicated(subscription)})


async def set_replicated_status(request: web.Request) -> web.Response:
    subscription = await _subscription(request)
    enabled = await json_body(request)
    if not isinstance(enabled, bool):
        raise bad_request("the body must be true or false")
    set_replicated(subscription, enabled)
    return no_content()
