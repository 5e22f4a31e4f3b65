"""PARTITIONED_METADATA, LOOKUP, GET_TOPICS_OF_NAMESPACE and GET_SCHEMA.

Every answer sets `response`: the C++ client treats a reply without it as a failure.
One broker owns every topic, so LOOKUP always answers Connect to our advertised URL (and the
pulsar+ssl:// one of brokerServicePortTls), or to the URLs of the advertised listener it names
(broker/listeners.py). With authorizationEnabled a role needs produce or consume permission on the
topic to look it up (AuthorizationError otherwise, as Pulsar's canLookup).
A standalone broker (runningStandalone, set by `minipulsar standalone`) whose answer names a
loopback address sets proxy_through_service_url, so clients stay on the address they connected to:
a container's published port, as Pulsar's TopicLookupBase.shouldRedirectThroughServiceUrl does.
"""
from __future__ import annotations

import functools
import ipaddress
import logging
import re
import socket
from typing import TYPE_CHECKING

from minipulsar.broker.errors import BrokerError, InvalidTopicNameError
from minipulsar.broker.namespaces import filter_topics, topics_hash
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import Frame

if TYPE_CHECKING:
    from minipulsar.broker.connection import ServerConnection

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type
MetadataResponse = api.CommandPartitionedTopicMetadataResponse
LookupResponse = api.CommandLookupTopicResponse


async def handle_partitioned_metadata(conn: "ServerConnection", frame: Frame) -> None:
    """TooManyRequests while maxConcurrentLookupRequest lookups are in flight (broker/limits.py)."""
    request = frame.command.partitionMetadata
    reply = MetadataResponse(request_id=request.request_id)
    permits = conn.broker.lookup_permits
    if not permits.try_acquire():
        reply.response, reply.error = MetadataResponse.Failed, api.TooManyRequests
        reply.message = "Failed due to too many pending lookup requests"
    else:
        try:
            name = TopicName.parse(request.topic)
            conn.broker.security.check_lookup(conn, name, "Get Partition Metadata")  # AuthorizationError
            reply.partitions = await conn.broker.partitions_of(name)
            reply.response = MetadataResponse.Success
        except BrokerError as exc:
            reply.response, reply.error, reply.message = MetadataResponse.Failed, exc.server_error, str(exc)
        finally:
            permits.release()
    conn.send(api.BaseCommand(type=Type.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=reply))


def handle_lookup(conn: "ServerConnection", frame: Frame) -> None:
    request = frame.command.lookupTopic
    reply = LookupResponse(request_id=request.request_id)
    try:
        conn.broker.security.check_lookup(conn, TopicName.parse(request.topic))  # AuthorizationError
        listener = conn.broker.listeners.lookup(request.advertised_listener_name, conn.broker.config.broker_service_url)
        reply.response = LookupResponse.Connect
        if listener.service_url:
            reply.brokerServiceUrl = listener.service_url
        if listener.service_url_tls:
            reply.brokerServiceUrlTls = listener.service_url_tls
        reply.authoritative = True
        if conn.broker.config.running_standalone:
            reply.proxy_through_service_url = names_loopback(listener.service_url or listener.service_url_tls or "")
    except BrokerError as exc:
        reply.response, reply.error, reply.message = LookupResponse.Failed, exc.server_error, str(exc)
    conn.send(api.BaseCommand(type=Type.LOOKUP_RESPONSE, lookupTopicResponse=reply))


@functools.lru_cache(maxsize=64)
def names_loopback(url: str) -> bool:
    """Whether url's host is a loopback address (resolved once per URL; a name that does not
    resolve is not loopback, as in Pulsar)."""
    host = url.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def handle_get_topics_of_namespace(conn: "ServerConnection", frame: Frame) -> None:
    """The topics of the namespace in the request's mode (PERSISTENT, NON_PERSISTENT or ALL;
    partitions by their own names, as Pulsar lists them),
    filtered by topics_pattern when given (filtered=true), with topics_hash; when the client's
    topics_hash equals ours the list is left out and changed=false. Unknown namespace: TopicNotFound.
    Source: Pulsar ServerCnx.handleGetTopicsOfNamespace, TopicList."""
    request = frame.command.getTopicsOfNamespace
    log.debug("%s: topics of %s (pattern %r)", conn.peer_address, request.namespace, request.topics_pattern)
    broker = conn.broker
    broker.security.check_list_topics(conn, request.namespace)  # AuthorizationError
    broker.namespaces.check_namespace(request.namespace)
    mode = api.CommandGetTopicsOfNamespace
    topics = []
    if request.mode != mode.NON_PERSISTENT:
        topics += broker.list_topics(request.namespace, "persistent")
    if request.mode != mode.PERSISTENT:
        topics += broker.list_topics(request.namespace, "non-persistent")
    filtered = False
    config = broker.config
    if (request.HasField("topics_pattern") and config.enable_broker_side_subscription_pattern_evaluation
            and len(request.topics_pattern) <= config.subscription_pattern_max_length):
        try:
            topics = filter_topics(topics, request.topics_pattern)
        except (re.error, ValueError) as exc:
            raise InvalidTopicNameError(f"invalid topics pattern {request.topics_pattern!r}: {exc}") from exc
        filtered = True
    digest = topics_hash(topics)
    changed = not (request.HasField("topics_hash") and request.topics_hash == digest)
    conn.send(api.BaseCommand(
        type=Type.GET_TOPICS_OF_NAMESPACE_RESPONSE,
        getTopicsOfNamespaceResponse=api.CommandGetTopicsOfNamespaceResponse(
            request_id=request.request_id, topics=topics if changed else [], filtered=filtered,
            topics_hash=digest, changed=changed),
    ))


def handle_get_schema(conn: "ServerConnection", frame: Frame) -> None:
    """The topic's schema, the latest or the version asked for (broker/schema_registry.py); without
    one, TopicNotFound "Topic not found or no-schema" as Pulsar answers."""
    request = frame.command.getSchema
    reply = api.CommandGetSchemaResponse(request_id=request.request_id)
    try:
        found = conn.broker.schemas.get(TopicName.parse(request.topic), request.schema_version or None)
    except BrokerError as exc:
        found = None
        reply.error_code, reply.error_message = exc.server_error, str(exc)
    if found is not None:
        reply.schema.CopyFrom(found[0])
        reply.schema_version = found[1]
    elif not reply.HasField("error_code"):
        reply.error_code, reply.error_message = api.TopicNotFound, "Topic not found or no-schema"
    conn.send(api.BaseCommand(type=Type.GET_SCHEMA_RESPONSE, getSchemaResponse=reply))


HANDLERS = {
    Type.PARTITIONED_METADATA: handle_partitioned_metadata,
    Type.LOOKUP: handle_lookup,
    Type.GET_TOPICS_OF_NAMESPACE: handle_get_topics_of_namespace,
    Type.GET_SCHEMA: handle_get_schema,
}
