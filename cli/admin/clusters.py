"""`minipulsar admin clusters ...`: Pulsar's CmdClusters over /admin/v2/clusters.

    list [-c]   get CLUSTER   create|update CLUSTER [--url URL] [--url-secure URL] [--broker-url URL]
    [--broker-url-secure URL]   delete CLUSTER
"""
from __future__ import annotations

from minipulsar.cli.admin.args import add_verb, segment
from minipulsar.cli.admin.http import show

CLUSTERS = "/admin/v2/clusters"
# flag -> ClusterData field
URL_FLAGS = {"--url": "serviceUrl", "--url-secure": "serviceUrlTls",
             "--broker-url": "brokerServiceUrl", "--broker-url-secure": "brokerServiceUrlTls"}


def add_verbs(verbs) -> None:
    p = add_verb(verbs, "list", list_clusters, "List the existing clusters")
    p.add_argument("-c", "--current", action="store_true", help="Print the current cluster with (*)")
    p = add_verb(verbs, "get", get_cluster, "Get the configuration data for the specified cluster")
    p.add_argument("cluster", metavar="CLUSTER")
    for name, action, help in (("create", create_cluster, "Provisions a new cluster"),
                               ("update", update_cluster, "Update the configuration for a cluster")):
        p = add_verb(verbs, name, action, help)
        p.add_argument("cluster", metavar="CLUSTER")
        for flag, field in URL_FLAGS.items():
            p.add_argument(flag, dest=field, metavar="URL", help=f"{field} of the cluster")
    p = add_verb(verbs, "delete", delete_cluster, "Deletes an existing cluster")
    p.add_argument("cluster", metavar="CLUSTER")


async def list_clusters(client, args) -> None:
    clusters = await client.get(CLUSTERS)
    if args.current:
        current = (await client.get("/admin/v2/brokers/configuration/runtime")).get("clusterName")
        clusters = [f"{c}(*)" if c == current else c for c in clusters]
    show(clusters)


async def get_cluster(client, args) -> None:
    show(await client.get(f"{CLUSTERS}/{segment(args.cluster)}"))


def _cluster_data(args) -> dict:
    return {field: getattr(args, field) for field in URL_FLAGS.values() if getattr(args, field) is not None}


async def create_cluster(client, args) -> None:
    await client.put(f"{CLUSTERS}/{segment(args.cluster)}", _cluster_data(args))


async def update_cluster(client, args) -> None:
    await client.post(f"{CLUSTERS}/{segment(args.cluster)}", _cluster_data(args))


async def delete_cluster(client, args) -> None:
    await client.delete(f"{CLUSTERS}/{segment(args.cluster)}")
