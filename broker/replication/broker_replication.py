"""What replication needs once per broker: the cluster settings, one bundled-client Client per
remote cluster (shared by every replicator toward it), and loading replicated topics at start-up.

Topics load lazily in minipulsar (on the first lookup, producer or consumer). A replicated topic
must also run while nobody uses it here, or its replication backlog would wait for a client, so
start() loads every stored topic of a replicated namespace. Source: Pulsar BrokerService
(replicationClients per cluster).
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minipulsar.broker.replication.clusters import ClusterSettings
from minipulsar.broker.replication.misdirection import warn_if_advertised_loopback
from minipulsar.broker.topic_name import TopicName
from minipulsar.client.client import Client

if TYPE_CHECKING:
    from minipulsar.broker.server import Broker

log = logging.getLogger(__name__)


class BrokerReplication:
    """broker: the Broker. The peers are the clusters of `replicationClusters` plus those created
    with a broker service URL through the admin API; a namespace replicates to the clusters of its
    `replication` policy, else to those `namespaceReplicationClusters` names. Raises ConfigError
    when the settings are malformed."""

    def __init__(self, broker: "Broker"):
        self.broker = broker
        self.configured = ClusterSettings.from_config(broker.config)
        self._clients: dict[str, tuple[str, Client]] = {}  # remote -> (its URL, its client)

    def peers(self) -> dict[str, str]:
        """Remote cluster name -> broker service URL."""
        peers = dict(self.configured.peers)
        for name, data in self.broker.metadata.data.get("clusters", {}).items():
            if data.get("brokerServiceUrl"):
                peers[name] = data["brokerServiceUrl"]
        peers.pop(self.configured.local, None)
        return peers

    def remotes_for(self, namespace: str) -> list[str]:
        """Remote clusters a topic of namespace ('tenant/ns') replicates to, sorted; [] = none."""
        policy = self.broker.policies.get(namespace, "replication")
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
            self.broker.spawn(known[1].close())
        config = self.broker.config
        # The broker's keep-alive interval also bounds how long a dead remote goes unnoticed
        # (at most two intervals); the back-off cap bounds the wait once it is back.
        # brokerClientAuthenticationPlugin / Parameters: the remote cluster authenticates replicators
        # like any client (give that role super-user rights there, as in Pulsar).
        client = Client(url, operation_timeout_seconds=10, connection_timeout_ms=5000,
                        keep_alive_interval_seconds=config.keep_alive_interval_seconds,
                        max_backoff_interval_ms=config.replication_max_backoff_interval_seconds * 1000,
                        authentication=self.broker.security.broker_client_authentication())
        self._clients[remote] = (url, client)
        return client

    async def start(self) -> None:
        """Warn about an advertised address peers cannot use, then load the stored topics of
        replicated namespaces so their replicators run."""
        warn_if_advertised_loopback(self.broker.config, self.peers())
        await self._load_replicated_topics()

    async def reconfigure(self) -> None:
        """Clusters or replication policies changed: every loaded topic starts and stops its
        replicators to match, and stored topics of namespaces that now replicate are loaded."""
        for topic in list(self.broker.topics.values()):
            await topic.replication.update()
        await self._load_replicated_topics()

    async def _load_replicated_topics(self) -> None:
        for storage_name in self.broker.factory.list_names():
            name = TopicName.from_storage_name(storage_name)
            if name.domain == "persistent" and str(name) not in self.broker.topics \
                    and self.remotes_for(name.namespace_name):
                try:
                    await self.broker.get_topic(name, create=False)
                except Exception:  # noqa: BLE001 - one bad topic must not stop the broker
                    log.exception("cannot load replicated topic %s", name)

    async def close(self) -> None:
        """Close the clients (after the topics, whose replicators use them)."""
        clients, self._clients = [client for _, client in self._clients.values()], {}
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
