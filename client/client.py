"""The Client: entry point of the bundled client, an async context manager.

    async with Client("pulsar://127.0.0.1:6650", operation_timeout_seconds=30) as client:
        producer = await client.create_producer("my-topic", batching_enabled=True)

It owns the connection pool, the lookup service and the id counters, and closes every producer,
consumer and reader it created. Options have the names and defaults of pulsar.Client; options the
bundled client does not implement raise InvalidConfiguration rather than being silently ignored.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import secrets

from client import codec
from client.connection_pool import ConnectionPool, parse_service_url
from client.consumer.consumer import Consumer
from client.consumer.dead_letter import DeadLetterProducer
from client.consumer.partition_consumer import ConsumerConfig
from client.exceptions import AlreadyClosed, InvalidConfiguration
from client.lookup import LookupService
from client.message_id import MessageId
from client.options import (BatchingType, CompressionType, ConsumerType, InitialPosition, PartitionsRoutingMode)
from client.producer.partition_producer import ProducerConfig
from client.producer.producer import Producer
from client.reader import Reader
from client.schema import BytesSchema, Schema
from client.topic_name import normalize, partition_name
from proto.topic_name import partitioned_base
from proto import PulsarApi_pb2 as api

log = logging.getLogger(__name__)


class Client:
    """service_url: 'pulsar://host:port'; operation_timeout_seconds bounds every request and the
    creation of producers and consumers; connection_timeout_ms bounds TCP connect + handshake."""

    def __init__(self, service_url: str, authentication=None, operation_timeout_seconds: float = 30,
                 connection_timeout_ms: int = 10000, keep_alive_interval_seconds: float = 30, **ignored):
        parse_service_url(service_url)
        self.service_url = service_url
        self.operation_timeout = float(operation_timeout_seconds)
        for name in ignored:
            if name not in ("io_threads", "message_listener_threads", "concurrent_lookup_requests", "logger",
                            "log_conf_file_path", "stats_interval_in_seconds", "listener_name"):
                raise InvalidConfiguration(f"Client option {name!r} is not supported by the bundled client")
        self.pool = ConnectionPool(self.operation_timeout, connection_timeout_ms / 1000.0, authentication,
                                   keep_alive_interval_seconds)
        self._request_ids = itertools.count()
        self._producer_ids = itertools.count()
        self._consumer_ids = itertools.count()
        self.lookup = LookupService(self.pool, service_url, self.new_request_id)
        self._handles: set = set()
        self._closed = False

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    # ---- ids -------------------------------------------------------------------------------
    def new_request_id(self) -> int:
        return next(self._request_ids)

    def new_producer_id(self) -> int:
        return next(self._producer_ids)

    def new_consumer_id(self) -> int:
        return next(self._consumer_ids)

    @staticmethod
    def random_name() -> str:
        """A 10-hex-character name, as the C++ client generates for unnamed consumers."""
        return secrets.token_hex(5)

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosed("client is closed")

    def _forget(self, handle) -> None:
        self._handles.discard(handle)

    # ---- topics ----------------------------------------------------------------------------
    async def get_topic_partitions(self, topic: str) -> list[str]:
        """The partition names of topic, or [topic] when it is not partitioned."""
        self._check_open()
        topic = normalize(topic)
        count = await self.lookup.partitions_with_retry(topic, self.operation_timeout)
        return [partition_name(topic, i) for i in range(count)] if count else [topic]

    async def get_topics_of_namespace(self, namespace: str) -> list[str]:
        """Persistent topics of namespace ('tenant/ns'), partitioned topics by their base name,
        sorted (GET_TOPICS_OF_NAMESPACE; the official client does the same suffix stripping)."""
        self._check_open()
        names = await self.lookup.topics_of_namespace(namespace)
        return sorted({partitioned_base(name) for name in names})

    # ---- producers -------------------------------------------------------------------------
    async def create_producer(self, topic: str, producer_name: str | None = None, schema: Schema | None = None,
                              initial_sequence_id: int | None = None, send_timeout_millis: int = 30000,
                              compression_type: CompressionType = CompressionType.NONE,
                              max_pending_messages: int = 1000, max_pending_messages_across_partitions: int = 50000,
                              block_if_queue_full: bool = False, batching_enabled: bool = False,
                              batching_max_messages: int = 1000, batching_max_allowed_size_in_bytes: int = 131072,
                              batching_max_publish_delay_ms: int = 10, chunking_enabled: bool = False,
                              message_routing_mode: PartitionsRoutingMode = PartitionsRoutingMode.RoundRobinDistribution,
                              lazy_start_partitioned_producers: bool = False, properties: dict[str, str] | None = None,
                              batching_type: BatchingType = BatchingType.Default, encryption_key=None,
                              crypto_key_reader=None, access_mode: int = api.Shared, message_router=None,
                              _initial_subscription_name: str | None = None) -> Producer:
        """A producer on topic (one per partition when partitioned); raises TopicNotFound,
        ProducerBusy, Timeout, InvalidConfiguration."""
        self._check_open()
        if chunking_enabled or encryption_key or crypto_key_reader or message_router:
            raise InvalidConfiguration("chunking, encryption and custom routers are not supported by the bundled client")
        codec.check_available(CompressionType(compression_type))
        topic = normalize(topic)
        conf = ProducerConfig(
            producer_name=producer_name, schema=schema or BytesSchema(), initial_sequence_id=initial_sequence_id,
            send_timeout_millis=send_timeout_millis, compression_type=CompressionType(compression_type),
            max_pending_messages=max_pending_messages, block_if_queue_full=block_if_queue_full,
            batching_enabled=batching_enabled, batching_max_messages=batching_max_messages,
            batching_max_allowed_size_in_bytes=batching_max_allowed_size_in_bytes,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms, batching_type=BatchingType(batching_type),
            properties=properties, access_mode=int(access_mode), initial_subscription_name=_initial_subscription_name,
        )
        partitions = await self.lookup.partitions_with_retry(topic, self.operation_timeout)
        if partitions and max_pending_messages_across_partitions:
            conf.max_pending_messages = min(max_pending_messages, max(1, max_pending_messages_across_partitions // partitions))
        producer = await Producer(self, topic, conf, partitions, PartitionsRoutingMode(message_routing_mode))._start()
        self._handles.add(producer)
        return producer

    # ---- consumers -------------------------------------------------------------------------
    async def subscribe(self, topic: str | list[str], subscription_name: str,
                        consumer_type: ConsumerType = ConsumerType.Exclusive, schema: Schema | None = None,
                        message_listener=None, receiver_queue_size: int = 1000,
                        max_total_receiver_queue_size_across_partitions: int = 50000, consumer_name: str | None = None,
                        unacked_messages_timeout_ms: int | None = None, broker_consumer_stats_cache_time_ms: int = 30000,
                        negative_ack_redelivery_delay_ms: int = 60000, is_read_compacted: bool = False,
                        properties: dict[str, str] | None = None, pattern_auto_discovery_period: int = 60,
                        initial_position: InitialPosition = InitialPosition.Latest, crypto_key_reader=None,
                        replicate_subscription_state_enabled: bool = False, max_pending_chunked_message: int = 10,
                        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
                        start_message_id_inclusive: bool = False, batch_receive_policy=None, key_shared_policy=None,
                        batch_index_ack_enabled: bool = False, regex_subscription_mode=None,
                        dead_letter_policy=None, crypto_failure_action=None, priority_level: int = 0) -> Consumer:
        """A consumer on one topic or a list of topics; raises ConsumerBusy, TopicNotFound, Timeout,
        InvalidConfiguration."""
        self._check_open()
        if crypto_key_reader or batch_receive_policy:
            raise InvalidConfiguration("encryption and batch receive are not supported by the bundled client")
        if unacked_messages_timeout_ms is not None and 0 < unacked_messages_timeout_ms < 1000:
            raise InvalidConfiguration("unacked_messages_timeout_ms must be at least 1000")
        conf = ConsumerConfig(
            subscription_name=subscription_name, consumer_type=ConsumerType(consumer_type),
            schema=schema or BytesSchema(), receiver_queue_size=receiver_queue_size, consumer_name=consumer_name,
            unacked_messages_timeout_ms=unacked_messages_timeout_ms or None,
            negative_ack_redelivery_delay_ms=negative_ack_redelivery_delay_ms, properties=properties,
            initial_position=InitialPosition(initial_position),
            replicate_subscription_state_enabled=replicate_subscription_state_enabled,
            key_shared_policy=key_shared_policy, batch_index_ack_enabled=batch_index_ack_enabled,
            dead_letter_policy=dead_letter_policy, is_read_compacted=is_read_compacted,
            priority_level=priority_level, start_message_id_inclusive=start_message_id_inclusive,
        )
        topics = [topic] if isinstance(topic, str) else list(topic)
        dead_letters_for = None
        if dead_letter_policy is not None:
            cache: dict[str, DeadLetterProducer] = {}

            def dead_letters_for(base: str) -> DeadLetterProducer:
                if dead_letter_policy.dead_letter_topic:
                    base = "*"
                if base not in cache:
                    cache[base] = DeadLetterProducer(self, base, subscription_name, dead_letter_policy)
                return cache[base]
        consumer = await self._make_consumer(topics, conf, dead_letters_for)
        if message_listener is not None:
            consumer._listener_task = asyncio.get_running_loop().create_task(_run_listener(consumer, message_listener))
        return consumer

    async def _make_consumer(self, topics: list[str], conf: ConsumerConfig, dead_letters_for=None) -> Consumer:
        names = [normalize(t) for t in topics]
        counts = await asyncio.gather(*(self.lookup.partitions_with_retry(t, self.operation_timeout) for t in names))
        consumer = await Consumer(self, list(zip(names, counts)), conf, dead_letters_for)._start()
        self._handles.add(consumer)
        return consumer

    async def create_reader(self, topic: str, start_message_id: MessageId, schema: Schema | None = None,
                            reader_listener=None, receiver_queue_size: int = 1000, reader_name: str | None = None,
                            subscription_role_prefix: str | None = None, is_read_compacted: bool = False,
                            crypto_key_reader=None, start_message_id_inclusive: bool = False) -> Reader:
        """A Reader on topic starting at start_message_id (MessageId.earliest / .latest / an id)."""
        self._check_open()
        if crypto_key_reader or reader_listener:
            raise InvalidConfiguration("encryption and reader listeners are not supported by the bundled client")
        conf = ConsumerConfig(
            subscription_name=f"{subscription_role_prefix or 'reader'}-{self.random_name()}",
            consumer_type=ConsumerType.Exclusive, schema=schema or BytesSchema(),
            receiver_queue_size=receiver_queue_size, consumer_name=reader_name, durable=False,
            is_read_compacted=is_read_compacted, start_message_id=start_message_id,
            start_message_id_inclusive=start_message_id_inclusive,
            initial_position=InitialPosition.Earliest if start_message_id == MessageId.earliest else InitialPosition.Latest,
        )
        consumer = await self._make_consumer([topic], conf)
        return Reader(consumer)

    # ---- closing ---------------------------------------------------------------------------
    async def close(self) -> None:
        """Close every producer, consumer and reader, then the connections; idempotent."""
        if self._closed:
            return
        handles = list(self._handles)
        await asyncio.gather(*(h.close() for h in handles), return_exceptions=True)
        self._closed = True
        self.pool.close()


async def _run_listener(consumer: Consumer, listener) -> None:
    """message_listener(consumer, message), sync or async, for every message until close."""
    async for message in consumer:
        try:
            result = listener(consumer, message)
            if asyncio.iscoroutine(result):
                await result
        except Exception:  # noqa: BLE001 - user code
            log.exception("message listener failed")
