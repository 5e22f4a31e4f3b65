"""Binary-protocol lookup: PARTITIONED_METADATA (how many partitions) and LOOKUP (which broker
serves a topic), both asked on the service-URL connection; redirects are followed up to
MAX_REDIRECTS times. LOOKUP carries the client's listener name as advertised_listener_name (empty:
the broker's internal listener). Source: Pulsar's C++ BinaryProtoLookupService and the binary
protocol's "Topic lookup" and "Partitioned topics discovery" sections.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from minipulsar.client.backoff import Backoff
from minipulsar.client.connection_pool import ConnectionPool
from minipulsar.client.exceptions import RETRYABLE, LookupError, Timeout, from_server_error
from minipulsar.client.tls import is_tls_url
from minipulsar.proto import PulsarApi_pb2 as api

log = logging.getLogger(__name__)

Type = api.BaseCommand.Type
MAX_REDIRECTS = 20  # C++ maxLookupRedirects
MetadataResponse = api.CommandPartitionedTopicMetadataResponse
LookupResponse = api.CommandLookupTopicResponse


class LookupService:
    """Lookups for one Client.

    Arguments:
        pool (ConnectionPool): the client's connections.
        service_url (str): 'pulsar://host:port', asked first.
        new_request_id (Callable[[], int]): the client's request-id counter.
        listener_name (str): LOOKUP.advertised_listener_name; "" = the broker's internal listener.
            Default: "".
    """

    def __init__(self, pool: ConnectionPool, service_url: str, new_request_id: Callable[[], int],
                 listener_name: str = ""):
        self.pool = pool
        self.service_url = service_url
        self.new_request_id = new_request_id
        self.listener_name = listener_name

    async def partitions_with_retry(self, topic: str, timeout: float) -> int:
        """partitions(), retrying retryable failures (broker down, not ready) for up to timeout
        seconds, then raising Timeout. Source: Pulsar's C++ RetryableLookupService."""
        backoff = Backoff()
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await self.partitions(topic)
            except RETRYABLE as exc:
                delay = backoff.next()
                if time.monotonic() + delay >= deadline:
                    raise Timeout(f"partition metadata of {topic}: {exc}") from exc
                log.info("partition metadata of %s failed (%s); retrying in %.1f s", topic, exc, delay)
                await asyncio.sleep(delay)

    async def partitions(self, topic: str) -> int:
        """Number of partitions of topic (0 = not partitioned); raises the broker's error."""
        cnx = await self.pool.get(self.service_url)
        request_id = self.new_request_id()
        reply = await cnx.request(api.BaseCommand(
            type=Type.PARTITIONED_METADATA,
            partitionMetadata=api.CommandPartitionedTopicMetadata(topic=topic, request_id=request_id),
        ), request_id)
        if not reply.HasField("response") or reply.response != MetadataResponse.Success:
            if reply.HasField("error"):
                raise from_server_error(reply.error, reply.message)
            raise LookupError(f"partition metadata for {topic} failed: {reply.message or 'empty response'}")
        return reply.partitions

    async def topics_of_namespace(self, namespace: str) -> list[str]:
        """Persistent topics of namespace ('tenant/ns'), partitions by their own names."""
        cnx = await self.pool.get(self.service_url)
        request_id = self.new_request_id()
        reply = await cnx.request(api.BaseCommand(
            type=Type.GET_TOPICS_OF_NAMESPACE,
            getTopicsOfNamespace=api.CommandGetTopicsOfNamespace(request_id=request_id, namespace=namespace),
        ), request_id)
        return list(reply.topics)

    async def lookup(self, topic: str) -> tuple[str, str]:
        """(logical broker URL, physical URL to dial) serving topic, following redirects."""
        url, authoritative = self.service_url, False
        for _ in range(MAX_REDIRECTS + 1):
            cnx = await self.pool.get(url)
            request_id = self.new_request_id()
            reply = await cnx.request(api.BaseCommand(type=Type.LOOKUP, lookupTopic=api.CommandLookupTopic(
                topic=topic, request_id=request_id, authoritative=authoritative,
                advertised_listener_name=self.listener_name,
            )), request_id)
            if not reply.HasField("response") or reply.response == LookupResponse.Failed:
                if reply.HasField("error"):
                    raise from_server_error(reply.error, reply.message)
                raise LookupError(f"lookup of {topic} failed: {reply.message or 'empty response'}")
            # A client that came in over TLS stays on TLS: the broker's pulsar+ssl:// URL.
            broker_url = reply.brokerServiceUrlTls if is_tls_url(self.service_url) else reply.brokerServiceUrl
            if not broker_url:
                raise LookupError(f"lookup of {topic}: the broker has no {'TLS ' if is_tls_url(self.service_url) else ''}"
                                  f"service URL for this client")
            if reply.response == LookupResponse.Redirect:
                log.debug("lookup of %s redirected to %s", topic, broker_url)
                url, authoritative = broker_url, reply.authoritative
                continue
            physical = self.service_url if reply.proxy_through_service_url else broker_url
            return broker_url, physical
        raise LookupError(f"lookup of {topic} exceeded {MAX_REDIRECTS} redirects")
