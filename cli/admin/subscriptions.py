"""`minipulsar admin topics ...` subscription verbs: Pulsar's CmdTopics subscriptions,
create-subscription, unsubscribe, reset-cursor, skip, clear-backlog, expire-messages and the
replicated-subscription status, over .../{topic}/subscriptions and .../subscription/{s}/...

    subscriptions TOPIC                 create-subscription TOPIC -s SUB [-m latest|earliest|l:e] [-r]
    unsubscribe TOPIC -s SUB [-f]       reset-cursor TOPIC -s SUB (-t TIME | -m latest|earliest|l:e)
    skip TOPIC -s SUB -n N              clear-backlog TOPIC -s SUB
    expire-messages TOPIC -s SUB -t TIME
    set-replicated-subscription-status TOPIC -s SUB --enable|--disable
    get-replicated-subscription-status TOPIC -s SUB

reset-cursor -t goes back that long from now (10m, 1h; no unit: seconds), as pulsar-admin does.
"""
from __future__ import annotations

import time

from minipulsar.cli.admin.args import (add_verb, enable_disable, message_position, relative_millis,
                                       relative_seconds, segment, topic_path, with_topic)
from minipulsar.cli.admin.http import show
from minipulsar.cli.runtime import UsageError


def add_verbs(verbs) -> None:
    with_topic(add_verb(verbs, "subscriptions", subscriptions, "Get the list of subscriptions on the topic"))
    p = _verb(verbs, "create-subscription", create_subscription, "Create a new subscription on a topic")
    p.add_argument("-m", "--messageId", dest="message_id", type=message_position, default="latest",
                   metavar="MESSAGE_ID",
                   help="messageId where to create the subscription: 'latest' (default), 'earliest' "
                        "or ledgerId:entryId")
    p.add_argument("-r", "--replicated", action="store_true", help="replicated subscriptions")
    p = _verb(verbs, "unsubscribe", unsubscribe, "Delete a durable subscriber from a topic "
              "(refused while consumers are attached, unless -f)")
    p.add_argument("-f", "--force", action="store_true",
                   help="Disconnect and close all consumers and delete subscription forcefully")
    p = _verb(verbs, "reset-cursor", reset_cursor,
              "Reset position for subscription to a position that is closest to timestamp or messageId")
    p.add_argument("-t", "--time", type=relative_millis, metavar="TIME",
                   help="time to reset back to (no unit: seconds; or minutes, hours, days, weeks eg: 100m, 3h, 2d, 5w)")
    p.add_argument("-m", "--messageId", dest="message_id", type=message_position, metavar="MESSAGE_ID",
                   help="messageId to reset back to ('latest', 'earliest', or 'ledgerId:entryId')")
    p = _verb(verbs, "skip", skip, "Skip some messages for the subscription")
    p.add_argument("-n", "--count", type=int, required=True, help="Number of messages to skip")
    _verb(verbs, "clear-backlog", clear_backlog, "Skip all the messages for the subscription")
    p = _verb(verbs, "expire-messages", expire_messages,
              "Expire messages that older than given expiry time (in seconds) for the subscription")
    p.add_argument("-t", "--expireTime", dest="expire_time", type=relative_seconds, required=True, metavar="TIME",
                   help="Expire messages older than time in seconds (or minutes, hours, days, weeks eg: 100m, 3h)")
    p = _verb(verbs, "set-replicated-subscription-status", set_replicated,
              "Enable or disable replicated subscription")
    enable_disable(p, "replicated subscription")
    _verb(verbs, "get-replicated-subscription-status", get_replicated, "Get replicated subscription status")


def _verb(verbs, name: str, action, help: str):
    parser = with_topic(add_verb(verbs, name, action, help))
    parser.add_argument("-s", "--subscription", required=True, help="Subscription name")
    return parser


def _path(args) -> str:
    return f"{topic_path(args.topic)}/subscription/{segment(args.subscription)}"


async def subscriptions(client, args) -> None:
    show(await client.get(topic_path(args.topic) + "/subscriptions"))


async def create_subscription(client, args) -> None:
    await client.put(_path(args), args.message_id, replicated=args.replicated or None)


async def unsubscribe(client, args) -> None:
    await client.delete(_path(args), force=args.force or None)


async def reset_cursor(client, args) -> None:
    if args.message_id is not None:
        await client.post(_path(args) + "/resetcursor", args.message_id)
    elif args.time is not None:
        await client.post(f"{_path(args)}/resetcursor/{int(time.time() * 1000) - args.time}")
    else:
        raise UsageError("Either Timestamp (--time) or messageId (--messageId) has to be provided to reset cursor")


async def skip(client, args) -> None:
    await client.post(f"{_path(args)}/skip/{args.count}")


async def clear_backlog(client, args) -> None:
    await client.post(_path(args) + "/skip_all")


async def expire_messages(client, args) -> None:
    await client.post(f"{_path(args)}/expireMessages/{args.expire_time}")


async def set_replicated(client, args) -> None:
    await client.post(_path(args) + "/replicatedSubscriptionStatus", args.enable)


async def get_replicated(client, args) -> None:
    show(await client.get(_path(args) + "/replicatedSubscriptionStatus"))
