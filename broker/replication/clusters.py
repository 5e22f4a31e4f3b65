"""Which clusters exist and which of them a topic replicates to.

Every broker instance is one cluster (``clusterName``). Its peers and the namespaces that replicate
come from two settings (the admin API — ``PUT /admin/v2/clusters/{name}`` and the namespace
``replication_clusters`` policy — will later write the same two maps):

* ``replicationClusters``: peer clusters as ``name=serviceUrl`` pairs separated by commas, e.g.
  ``us-east=pulsar://10.0.0.2:6650,eu=pulsar://10.0.0.3:6650``. The local cluster may be listed
  too; it is ignored as a peer.
* ``namespaceReplicationClusters``: per namespace, the clusters its topics replicate to, as
  ``tenant/ns=c1,c2`` entries separated by semicolons; ``*`` means every peer. A namespace not
  listed does not replicate (Pulsar's default: a namespace replicates to its own cluster only).

Both raise ConfigError (naming the key) on malformed text or an unknown cluster.
Source: Pulsar ClusterData (serviceUrl) and Policies.replication_clusters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from minipulsar.broker.config import BrokerConfig, ConfigError


def parse_peer_clusters(text: str, local: str) -> dict[str, str]:
    """'a=pulsar://h:1,b=pulsar://h:2' -> {'a': 'pulsar://h:1', ...} without the local cluster."""
    peers: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, url = item.partition("=")
        name, url = name.strip(), url.strip()
        if not sep or not name or not url.startswith("pulsar://"):
            raise ConfigError(f"config key replicationClusters: expected name=pulsar://host:port, got {item!r}")
        if name != local:
            peers[name] = url
    return peers


def parse_namespace_clusters(text: str, local: str, peers: dict[str, str]) -> dict[str, frozenset[str]]:
    """'t/ns=a,b;t/ns2=*' -> {'t/ns': {'a', 'b'}, 't/ns2': set(peers)}, local cluster removed."""
    result: dict[str, frozenset[str]] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        namespace, sep, names = item.partition("=")
        namespace = namespace.strip()
        if not sep or namespace.count("/") != 1:
            raise ConfigError(f"config key namespaceReplicationClusters: expected tenant/ns=c1,c2, got {item!r}")
        clusters = {n.strip() for n in names.split(",") if n.strip()}
        if "*" in clusters:
            clusters = set(peers)
        clusters.discard(local)
        unknown = clusters - set(peers)
        if unknown:
            raise ConfigError(f"config key namespaceReplicationClusters: {namespace} names unknown "
                              f"cluster(s) {sorted(unknown)}; add them to replicationClusters")
        result[namespace] = frozenset(clusters)
    return result


@dataclass(frozen=True)
class ClusterSettings:
    """local: this cluster's name; peers: remote name -> service URL; namespaces: ns -> remote names."""

    local: str
    peers: dict[str, str] = field(default_factory=dict)
    namespaces: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "ClusterSettings":
        peers = parse_peer_clusters(config.replication_clusters, config.cluster_name)
        namespaces = parse_namespace_clusters(config.namespace_replication_clusters, config.cluster_name, peers)
        return cls(config.cluster_name, peers, namespaces)

    def remotes_for(self, namespace: str) -> list[str]:
        """Remote clusters a topic of namespace ('tenant/ns') replicates to, sorted; [] = none."""
        return sorted(self.namespaces.get(namespace, ()))
