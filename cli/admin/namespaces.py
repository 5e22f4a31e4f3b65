"""`minipulsar admin namespaces ...` (the namespaces themselves): Pulsar's CmdNamespaces list,
topics, policies, create, delete, set-clusters and get-clusters over /admin/v2/namespaces.

    list TENANT   topics TENANT/NS [-m persistent|non_persistent|all]   policies TENANT/NS
    create TENANT/NS [-c CLUSTERS]   delete TENANT/NS   set-clusters TENANT/NS -c CLUSTERS
    get-clusters TENANT/NS

The policy verbs (set-/get-/remove-...) are in namespace_policies.
"""
from __future__ import annotations

from minipulsar.cli.admin.args import add_verb, comma_list, namespace_name, namespace_path, segment
from minipulsar.cli.admin.http import show

MODES = ("persistent", "non_persistent", "all")


def add_verbs(verbs) -> None:
    p = add_verb(verbs, "list", list_namespaces, "Get the namespaces for a tenant")
    p.add_argument("tenant", metavar="TENANT")
    p = _with_namespace(add_verb(verbs, "topics", topics, "Get the list of topics for a namespace"))
    p.add_argument("-m", "--mode", type=str.lower, choices=MODES,
                   help="Allowed topic domain mode (persistent, non_persistent, all)")
    _with_namespace(add_verb(verbs, "policies", policies, "Get the configuration policies of a namespace"))
    p = _with_namespace(add_verb(verbs, "create", create, "Creates a new namespace"))
    p.add_argument("-c", "--clusters", type=comma_list, action="extend", metavar="CLUSTERS",
                   help="List of clusters this namespace will be assigned (replication clusters)")
    _with_namespace(add_verb(verbs, "delete", delete, "Deletes a namespace"))
    p = _with_namespace(add_verb(verbs, "set-clusters", set_clusters, "Set replication clusters for a namespace"))
    p.add_argument("-c", "--clusters", type=comma_list, required=True, metavar="CLUSTERS",
                   help="Replication Cluster Ids list (comma separated values)")
    _with_namespace(add_verb(verbs, "get-clusters", get_clusters, "Get replication clusters for a namespace"))


def _with_namespace(parser):
    parser.add_argument("namespace", type=namespace_name, metavar="TENANT/NAMESPACE")
    return parser


async def list_namespaces(client, args) -> None:
    show(await client.get(f"/admin/v2/namespaces/{segment(args.tenant)}"))


async def topics(client, args) -> None:
    show(await client.get(namespace_path(args.namespace) + "/topics", mode=args.mode and args.mode.upper()))


async def policies(client, args) -> None:
    show(await client.get(namespace_path(args.namespace)))


async def create(client, args) -> None:
    body = {"replication_clusters": args.clusters} if args.clusters else {}
    await client.put(namespace_path(args.namespace), body)


async def delete(client, args) -> None:
    await client.delete(namespace_path(args.namespace))


async def set_clusters(client, args) -> None:
    await client.post(namespace_path(args.namespace) + "/replication", args.clusters)


async def get_clusters(client, args) -> None:
    show(await client.get(namespace_path(args.namespace) + "/replication"))
