"""The topic and subscription a WebSocket path names, read as Pulsar's handlers read it.

    /ws/v2/producer/{persistent|non-persistent}/{tenant}/{namespace}/{topic}
    /ws/v2/consumer/{domain}/{tenant}/{namespace}/{topic}/{subscription}
    /ws/v2/reader/{domain}/{tenant}/{namespace}/{topic}
    /ws/{producer|consumer|reader}/{domain}/{tenant}/{cluster}/{namespace}/{topic}[/{subscription}]  (v1)

The raw (still percent-encoded) path is split on "/"; a producer's or reader's topic may span
several segments (joined with "/", empty ones dropped), a consumer's is the one segment before its
subscription, and a consumer path must have exactly nine segments. Topic and subscription are then
URL-decoded ("+" is a space), as Java's URLDecoder does. Failures raise InvalidPath with Pulsar's
messages. Source: Pulsar AbstractWebSocketHandler.extractTopicName and
ConsumerHandler.extractSubscription.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote_plus

from minipulsar.broker.errors import InvalidTopicNameError
from minipulsar.broker.topic_name import TopicName

DOMAINS = ("persistent", "non-persistent")
KINDS = ("producer", "consumer", "reader")


class InvalidPath(ValueError):
    """The path names no topic (or no subscription); the message is Pulsar's."""


@dataclass(frozen=True)
class Endpoint:
    """kind: producer, consumer or reader; topic: the full topic name; subscription: the
    consumer's (None otherwise); v1_namespace: 'tenant/cluster/namespace' of a v1 path (None for
    v2), whose topic minipulsar cannot hold (it has no cluster-scoped namespaces)."""

    kind: str
    topic: str
    subscription: str | None = None
    v1_namespace: str | None = None


def parse_path(raw_path: str) -> Endpoint:
    """The Endpoint of a raw request path; raises InvalidPath."""
    parts = raw_path.split("/")
    if len(parts) < 8 or parts[1] != "ws":
        raise InvalidPath("Invalid topic name format")
    v2 = parts[2] == "v2"
    kind = parts[3] if v2 else parts[2]
    domain = parts[4 if v2 else 3]
    if kind not in KINDS or domain not in DOMAINS:
        raise InvalidPath("Invalid topic name format")
    namespace = parts[5:7] if v2 else parts[4:7]
    end = len(parts) - 1 if kind == "consumer" else len(parts)
    local = unquote_plus("/".join([parts[7], *(part for part in parts[8:end] if part)]))
    topic = f"{domain}://{'/'.join(namespace)}/{local}"
    subscription = _subscription(parts) if kind == "consumer" else None
    if not v2:
        return Endpoint(kind, topic, subscription, "/".join(namespace))
    try:
        name = TopicName.parse(topic)
    except InvalidTopicNameError as exc:
        raise InvalidPath(str(exc)) from None
    return Endpoint(kind, str(name), subscription)


def _subscription(parts: list[str]) -> str:
    if len(parts) != 9:
        raise InvalidPath("Invalid topic name format")
    if not parts[8]:
        raise InvalidPath("Empty subscription name")
    return unquote_plus(parts[8])
