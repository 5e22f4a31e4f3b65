"""Broker settings: one dataclass, loaded from a broker.conf-style file, MINIPULSAR_* variables and flags.

Keys keep Apache Pulsar's broker.conf names (ServiceConfiguration) where Pulsar has one; the
dataclass fields are their snake_case forms. Precedence, lowest first: defaults, the file,
MINIPULSAR_<key> environment variables (key as in the file, e.g. MINIPULSAR_brokerServicePort or
MINIPULSAR_BROKERSERVICEPORT), command-line flags. A value that does not parse stops start-up with a
ConfigError naming the key.
"""
from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from minipulsar.storage import ManagedLedgerConfig


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the key."""


# Pulsar's ports are Optional: an empty brokerServicePort / webServicePort turns that plain listener
# off (brokerServicePortTls / webServicePortTls serve instead; broker/security/settings.py checks).
PORT_OFF = -1
_OPTIONAL_PORTS = ("brokerServicePort", "webServicePort")


SCHEMA_STRATEGIES = ("ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
                     "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE")


@dataclass
class BrokerConfig:
    """Every setting the broker reads. Units are in the Pulsar key names (Millis, Seconds, Mbytes)."""

    cluster_name: str = "standalone"  # clusterName
    data_dir: str = "./data"  # minipulsar's own: where ledgers and cursors live
    bind_address: str = "0.0.0.0"  # bindAddress
    advertised_address: str = ""  # advertisedAddress; empty = bind address, or 127.0.0.1 for 0.0.0.0
    broker_service_port: int = 6650  # brokerServicePort
    web_service_port: int = 8080  # webServicePort
    web_console_enabled: bool = True  # webConsoleEnabled (minipulsar's own): the web console at / of the web ports
    max_message_size: int = 5 * 1024 * 1024  # maxMessageSize (bytes)
    max_pending_publish_requests_per_connection: int = 1000  # maxPendingPublishRequestsPerConnection
    # maxMessagePublishBufferSizeInMB: SEND bytes held until durable, all connections together
    # (broker/publish_buffer.py); -1 or 0 = no limit. Pulsar's default is half the JVM's direct memory.
    max_message_publish_buffer_size_in_mb: int = 128
    # ---- admission limits (broker/limits.py); 0 = no limit, Pulsar's defaults ----
    broker_max_connections: int = 0  # brokerMaxConnections
    broker_max_connections_per_ip: int = 0  # brokerMaxConnectionsPerIp
    max_topics_per_namespace: int = 0  # maxTopicsPerNamespace
    max_producers_per_topic: int = 0  # maxProducersPerTopic
    max_consumers_per_subscription: int = 0  # maxConsumersPerSubscription
    max_concurrent_lookup_request: int = 50000  # maxConcurrentLookupRequest (past it: TooManyRequests)
    # ---- deleting inactive topics (broker/inactive_topics.py), Pulsar's defaults ----
    broker_delete_inactive_topics_enabled: bool = True  # brokerDeleteInactiveTopicsEnabled
    broker_delete_inactive_topics_frequency_seconds: int = 60  # brokerDeleteInactiveTopicsFrequencySeconds
    broker_delete_inactive_topics_mode: str = "delete_when_no_subscriptions"  # brokerDeleteInactiveTopicsMode
    # brokerDeleteInactiveTopicsMaxInactiveDurationSeconds; 0 = the frequency (Pulsar's unset value)
    broker_delete_inactive_topics_max_inactive_duration_seconds: int = 0
    keep_alive_interval_seconds: int = 30  # keepAliveIntervalSeconds
    allow_auto_topic_creation: bool = True  # allowAutoTopicCreation
    allow_auto_topic_creation_type: str = "non-partitioned"  # allowAutoTopicCreationType
    default_num_partitions: int = 1  # defaultNumPartitions
    dispatcher_max_read_batch_size: int = 100  # dispatcherMaxReadBatchSize (entries)
    dispatcher_max_read_size_bytes: int = 5 * 1024 * 1024  # dispatcherMaxReadSizeBytes
    connection_write_high_water_mark_bytes: int = 4 * 1024 * 1024  # minipulsar's own
    subscription_key_shared_use_consistent_hashing: bool = True  # subscriptionKeySharedUseConsistentHashing
    subscription_key_shared_consistent_hashing_replica_points: int = 100  # ...ConsistentHashingReplicaPoints
    # Key_Shared look-ahead (Pulsar 4.x names and defaults; 0 turns that part of the bound off)
    key_shared_look_ahead_msg_in_replay_threshold_per_consumer: int = 2000
    key_shared_look_ahead_msg_in_replay_threshold_per_subscription: int = 20000
    managed_ledger_max_entries_per_ledger: int = 50000  # managedLedgerMaxEntriesPerLedger
    managed_ledger_max_size_per_ledger_mbytes: int = 2048  # managedLedgerMaxSizePerLedgerMbytes
    journal_sync_data: bool = True  # journalSyncData
    # The journal and the ledger storage behind it (storage/journal.py, storage/ledger_storage.py),
    # under BookKeeper's bookie key names and defaults:
    journal_max_size_mb: int = 2048  # journalMaxSizeMB: a new journal file past this size
    journal_pre_alloc_size_mb: int = 16  # journalPreAllocSizeMB: a run of zeros written ahead of the journal's records
    flush_interval: int = 10000  # flushInterval (ms): checkpoints of the segments behind the journal
    open_file_limit: int = 1000  # openFileLimit: segment write descriptors kept open (an LRU)
    default_retention_time_in_minutes: int = 0  # defaultRetentionTimeInMinutes
    default_retention_size_in_mb: int = 0  # defaultRetentionSizeInMB
    managed_ledger_max_unacked_ranges_to_persist: int = 10000  # managedLedgerMaxUnackedRangesToPersist
    dispatcher_pause_on_ack_state_persistent_enabled: bool = False  # dispatcherPauseOnAckStatePersistentEnabled
    managed_ledger_default_mark_delete_rate_limit: float = 1.0  # managedLedgerDefaultMarkDeleteRateLimit
    managed_ledger_cache_size_mb: int = 64  # managedLedgerCacheSizeMB
    # Geo-replication and PIP-33 (parsed in broker/replication/clusters.py; see docs/replication.md)
    replication_clusters: str = ""  # peer clusters "name=pulsar://host:port,..." (admin PUT /clusters later)
    namespace_replication_clusters: str = ""  # "tenant/ns=c1,c2;tenant/ns2=*" (namespace policy later)
    replicator_prefix: str = "pulsar.repl"  # replicatorPrefix
    replication_producer_queue_size: int = 1000  # replicationProducerQueueSize (entries in flight)
    # minipulsar's own (Pulsar's replication client uses the client default, 60 s): the longest wait
    # between a replicator's reconnection attempts, so catch-up starts soon after a partition heals
    replication_max_backoff_interval_seconds: int = 5  # replicationMaxBackoffIntervalSeconds
    enable_replicated_subscriptions: bool = True  # enableReplicatedSubscriptions
    replicated_subscriptions_snapshot_frequency_millis: int = 1000  # replicatedSubscriptionsSnapshotFrequencyMillis
    replicated_subscriptions_snapshot_timeout_seconds: int = 30  # replicatedSubscriptionsSnapshotTimeoutSeconds
    replicated_subscriptions_snapshot_max_cached_per_subscription: int = 10  # ...MaxCachedPerSubscription
    # ---- application features (issue 7) ----
    extra_namespaces: str = ""  # minipulsar's own until the admin API: "tenant/ns,tenant2/ns2" that exist besides public/default
    delayed_delivery_enabled: bool = True  # delayedDeliveryEnabled
    delayed_delivery_tick_time_millis: int = 1000  # delayedDeliveryTickTimeMillis
    is_delayed_delivery_deliver_at_time_strict: bool = False  # isDelayedDeliveryDeliverAtTimeStrict
    broker_deduplication_enabled: bool = False  # brokerDeduplicationEnabled
    broker_deduplication_entries_interval: int = 1000  # brokerDeduplicationEntriesInterval (entries between snapshots)
    broker_deduplication_snapshot_interval_seconds: int = 120  # brokerDeduplicationSnapshotIntervalSeconds
    acknowledgment_at_batch_index_level_enabled: bool = False  # acknowledgmentAtBatchIndexLevelEnabled
    subscription_redelivery_tracker_enabled: bool = True  # subscriptionRedeliveryTrackerEnabled
    advertised_listeners: str = ""  # advertisedListeners: "name:pulsar://host:port,other:pulsar://host:port"
    internal_listener_name: str = ""  # internalListenerName (default: the first advertised listener)
    schema_compatibility_strategy: str = "FULL"  # schemaCompatibilityStrategy
    enable_broker_side_subscription_pattern_evaluation: bool = True  # enableBrokerSideSubscriptionPatternEvaluation
    subscription_pattern_max_length: int = 50  # subscriptionPatternMaxLength
    # ---- namespace policy defaults (broker/namespace_policies.py) ----
    message_expiry_check_interval_in_minutes: int = 5  # messageExpiryCheckIntervalInMinutes
    ttl_duration_default_in_seconds: int = 0  # ttlDurationDefaultInSeconds (0 = no TTL)
    max_unacked_messages_per_consumer: int = 50000  # maxUnackedMessagesPerConsumer (0 = no limit)
    is_allow_auto_update_schema_enabled: bool = True  # isAllowAutoUpdateSchemaEnabled
    backlog_quota_check_interval_in_seconds: int = 60  # backlogQuotaCheckIntervalInSeconds
    backlog_quota_default_limit_bytes: int = -1  # backlogQuotaDefaultLimitBytes (-1 = none)
    backlog_quota_default_limit_second: int = -1  # backlogQuotaDefaultLimitSecond (-1 = none)
    backlog_quota_default_retention_policy: str = "producer_request_hold"  # backlogQuotaDefaultRetentionPolicy
    # subscriptionTypesEnabled: Pulsar's four, plus Key_Failover, which only minipulsar has
    subscription_types_enabled: str = "Exclusive,Shared,Failover,Key_Shared,Key_Failover"
    # ---- topic compaction and non-persistent topics ----
    broker_service_compaction_threshold_in_bytes: int = 0  # brokerServiceCompactionThresholdInBytes (0 = off)
    broker_service_compaction_monitor_interval_in_seconds: int = 60  # brokerServiceCompactionMonitorIntervalInSeconds
    enable_non_persistent_topics: bool = True  # enableNonPersistentTopics
    expose_topic_level_metrics_in_prometheus: bool = True  # exposeTopicLevelMetricsInPrometheus (false: per namespace)
    # ---- the WebSocket API on the web ports (broker/web/websocket, docs/websocket.md) ----
    web_socket_service_enabled: bool = True  # webSocketServiceEnabled (standalone.conf's true; broker.conf's false)
    web_socket_session_idle_timeout_millis: int = 300000  # webSocketSessionIdleTimeoutMillis (0: never)
    web_socket_max_text_frame_size: int = 1048576  # webSocketMaxTextFrameSize (bytes; larger: close 1009)
    web_socket_ping_duration_seconds: int = -1  # webSocketPingDurationSeconds (<= 0: no pings)
    # Accepted for Pulsar's broker.conf, with no effect: sessions run on the broker's one event loop
    # and share the bundled client's one connection.
    web_socket_num_io_threads: int = 8  # webSocketNumIoThreads
    web_socket_connections_per_broker: int = 8  # webSocketConnectionsPerBroker
    stats_update_frequency_in_secs: int = 60  # statsUpdateFrequencyInSecs: the interval topic stats' rates cover
    running_standalone: bool = False  # Pulsar's runningStandalone: set by `minipulsar standalone` (lookups)
    # ---- security: authentication, authorization, TLS (broker/security/, docs/security.md) ----
    authentication_enabled: bool = False  # authenticationEnabled
    authentication_providers: str = ""  # authenticationProviders: Pulsar provider class names, comma-separated
    authentication_refresh_check_seconds: int = 60  # authenticationRefreshCheckSeconds
    anonymous_user_role: str = ""  # anonymousUserRole: the role of clients without credentials (empty: refused)
    authorization_enabled: bool = False  # authorizationEnabled
    super_user_roles: str = ""  # superUserRoles, comma-separated
    authenticate_metrics_endpoint: bool = False  # authenticateMetricsEndpoint
    token_secret_key: str = ""  # tokenSecretKey: file:///path, data:;base64,..., or base64 (HS256/384/512)
    token_public_key: str = ""  # tokenPublicKey: same forms (RS*/PS*/ES*), DER or PEM
    token_public_alg: str = ""  # tokenPublicAlg: the public key's algorithm (empty: RS256, as Pulsar)
    token_auth_claim: str = "sub"  # tokenAuthClaim: the claim holding the role
    token_audience_claim: str = ""  # tokenAudienceClaim (e.g. aud); needs tokenAudience
    token_audience: str = ""  # tokenAudience: the audience that stands for this broker
    # basicAuthConf: htpasswd data for AuthenticationProviderBasic (file path, file:/data: URL or
    # base64); empty: the -Dpulsar.auth.basic.conf system property (broker/security/basic_provider.py)
    basic_auth_conf: str = ""
    broker_service_port_tls: str = ""  # brokerServicePortTls (empty: off; Pulsar's usual value 6651)
    web_service_port_tls: str = ""  # webServicePortTls (empty: off; Pulsar's usual value 8443)
    tls_certificate_file_path: str = ""  # tlsCertificateFilePath (PEM)
    tls_key_file_path: str = ""  # tlsKeyFilePath (PEM)
    tls_trust_certs_file_path: str = ""  # tlsTrustCertsFilePath: CAs client certificates are checked against
    tls_require_trusted_client_cert_on_connect: bool = False  # tlsRequireTrustedClientCertOnConnect
    tls_protocols: str = ""  # tlsProtocols, e.g. "TLSv1.3,TLSv1.2" (empty: the ssl module's defaults)
    tls_ciphers: str = ""  # tlsCiphers: OpenSSL cipher names, comma-separated (empty: defaults)
    tls_cert_refresh_check_duration_sec: int = 300  # tlsCertRefreshCheckDurationSec (0: never reload)
    broker_client_authentication_plugin: str = ""  # brokerClientAuthenticationPlugin (replicators, health check)
    broker_client_authentication_parameters: str = ""  # brokerClientAuthenticationParameters
    # ---- Pulsar Functions (functions/, docs/functions.md) ----
    functions_worker_enabled: bool = True  # functionsWorkerEnabled (on, as `pulsar standalone`; -nfw turns it off)
    # minipulsar's own: the function instances' negative-ack redelivery delay (the client's default, 60 s)
    functions_negative_ack_redelivery_delay_ms: int = 60000
    extra: dict[str, str] = field(default_factory=dict)  # unknown keys, kept so they can be reported

    def ledger_config(self) -> ManagedLedgerConfig:
        """The storage settings derived from this config."""
        return ManagedLedgerConfig(
            max_entries_per_ledger=self.managed_ledger_max_entries_per_ledger,
            max_size_per_ledger_mb=self.managed_ledger_max_size_per_ledger_mbytes,
            sync_data=self.journal_sync_data,
            retention_time_minutes=self.default_retention_time_in_minutes,
            retention_size_mb=self.default_retention_size_in_mb,
            max_unacked_ranges_to_persist=self.managed_ledger_max_unacked_ranges_to_persist,
            mark_delete_rate_limit=self.managed_ledger_default_mark_delete_rate_limit,
            entry_cache_size_mb=self.managed_ledger_cache_size_mb,
            journal_max_size_mb=self.journal_max_size_mb,
            journal_pre_alloc_size_mb=self.journal_pre_alloc_size_mb,
            open_file_limit=self.open_file_limit,
            flush_interval_ms=self.flush_interval,
        )

    @property
    def advertised_host(self) -> str:
        """The host clients are told to connect to in LOOKUP answers."""
        if self.advertised_address:
            return self.advertised_address
        return "127.0.0.1" if self.bind_address in ("0.0.0.0", "::", "") else self.bind_address

    @property
    def broker_service_url(self) -> str:
        """pulsar://host:port, or "" when the plain port is off (a TLS port serves instead)."""
        if self.broker_service_port == PORT_OFF:
            return ""
        return f"pulsar://{self.advertised_host}:{self.broker_service_port}"


def _pulsar_keys() -> frozenset[str]:
    """Apache Pulsar's broker.conf keys, shipped beside this module (pulsar_config_keys.txt)."""
    text = (Path(__file__).parent / "pulsar_config_keys.txt").read_text()
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


PULSAR_KEYS = _pulsar_keys()


def unused_keys_report(extra: Mapping[str, str]) -> tuple[list[str], list[tuple[str, str | None]]]:
    """Split keys minipulsar does not read into Pulsar's own (ignored, as a user's broker.conf carries
    many) and unknown ones, each with the closest known key (difflib) or None: a typo to warn about."""
    known = sorted(set(_FIELDS) | PULSAR_KEYS)
    pulsar, unknown = [], []
    for key in sorted(extra):
        if key in PULSAR_KEYS:
            pulsar.append(key)
        else:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            unknown.append((key, close[0] if close else None))
    return pulsar, unknown


def runtime_values(config: BrokerConfig) -> dict[str, str]:
    """Every setting by its Pulsar key, as strings (GET /admin/v2/brokers/configuration/runtime);
    settings that may hold a secret (a data: key, a token) show as ******** when set."""
    values = {key: _to_text(getattr(config, spec.name)) for key, spec in _FIELDS.items()}
    return {key: "********" if key in SECRET_KEYS and value else value for key, value in values.items()}


# Settings whose value may be a secret itself (tokenSecretKey as data: or base64, a token in the
# parameters): never shown by the admin API.
SECRET_KEYS = frozenset(("tokenSecretKey", "brokerClientAuthenticationParameters", "basicAuthConf"))


def _to_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# BookKeeper's keys that minipulsar reads (its bookie runs inside the broker), in their spelling.
BOOKKEEPER_KEYS = frozenset(("journalSyncData", "journalMaxSizeMB", "journalPreAllocSizeMB", "flushInterval",
                             "openFileLimit"))
_PULSAR_SPELLING = {key.lower(): key for key in PULSAR_KEYS | BOOKKEEPER_KEYS}


def pulsar_key(field_name: str) -> str:
    """snake_case field -> Pulsar's camelCase key: 'broker_service_port' -> 'brokerServicePort',
    in Pulsar's own spelling where it has the key ('..._size_mb' -> 'managedLedgerCacheSizeMB')."""
    head, *rest = field_name.split("_")
    key = head + "".join(part[:1].upper() + part[1:] for part in rest)
    return _PULSAR_SPELLING.get(key.lower(), key)


_FIELDS = {pulsar_key(f.name): f for f in dataclasses.fields(BrokerConfig) if f.name != "extra"}
# The settings Pulsar marks dynamic (@FieldContext(dynamic = true) in ServiceConfiguration) that
# apply here; /admin/v2/brokers/configuration lists them and may change them while running. The
# dispatcher read limits and the replicator queue size apply to dispatchers and replicators
# created after the change, as in Pulsar.
DYNAMIC_KEYS = (
    "allowAutoTopicCreation", "allowAutoTopicCreationType", "defaultNumPartitions",
    "dispatcherMaxReadBatchSize", "dispatcherMaxReadSizeBytes", "dispatcherPauseOnAckStatePersistentEnabled",
    "replicationProducerQueueSize", "brokerDeleteInactiveTopicsEnabled", "brokerDeleteInactiveTopicsFrequencySeconds",
    "brokerDeleteInactiveTopicsMode", "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds",
)
# Matching ignores case and punctuation, so Pulsar's "defaultRetentionSizeInMB" and
# MINIPULSAR_DEFAULT_RETENTION_SIZE_IN_MB both find their field.
_BY_LOWER = {key.lower(): key for key in _FIELDS}
_VALIDATORS = {
    "allowAutoTopicCreationType": lambda v: v in ("non-partitioned", "partitioned"),
    "maxMessageSize": lambda v: 0 < v <= 100 * 1024 * 1024,
    "defaultNumPartitions": lambda v: v >= 1,
    "brokerServicePort": lambda v: 0 <= v <= 65535,
    "webServicePort": lambda v: 0 <= v <= 65535,
    "managedLedgerMaxEntriesPerLedger": lambda v: v >= 1,
    "journalMaxSizeMB": lambda v: v >= 1,
    "journalPreAllocSizeMB": lambda v: v >= 1,
    "flushInterval": lambda v: v >= 1,
    "openFileLimit": lambda v: v >= 1,
    "managedLedgerMaxSizePerLedgerMbytes": lambda v: v >= 1,
    "managedLedgerMaxUnackedRangesToPersist": lambda v: v >= 0,
    "managedLedgerDefaultMarkDeleteRateLimit": lambda v: v >= 0,
    "maxPendingPublishRequestsPerConnection": lambda v: v >= 1,
    "maxMessagePublishBufferSizeInMB": lambda v: v >= -1,
    "brokerMaxConnections": lambda v: v >= 0,
    "brokerMaxConnectionsPerIp": lambda v: v >= 0,
    "maxTopicsPerNamespace": lambda v: v >= 0,
    "maxProducersPerTopic": lambda v: v >= 0,
    "maxConsumersPerSubscription": lambda v: v >= 0,
    "maxConcurrentLookupRequest": lambda v: v >= 1,
    "brokerDeleteInactiveTopicsFrequencySeconds": lambda v: v >= 1,
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": lambda v: v >= 0,
    "brokerDeleteInactiveTopicsMode": lambda v: v in ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"),
    "dispatcherMaxReadBatchSize": lambda v: v >= 1,
    "keepAliveIntervalSeconds": lambda v: v >= 1,
    "subscriptionKeySharedConsistentHashingReplicaPoints": lambda v: v >= 1,
    "keySharedLookAheadMsgInReplayThresholdPerConsumer": lambda v: v >= 0,
    "keySharedLookAheadMsgInReplayThresholdPerSubscription": lambda v: v >= 0,
    "replicationProducerQueueSize": lambda v: v >= 1,
    "replicationMaxBackoffIntervalSeconds": lambda v: v >= 1,
    "replicatedSubscriptionsSnapshotFrequencyMillis": lambda v: v >= 1,
    "replicatedSubscriptionsSnapshotTimeoutSeconds": lambda v: v >= 1,
    "replicatedSubscriptionsSnapshotMaxCachedPerSubscription": lambda v: v >= 1,
    "delayedDeliveryTickTimeMillis": lambda v: v >= 1,
    "brokerDeduplicationEntriesInterval": lambda v: v >= 1,
    "brokerDeduplicationSnapshotIntervalSeconds": lambda v: v >= 0,
    "schemaCompatibilityStrategy": lambda v: v in SCHEMA_STRATEGIES,
    "messageExpiryCheckIntervalInMinutes": lambda v: v >= 1,
    "ttlDurationDefaultInSeconds": lambda v: v >= 0,
    "maxUnackedMessagesPerConsumer": lambda v: v >= 0,
    "backlogQuotaCheckIntervalInSeconds": lambda v: v >= 1,
    "backlogQuotaDefaultLimitBytes": lambda v: v >= -1,
    "backlogQuotaDefaultLimitSecond": lambda v: v >= -1,
    "backlogQuotaDefaultRetentionPolicy": lambda v: v in (
        "producer_request_hold", "producer_exception", "consumer_backlog_eviction"),
    "brokerServiceCompactionThresholdInBytes": lambda v: v >= 0,
    "statsUpdateFrequencyInSecs": lambda v: v >= 1,
    "brokerServiceCompactionMonitorIntervalInSeconds": lambda v: v >= 1,
    # security (cross-key checks, key files and providers: broker/security/settings.py)
    "authenticationRefreshCheckSeconds": lambda v: v >= 1,
    "tlsCertRefreshCheckDurationSec": lambda v: v >= 0,
    "brokerServicePortTls": lambda v: v == "" or (v.isdigit() and int(v) <= 65535),
    "webServicePortTls": lambda v: v == "" or (v.isdigit() and int(v) <= 65535),
    "webSocketSessionIdleTimeoutMillis": lambda v: v >= 0,
    "webSocketMaxTextFrameSize": lambda v: v >= 1,
    "webSocketNumIoThreads": lambda v: v >= 1,
    "webSocketConnectionsPerBroker": lambda v: v >= 1,
    "functionsNegativeAckRedeliveryDelayMs": lambda v: v >= 1,
    "subscriptionTypesEnabled": lambda v: bool(v.strip()) and all(
        t.strip() in ("Exclusive", "Shared", "Failover", "Key_Shared", "Key_Failover") for t in v.split(",") if t.strip()),
}


def _convert(key: str, raw: Any, kind: Any) -> Any:
    text = str(raw).strip()
    try:
        if kind in (bool, "bool"):
            if text.lower() in ("true", "1", "yes", "on"):
                return True
            if text.lower() in ("false", "0", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if kind in (int, "int"):
            return int(text)
        if kind in (float, "float"):
            return float(text)
        return text
    except ValueError as exc:
        raise ConfigError(f"config key {key}: invalid value {text!r} ({exc})") from None


def parse_conf_file(path: str | Path) -> dict[str, str]:
    """key=value lines of a Pulsar broker.conf; '#' starts a comment. Raises ConfigError on a bad line."""
    values = {}
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise ConfigError(f"{path}:{number}: expected key=value, got {line!r}")
        key, value = line.split("=", 1)
        values[key.strip()] = value.strip()
    return values


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    """MINIPULSAR_<key> variables, keyed by the part after the prefix."""
    return {name[len("MINIPULSAR_") :]: value for name, value in environ.items() if name.startswith("MINIPULSAR_")}


def build_config(*layers: Mapping[str, Any]) -> BrokerConfig:
    """A BrokerConfig from layers of {pulsarKey: value}, later layers winning.

    Keys match case-insensitively; an empty value in a file means "keep the default", as in
    broker.conf, except for brokerServicePort and webServicePort, where it turns that plain port off
    (PORT_OFF), as in Pulsar. Unknown keys are kept in .extra (Pulsar has hundreds we do not read).
    Raises ConfigError naming the key for an unparsable or out-of-range value.
    """
    config = BrokerConfig()
    for layer in layers:
        for raw_key, value in layer.items():
            key = _BY_LOWER.get(re.sub(r"[^A-Za-z0-9]", "", raw_key).lower())
            if value is None or (isinstance(value, str) and value == ""):
                if value == "" and key in _OPTIONAL_PORTS:
                    setattr(config, _FIELDS[key].name, PORT_OFF)
                continue
            if key is None:
                config.extra[raw_key] = str(value)
                continue
            _apply(config, key, value)
    return config


def apply_setting(config: BrokerConfig, key: str, value: Any) -> None:
    """Set one setting by its Pulsar key (matched loosely); raises ConfigError for unknown keys and bad values."""
    canonical = _BY_LOWER.get(re.sub(r"[^A-Za-z0-9]", "", key).lower())
    if canonical is None:
        raise ConfigError(f"config key {key}: unknown setting")
    _apply(config, canonical, value)


def _apply(config: BrokerConfig, key: str, value: Any) -> None:
    spec = _FIELDS[key]
    converted = _convert(key, value, spec.type)
    check = _VALIDATORS.get(key)
    if check is not None and not check(converted):
        raise ConfigError(f"config key {key}: value {converted!r} is out of range")
    setattr(config, spec.name, converted)
