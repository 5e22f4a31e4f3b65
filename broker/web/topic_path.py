"""Topic and namespace names from REST paths: /{domain}/{tenant}/{namespace}/{topic} as Pulsar's
v2 paths spell them (domain "persistent" or "non-persistent", the local name URL-decoded)."""
from __future__ import annotations

from aiohttp import web

from minipulsar.broker.errors import BrokerError
from minipulsar.broker.topic_name import TopicName
from minipulsar.broker.web.errors import RestError

DOMAINS = ("persistent", "non-persistent")
DOMAIN = "{domain:persistent|non-persistent}"
TOPIC_PATH = f"/{DOMAIN}/{{tenant}}/{{namespace}}/{{topic}}"


def topic_name(request: web.Request) -> TopicName:
    """The TopicName of the request's path; RestError 412 for a name Pulsar would refuse, 404 for
    an unknown domain."""
    info = request.match_info
    if info["domain"] not in DOMAINS:
        raise RestError(404, f"unknown topic domain {info['domain']!r}")
    try:
        return TopicName.parse(f"{info['domain']}://{info['tenant']}/{info['namespace']}/{info['topic']}")
    except (BrokerError, ValueError) as exc:
        raise RestError(412, f"Invalid topic name: {exc}") from exc


def namespace_name(request: web.Request) -> str:
    """'tenant/namespace' of the request's path."""
    info = request.match_info
    return f"{info['tenant']}/{info['namespace']}"
