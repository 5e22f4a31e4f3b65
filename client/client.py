"""The Client: entry point of the bundled client, an async context manager.

    async with Client("pulsar://127.0.0.1:6650", operation_timeout_seconds=30) as client:
        producer = await client.create_producer("my-topic", batching_enabled=True)

It owns the connection pool, the lookup service and the id counters, and closes every producer,
consumer and reader it created. Options have the names and defaults of pulsar.Client; options the
bundled client does not implement are accepted at their default value only and raise
InvalidConfiguration, naming the option, otherwise (never silently ignored). The module runs a
little past 450 lines because pulsar.Client's whole surface (every create_producer / subscribe /
create_reader option) lives on this one class, as in the official API.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import secrets

from minipulsar.client.auth import Authentication
from minipulsar.client.connection_pool import ConnectionPool, parse_service_url
from minipulsar.client.consumer.consumer import Consumer
from minipulsar.client.consumer.dead_letter import DeadLetterProducer
from minipulsar.client.consumer.partition_consumer import ConsumerConfig
from minipulsar.client.exceptions import AlreadyClosed, InvalidConfiguration
from minipulsar.client.lookup import LookupService
from minipulsar.client.message_id import MessageId
from minipulsar.client.options import (BatchingType, CompressionType, ConsumerType, HashingScheme, InitialPosition,
                                       PartitionsRoutingMode, SubscriptionMode, reject_unsupported)
from minipulsar.client.producer.partition_producer import ProducerConfig
from minipulsar.client.producer.producer import Producer
from minipulsar.client.reader import Reader
from minipulsar.client.schema import BytesSchema, Schema
from minipulsar.client.tls import client_ssl_context, is_tls_url
from minipulsar.client.topic_name import normalize, partition_name
from minipulsar.proto.topic_name import partitioned_base
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.compression import check_available
from minipulsar.proto.errors import CodecUnavailableError

log = logging.getLogger(__name__)


class Client:
    """A client of one Pulsar service: creates producers, consumers and readers (pulsar.Client).

    Use it as an async context manager, or call close(). Options have the names and defaults of
    pulsar.Client; the official options the bundled client does not implement are accepted only at
    their default value, and raise InvalidConfiguration otherwise.

    Arguments:
        service_url (str): 'pulsar://host:port' or 'pulsar+ssl://host:port' (several hosts:
            'pulsar://h1:6650,h2:6650'; the first one is used). No default.
        authentication (Authentication | None): credentials sent in CONNECT, e.g.
            AuthenticationToken. Default: None (auth method "none").
        operation_timeout_seconds (float): seconds; bounds every request (lookup, SEEK, CLOSE, ...)
            and the creation of producers, consumers and readers. Default: 30.
        connection_timeout_ms (int): milliseconds; bounds the TCP connect plus the CONNECT/CONNECTED
            handshake. Default: 10000.
        keep_alive_interval_seconds (float): seconds between PINGs; a connection whose previous PING
            got no answer, and that received nothing else, is closed. Default: 30.
        listener_name (str | None): the advertised listener to look topics up on (LOOKUP
            advertised_listener_name). Default: None (the broker's internal listener).
        max_backoff_interval_ms (int): milliseconds; the longest wait between reconnection attempts
            of a producer or consumer (the waits start at 100 ms and double). The official Python
            client has no such option (Java's ClientBuilder.maxBackoffInterval). Default: 60000.
        io_threads (int): official-client thread count; only 1 is accepted. Default: 1.
        message_listener_threads (int): official-client thread count; only 1 is accepted. Default: 1.
        concurrent_lookup_requests (int): not implemented; only 50000 is accepted. Default: 50000.
        log_conf_file_path (str | None): not implemented (the client logs through `logging`); only
            None is accepted. Default: None.
        stats_interval_in_seconds (int): seconds; not implemented, only 600 is accepted. Default: 600.
        use_tls (bool): TLS even for a pulsar:// service URL (pulsar+ssl:// implies it). Default: False.
        tls_trust_certs_file_path (str | None): PEM CAs the broker's certificate must chain to; None:
            the system's. Default: None.
        tls_allow_insecure_connection (bool): accept any broker certificate. Default: False.
        tls_validate_hostname (bool): the certificate must name the host dialled. Default: False.
        tls_private_key_file_path (str | None): the client certificate's key (mutual TLS). Default: None.
        tls_certificate_file_path (str | None): a client certificate (or use AuthenticationTLS). Default: None.
        logger (logging.Logger | None): not implemented (each module logs to its own
            `minipulsar.client.*` logger); only None is accepted. Default: None.

    Raises:
        InvalidUrl: service_url is not pulsar://host:port or pulsar+ssl://host:port.
        InvalidConfiguration: an unsupported option has a non-default value, or an unknown option is
            given (the message names it).
    """

    def __init__(self, service_url: str, authentication: Authentication | None = None,
                 operation_timeout_seconds: float = 30, connection_timeout_ms: int = 10000,
                 keep_alive_interval_seconds: float = 30, *, listener_name: str | None = None,
                 max_backoff_interval_ms: int = 60000,
                 io_threads: int = 1, message_listener_threads: int = 1, concurrent_lookup_requests: int = 50000,
                 log_conf_file_path: str | None = None, stats_interval_in_seconds: int = 600,
                 use_tls: bool = False, tls_trust_certs_file_path: str | None = None,
                 tls_allow_insecure_connection: bool = False, tls_validate_hostname: bool = False,
                 tls_private_key_file_path: str | None = None, tls_certificate_file_path: str | None = None,
                 logger=None, **unknown):
        parse_service_url(service_url)
        self.service_url = service_url
        self.operation_timeout = float(operation_timeout_seconds)
        if max_backoff_interval_ms < 100:
            raise InvalidConfiguration(f"max_backoff_interval_ms must be at least 100, got {max_backoff_interval_ms}")
        self.max_backoff_interval = max_backoff_interval_ms / 1000.0
        if unknown:
            raise InvalidConfiguration(f"Client option {next(iter(unknown))!r} is not supported by the bundled client")
        reject_unsupported(
            io_threads=(io_threads, 1), message_listener_threads=(message_listener_threads, 1),
            concurrent_lookup_requests=(concurrent_lookup_requests, 50000),
            log_conf_file_path=(log_conf_file_path, None), stats_interval_in_seconds=(stats_interval_in_seconds, 600),
            logger=(logger, None),
        )
        ssl_context = None
        if use_tls or is_tls_url(service_url):
            ssl_context = client_ssl_context(tls_trust_certs_file_path, tls_validate_hostname,
                                             tls_allow_insecure_connection, tls_certificate_file_path,
                                             tls_private_key_file_path, authentication)
        self.pool = ConnectionPool(self.operation_timeout, connection_timeout_ms / 1000.0, authentication,
                                   keep_alive_interval_seconds, ssl_context)
        self._request_ids = itertools.count()
        self._producer_ids = itertools.count()
        self._consumer_ids = itertools.count()
        self.lookup = LookupService(self.pool, service_url, self.new_request_id, listener_name or "")
        self._handles: set = set()
        self._closed = False

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    # ---- ids -------------------------------------------------------------------------------
    def new_request_id(self) -> int:
        """The next request_id of this client (shared by every connection)."""
        return next(self._request_ids)

    def new_producer_id(self) -> int:
        """The next producer_id of this client (one per partition producer)."""
        return next(self._producer_ids)

    def new_consumer_id(self) -> int:
        """The next consumer_id of this client (one per partition consumer)."""
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
        """The partition names of a topic ('<topic>-partition-<i>'), or [topic] when it is not
        partitioned (PARTITIONED_METADATA).

        Arguments:
            topic (str): topic name, short ('my-topic') or fully qualified. No default.

        Raises:
            AlreadyClosed: the client is closed.
            InvalidTopicName: topic cannot be parsed.
            Timeout: no answer within operation_timeout_seconds (retryable failures are retried).
            PulsarException: the broker's non-retryable error (e.g. AuthorizationError).
        """
        self._check_open()
        topic = normalize(topic)
        count = await self.lookup.partitions_with_retry(topic, self.operation_timeout)
        return [partition_name(topic, i) for i in range(count)] if count else [topic]

    async def get_topics_of_namespace(self, namespace: str) -> list[str]:
        """Persistent topics of a namespace, partitioned topics by their base name, sorted
        (GET_TOPICS_OF_NAMESPACE; the official client strips the partition suffix the same way).

        Arguments:
            namespace (str): 'tenant/namespace'. No default.

        Raises:
            AlreadyClosed: the client is closed.
            ConnectError: the service URL cannot be reached.
            Timeout: no answer within operation_timeout_seconds.
            PulsarException: the broker's error for the request.
        """
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
                              hashing_scheme: HashingScheme = HashingScheme.BoostHash,
                              _initial_subscription_name: str | None = None) -> Producer:
        """A producer on topic: one PRODUCER per partition of a partitioned topic, all created
        before this returns (pulsar.Client.create_producer).

        Arguments:
            topic (str): topic name, short or fully qualified. No default.
            producer_name (str | None): name to register; the broker refuses a second producer with
                the same name on the topic. Default: None (the broker assigns one).
            schema (Schema | None): how send() encodes values. Default: None (BytesSchema).
            initial_sequence_id (int | None): sequence id of the message before the first one sent.
                Default: None (continue after the broker's last_sequence_id, else start at 0).
            send_timeout_millis (int): milliseconds from send to receipt before the message fails
                with Timeout; 0 = no timeout. Default: 30000.
            compression_type (CompressionType): NONE, LZ4, ZLib, ZSTD or SNAPPY. Default: NONE.
            max_pending_messages (int): messages awaiting their receipt, per partition; 0 = no
                limit. Default: 1000.
            max_pending_messages_across_partitions (int): messages awaiting their receipt over all
                partitions (each partition gets at most this / partitions). Default: 50000.
            block_if_queue_full (bool): when the pending queue is full, wait for room instead of
                raising ProducerQueueIsFull. Default: False.
            batching_enabled (bool): group messages into batch entries. Default: False.
            batching_max_messages (int): messages per batch. Default: 1000.
            batching_max_allowed_size_in_bytes (int): bytes of payload per batch. Default: 131072.
            batching_max_publish_delay_ms (int): milliseconds a batch may wait to fill. Default: 10.
            chunking_enabled (bool): not implemented; only False is accepted. Default: False.
            message_routing_mode (PartitionsRoutingMode): partition choice for messages without a
                partition key. Default: RoundRobinDistribution.
            lazy_start_partitioned_producers (bool): not implemented (every partition producer
                starts at once); only False is accepted. Default: False.
            properties (dict[str, str] | None): producer metadata sent with PRODUCER. Default: None.
            batching_type (BatchingType): Default (one batch) or KeyBased (one batch per key).
                Default: BatchingType.Default.
            encryption_key (str | None): not implemented; only None is accepted. Default: None.
            crypto_key_reader (object | None): not implemented; only None is accepted. Default: None.
            access_mode (int): ProducerAccessMode (Shared, Exclusive, WaitForExclusive,
                ExclusiveWithFencing). Default: Shared.
            message_router (callable | None): not implemented; only None is accepted. Default: None.
            hashing_scheme (HashingScheme): how a keyed message's partition is picked; an extra
                (the C++ ProducerConfiguration's setting, which the official Python client does not
                expose): JavaStringHash or Murmur3_32Hash route as a Java producer does.
                Default: BoostHash (the official Python client's choice).

        Raises:
            AlreadyClosed: the client is closed.
            InvalidConfiguration: an unsupported option is set, or the compression package is missing.
            InvalidTopicName: topic cannot be parsed.
            Timeout: not created within operation_timeout_seconds (retryable failures are retried).
            ProducerBusy, ProducerFenced, TopicNotFound, TopicTerminated, IncompatibleSchema,
                AuthorizationError, ...: the broker refused the producer.
        """
        self._check_open()
        reject_unsupported(
            chunking_enabled=(chunking_enabled, False),
            lazy_start_partitioned_producers=(lazy_start_partitioned_producers, False),
            encryption_key=(encryption_key, None), crypto_key_reader=(crypto_key_reader, None),
            message_router=(message_router, None),
        )
        try:
            check_available(CompressionType(compression_type))
        except CodecUnavailableError as exc:
            raise InvalidConfiguration(str(exc)) from exc
        topic = normalize(topic)
        conf = ProducerConfig(
            producer_name=producer_name, schema=schema or BytesSchema(), initial_sequence_id=initial_sequence_id,
            send_timeout_millis=send_timeout_millis, compression_type=CompressionType(compression_type),
            max_pending_messages=max_pending_messages, block_if_queue_full=block_if_queue_full,
            batching_enabled=batching_enabled, batching_max_messages=batching_max_messages,
            batching_max_allowed_size_in_bytes=batching_max_allowed_size_in_bytes,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms, batching_type=BatchingType(batching_type),
            properties=properties, access_mode=int(access_mode), initial_subscription_name=_initial_subscription_name,
            hashing_scheme=HashingScheme(hashing_scheme),
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
                        dead_letter_policy=None, crypto_failure_action=None, priority_level: int = 0,
                        subscription_mode: SubscriptionMode = SubscriptionMode.Durable) -> Consumer:
        """A consumer of one topic or a list of topics: one SUBSCRIBE per partition, all
        subscribed before this returns (pulsar.Client.subscribe).

        Arguments:
            topic (str | list[str]): topic name(s), short or fully qualified; no regex. No default.
            subscription_name (str): the subscription to join or create. No default.
            consumer_type (ConsumerType): Exclusive, Shared, Failover, KeyShared or KeyFailover
                (minipulsar's SubType 4). Default: Exclusive.
            schema (Schema | None): how Message.value() decodes payloads. Default: None (BytesSchema).
            message_listener (callable | None): listener(consumer, message), sync or async, called
                for every message in a background task. Default: None (use receive()).
            receiver_queue_size (int): messages the broker may push ahead (FLOW permits), per
                partition; 0 is treated as 1. Default: 1000.
            max_total_receiver_queue_size_across_partitions (int): messages, over all partitions and
                topics: each partition's queue is at most this / number of partitions. Default: 50000.
            consumer_name (str | None): Default: None (10 random hex characters).
            unacked_messages_timeout_ms (int | None): milliseconds after which a received but
                unacknowledged message is redelivered; at least 1000. Default: None (never).
            broker_consumer_stats_cache_time_ms (int): milliseconds; consumer stats are not
                implemented, only 30000 is accepted. Default: 30000.
            negative_ack_redelivery_delay_ms (int): milliseconds from negative_acknowledge to
                redelivery. Default: 60000.
            is_read_compacted (bool): read the compacted view of the topic. Default: False.
            properties (dict[str, str] | None): consumer metadata sent with SUBSCRIBE. Default: None.
            pattern_auto_discovery_period (int): seconds; regex subscriptions are not implemented,
                only 60 is accepted. Default: 60.
            initial_position (InitialPosition): where a new subscription starts: Latest or Earliest.
                Default: Latest.
            crypto_key_reader (object | None): not implemented; only None is accepted. Default: None.
            replicate_subscription_state_enabled (bool): replicate this subscription's position to
                the other clusters (PIP-33). Default: False.
            max_pending_chunked_message (int): chunking is not implemented; only 10 is accepted.
                Default: 10.
            auto_ack_oldest_chunked_message_on_queue_full (bool): only False is accepted. Default: False.
            start_message_id_inclusive (bool): accepted for compatibility; seek(message_id) on a
                consumer always delivers the sought message itself (the broker resets onto it).
                Default: False.
            batch_receive_policy (object | None): not implemented; only None is accepted. Default: None.
            key_shared_policy (ConsumerKeySharedPolicy | None): KeyShared options; only with
                consumer_type KeyShared. Default: None (AutoSplit, ordered delivery).
            batch_index_ack_enabled (bool): acknowledge single messages of a batch on the broker
                (ack_set, PIP-54). Default: False.
            regex_subscription_mode (RegexSubscriptionMode | None): regex subscriptions are not
                implemented; only None or PersistentOnly is accepted. Default: None.
            dead_letter_policy (ConsumerDeadLetterPolicy | None): where messages go after too many
                redeliveries. Default: None (redeliver forever).
            crypto_failure_action (ConsumerCryptoFailureAction | None): decryption is not
                implemented; only None or FAIL is accepted. Default: None.
            priority_level (int): dispatch priority on Shared subscriptions, 0 = highest. Default: 0.
            subscription_mode (SubscriptionMode): an extra (Java's ConsumerBuilder.subscriptionMode):
                NonDurable keeps no cursor on disk; the subscription starts at initial_position
                and goes with its last consumer. Default: Durable.

        Raises:
            AlreadyClosed: the client is closed.
            InvalidConfiguration: an unsupported option is set, or options contradict each other.
            InvalidTopicName: a topic cannot be parsed.
            Timeout: not subscribed within operation_timeout_seconds (retryable failures are retried).
            ConsumerBusy, ConsumerAssignError, TopicNotFound, SubscriptionNotFound, IncompatibleSchema,
                AuthorizationError, ...: the broker refused the subscription.
        """
        self._check_open()
        reject_unsupported(
            crypto_key_reader=(crypto_key_reader, None), batch_receive_policy=(batch_receive_policy, None),
            broker_consumer_stats_cache_time_ms=(broker_consumer_stats_cache_time_ms, 30000),
            pattern_auto_discovery_period=(pattern_auto_discovery_period, 60),
            max_pending_chunked_message=(max_pending_chunked_message, 10),
            auto_ack_oldest_chunked_message_on_queue_full=(auto_ack_oldest_chunked_message_on_queue_full, False),
            regex_subscription_mode=(regex_subscription_mode, 0),  # RegexSubscriptionMode.PersistentOnly
            crypto_failure_action=(crypto_failure_action, 0),  # ConsumerCryptoFailureAction.FAIL
        )
        if unacked_messages_timeout_ms is not None and 0 < unacked_messages_timeout_ms < 1000:
            raise InvalidConfiguration("unacked_messages_timeout_ms must be at least 1000")
        if key_shared_policy is not None and ConsumerType(consumer_type) != ConsumerType.KeyShared:
            raise InvalidConfiguration("key_shared_policy applies only to consumer_type=ConsumerType.KeyShared")
        conf = ConsumerConfig(
            subscription_name=subscription_name, consumer_type=ConsumerType(consumer_type),
            schema=schema or BytesSchema(), receiver_queue_size=receiver_queue_size, consumer_name=consumer_name,
            max_total_receiver_queue_size_across_partitions=max_total_receiver_queue_size_across_partitions,
            unacked_messages_timeout_ms=unacked_messages_timeout_ms or None,
            negative_ack_redelivery_delay_ms=negative_ack_redelivery_delay_ms, properties=properties,
            initial_position=InitialPosition(initial_position),
            replicate_subscription_state_enabled=replicate_subscription_state_enabled,
            key_shared_policy=key_shared_policy, batch_index_ack_enabled=batch_index_ack_enabled,
            dead_letter_policy=dead_letter_policy, is_read_compacted=is_read_compacted,
            priority_level=priority_level, start_message_id_inclusive=start_message_id_inclusive,
            durable=SubscriptionMode(subscription_mode) == SubscriptionMode.Durable,
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
        """A Reader of topic: a non-durable Exclusive subscription starting at start_message_id
        (pulsar.Client.create_reader).

        Arguments:
            topic (str): topic name, short or fully qualified. No default.
            start_message_id (MessageId): MessageId.earliest, MessageId.latest or a message's id.
                No default.
            schema (Schema | None): how Message.value() decodes payloads. Default: None (BytesSchema).
            reader_listener (callable | None): not implemented; only None is accepted. Default: None.
            receiver_queue_size (int): messages the broker may push ahead, per partition. Default: 1000.
            reader_name (str | None): the consumer name. Default: None (10 random hex characters).
            subscription_role_prefix (str | None): prefix of the subscription name
                '<prefix>-<10 hex>'. Default: None ('reader').
            is_read_compacted (bool): read the compacted view of the topic. Default: False.
            crypto_key_reader (object | None): not implemented; only None is accepted. Default: None.
            start_message_id_inclusive (bool): also read the message at start_message_id.
                Default: False.

        Raises:
            AlreadyClosed: the client is closed.
            InvalidConfiguration: an unsupported option is set.
            InvalidTopicName: topic cannot be parsed.
            Timeout: not subscribed within operation_timeout_seconds.
            TopicNotFound, AuthorizationError, ...: the broker refused the reader.
        """
        self._check_open()
        reject_unsupported(reader_listener=(reader_listener, None), crypto_key_reader=(crypto_key_reader, None))
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
        """Close every producer, consumer and reader this client created, then its connections.
        Idempotent; raises nothing (a handle failing to close is still forgotten)."""
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
