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
from minipulsar.broker.topic_name import TopicName
from minipulsar.client.client import Client

if TYPE_CHECKING:
    from minipulsar.broker.server import Broker

log = logging.getLogger(__name__)


class BrokerReplication:
    """broker: the Broker; settings parsed from its config (ConfigError when malformed)."""

    def __init__(self, broker: "Broker"):
        self.broker = broker
        self.settings = ClusterSettings.from_config(broker.config)
        self._clients: dict[str, Client] = {}

    def client_for(self, remote: str) -> Client:
        """The Client for remote's service URL (created on first use)."""
        client = self._clients.get(remote)
        if client is None:
            url = self.settings.peers[remote]
            client = self._clients[remote] = Client(url, operation_timeout_seconds=10,
                                                    connection_timeout_ms=5000)
        return client

    async def start(self) -> None:
        """Load the stored topics of replicated namespaces so their replicators run."""
        if not self.settings.namespaces:
            return
        for storage_name in self.broker.factory.list_names():
            name = TopicName.from_storage_name(storage_name)
            if name.domain == "persistent" and self.settings.remotes_for(name.namespace_name):
                try:
                    await self.broker.get_topic(name, create=False)
                except Exception:  # noqa: BLE001 - one bad topic must not stop the broker
                    log.exception("cannot load replicated topic %s", name)

    async def close(self) -> None:
        """Close the clients (after the topics, whose replicators use them)."""
        clients, self._clients = list(self._clients.values()), {}
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
