"""What replication needs once per broker: the cluster settings and one bundled-client Client per
remote cluster, shared by every replicator toward it.

Topics reach it through their TopicContext (remotes_for, client_for); the Broker loads the
stored topics of replicated namespaces at start-up and after a change of clusters or policies
(Broker.load_replicated_topics), since a replicated topic must run while nobody uses it here.
Source: Pulsar BrokerService (replicationClients per cluster).
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable

from minipulsar.broker.replication.clusters import ClusterSettings
from minipulsar.client.client import Client

if TYPE_CHECKING:
    from minipulsar.broker.config import BrokerConfig
    from minipulsar.broker.metadata_store import MetadataStore
    from minipulsar.client.auth import Authentication

log = logging.getLogger(__name__)


class ReplicationClients:
    """The peers are the clusters of `replicationClusters` plus those created with a broker
    service URL through the admin API (the metadata store's "clusters"); a namespace replicates to
    the clusters of its `replication` policy (replication_policy(namespace), None when unset),
    else to those `namespaceReplicationClusters` names. authentication() gives the
    brokerClientAuthenticationPlugin's credentials; spawn(coro) runs a background coroutine the
    broker waits for. Raises ConfigError when the settings are malformed."""

    def __init__(self, config: "BrokerConfig", metadata: "MetadataStore",
                 replication_policy: Callable[[str], list[str] | None],
                 authentication: Callable[[], "Authentication | None"], spawn: Callable) -> None:
        self.config = config
        self.configured = ClusterSettings.from_config(config)
        self._metadata = metadata
        self._replication_policy = replication_policy
        self._authentication = authentication
        self._spawn = spawn
        self._clients: dict[str, tuple[str, Client]] = {}  # remote -> (its URL, its client)

    def peers(self) -> dict[str, str]:
        """Remote cluster name -> broker service URL."""
        peers = dict(self.configured.peers)
        for name, data in self._metadata.data.get("clusters", {}).items():
            if data.get("brokerServiceUrl"):
                peers[name] = data["brokerServiceUrl"]
        peers.pop(self.configured.local, None)
        return peers

    def remotes_for(self, namespace: str) -> list[str]:
        """Remote clusters a topic of namespace ('tenant/ns') replicates to, sorted; [] = none."""
        policy = self._replication_policy(namespace)
        if policy is None:
            return self.configured.remotes_for(namespace)
        peers = self.peers()
        return sorted(c for c in policy if c in peers)

    def client_for(self, remote: str) -> Client:
        """The Client for remote's service URL (created on first use, again when the URL changed)."""
        url = self.peers()[remote]
        known = self._clients.get(remote)
        if known is not None and known[0] == url:
            return known[1]
        if known is not None:
            self._spawn(known[1].close())
        config = self.config
        # The broker's keep-alive interval also bounds how long a dead remote goes unnoticed
        # (at most two intervals); the back-off cap bounds the wait once it is back.
        # brokerClientAuthenticationPlugin / Parameters: the remote cluster authenticates replicators
        # like any client (give that role super-user rights there, as in Pulsar).
        client = Client(url, operation_timeout_seconds=10, connection_timeout_ms=5000,
                        keep_alive_interval_seconds=config.keep_alive_interval_seconds,
                        max_backoff_interval_ms=config.replication_max_backoff_interval_seconds * 1000,
                        authentication=self._authentication())
        self._clients[remote] = (url, client)
        return client

    async def close(self) -> None:
        """Close the clients (after the topics, whose replicators use them)."""
        clients, self._clients = [client for _, client in self._clients.values()], {}
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
