"""The arguments of `minipulsar admin` verbs, read as pulsar-admin reads them.

add_verb registers a verb (its coroutine becomes the `action` default). The argparse types here
raise ArgumentTypeError, which argparse reports as a usage error (exit status 2):
  - topic names, full or short as Pulsar's TopicName takes them ("my-topic" is
    persistent://public/default/my-topic, "t/ns/x" is persistent://t/ns/x);
  - namespaces as tenant/namespace;
  - relative times as RelativeTimeUtil parses them: a number with an optional unit s, m, h, d, w
    or y (no unit: seconds; 10m, 3h, 2d; -1 stays -1);
  - sizes as pulsar-admin's ByteUnit converters: a number of bytes with an optional k, m, g or t
    suffix, powers of 1024 (10M, 16G; -1 stays -1);
  - message ids as ledgerId:entryId, and for positions also latest or earliest.
Paths: topic_path and namespace_path build the v2 REST paths, each segment URL-quoted.
"""
from __future__ import annotations

import argparse
from typing import Awaitable, Callable
from urllib.parse import quote

from minipulsar.proto.topic_name import full_topic_name

_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_BYTES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_POSITION = (1 << 63) - 1  # MessageId.latest: Long.MAX_VALUE for both ids
LATEST = {"ledgerId": MAX_POSITION, "entryId": MAX_POSITION}
EARLIEST = {"ledgerId": -1, "entryId": -1}


def add_verb(verbs, name: str, action: Callable[..., Awaitable[int | None]], help: str,
             aliases: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """A verb of an admin group: `action(client, args)` runs it (None or 0 means success)."""
    parser = verbs.add_parser(name, help=help, description=help, aliases=list(aliases))
    parser.set_defaults(action=action, admin_verb=name)
    return parser


def with_topic(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The verb's TOPIC argument (args.topic: the full name)."""
    parser.add_argument("topic", type=topic_name, metavar="TOPIC",
                        help="persistent://tenant/namespace/topic, or a short name")
    return parser


def enable_disable(parser: argparse.ArgumentParser, what: str) -> None:
    """--enable/-e or --disable/-d, exactly one, stored as args.enable."""
    choice = parser.add_mutually_exclusive_group(required=True)
    choice.add_argument("-e", "--enable", dest="enable", action="store_true", default=None, help=f"enable {what}")
    choice.add_argument("-d", "--disable", dest="enable", action="store_false", help=f"disable {what}")


# ---- names and paths -----------------------------------------------------------------------
def topic_name(text: str) -> str:
    """A full topic name from a full or short one."""
    try:
        return full_topic_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def namespace_name(text: str) -> str:
    parts = text.split("/")
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"invalid namespace {text!r}: expected tenant/namespace")
    return text


def _segments(*parts: str) -> str:
    return "/".join(quote(part, safe="") for part in parts)


def topic_parts(name: str) -> tuple[str, str, str, str]:
    """(domain, tenant, namespace, local name) of a full topic name."""
    domain, rest = name.split("://", 1)
    tenant, namespace, local = rest.split("/", 2)
    return domain, tenant, namespace, local


def topic_path(name: str) -> str:
    """/admin/v2/{domain}/{tenant}/{namespace}/{topic} of a full topic name."""
    return "/admin/v2/" + _segments(*topic_parts(name))


def namespace_path(namespace: str) -> str:
    """/admin/v2/namespaces/{tenant}/{namespace}."""
    return "/admin/v2/namespaces/" + _segments(*namespace.split("/"))


def segment(text: str) -> str:
    """One URL-quoted path segment."""
    return quote(text, safe="")


# ---- values --------------------------------------------------------------------------------
def relative_seconds(text: str) -> int:
    """'10m' -> 600; '30' -> 30 (seconds); '-1' -> -1."""
    value = text.strip()
    unit = value[-1:].lower() if value[-1:].isalpha() else "s"
    number = value[:-1] if value[-1:].isalpha() else value
    try:
        amount = int(number)
    except ValueError:
        amount = None
    if amount is None or unit not in _SECONDS:
        raise argparse.ArgumentTypeError(
            f"invalid time {text!r}: a number with an optional unit s, m, h, d, w or y (e.g. 30, 10m, 3h)")
    return amount * _SECONDS[unit]


def relative_millis(text: str) -> int:
    """As relative_seconds, in milliseconds."""
    return relative_seconds(text) * 1000


def byte_size(text: str) -> int:
    """'10M' -> 10485760; '4096' -> 4096 bytes; '-1' -> -1."""
    value = text.strip()
    multiplier = _BYTES.get(value[-1:].lower())
    try:
        return int(value[:-1]) * multiplier if multiplier else int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: a number of bytes with an optional k, m, g or t suffix "
            f"(4096, 100K, 10M, 16G, 2T)") from None


def comma_list(text: str) -> list[str]:
    """'a,b' -> ['a', 'b'] (empty items dropped)."""
    return [item.strip() for item in text.split(",") if item.strip()]


def message_id(text: str) -> dict:
    """'ledgerId:entryId' -> {"ledgerId": int, "entryId": int}."""
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError(text)
        return {"ledgerId": int(parts[0]), "entryId": int(parts[1])}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"Invalid message id (must be in format: ledgerId:entryId) value {text}") from None


def message_position(text: str) -> dict:
    """'latest', 'earliest' or 'ledgerId:entryId', as the message id body the REST API takes."""
    if text == "latest":
        return dict(LATEST)
    if text == "earliest":
        return dict(EARLIEST)
    return message_id(text)
