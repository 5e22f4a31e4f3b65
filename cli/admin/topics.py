"""`minipulsar admin topics ...` (topics themselves): Pulsar's CmdTopics listing, lifecycle, stats,
unload and lookup verbs over /admin/v2/{domain}/{tenant}/{namespace}[/{topic}/...].

    list TENANT/NS [-td persistent|non_persistent]   list-partitioned-topics TENANT/NS
    create TOPIC   create-partitioned-topic TOPIC -p N   update-partitioned-topic TOPIC -p N
    get-partitioned-topic-metadata TOPIC   delete TOPIC [-f]   delete-partitioned-topic TOPIC [-f]
    stats TOPIC   stats-internal TOPIC   partitioned-stats TOPIC [--per-partition]
    partitioned-stats-internal TOPIC   unload TOPIC   lookup TOPIC

TOPIC is full or short ("my-topic" = persistent://public/default/my-topic). The message verbs are
in messages, the subscription verbs in subscriptions.
"""
from __future__ import annotations

from minipulsar.cli.admin.args import (add_verb, namespace_name, segment, topic_parts, topic_path,
                                       with_topic)
from minipulsar.cli.admin.http import show

DOMAINS = {"persistent": "persistent", "non_persistent": "non-persistent", "non-persistent": "non-persistent"}


def add_verbs(verbs) -> None:
    p = add_verb(verbs, "list", list_topics, "Get the list of topics under a namespace")
    p.add_argument("namespace", type=namespace_name, metavar="TENANT/NAMESPACE")
    p.add_argument("-td", "--topic-domain", choices=list(DOMAINS), default="persistent",
                   help="Allowed topic domain (persistent, non_persistent; default persistent)")
    p = add_verb(verbs, "list-partitioned-topics", list_partitioned,
                 "Get the list of partitioned topics under a namespace")
    p.add_argument("namespace", type=namespace_name, metavar="TENANT/NAMESPACE")
    with_topic(add_verb(verbs, "create", create, "Create a non-partitioned topic"))
    for name, action, help in (
            ("create-partitioned-topic", create_partitioned, "Create a partitioned topic"),
            ("update-partitioned-topic", update_partitioned,
             "Update existing partitioned topic (the new number of partitions must be greater)")):
        p = with_topic(add_verb(verbs, name, action, help))
        p.add_argument("-p", "--partitions", type=int, required=True,
                       help="Number of partitions for the topic")
    with_topic(add_verb(verbs, "get-partitioned-topic-metadata", partitioned_metadata,
                        "Get the partitioned topic metadata (0 partitions: not a partitioned topic)"))
    for name, action, help in (
            ("delete", delete, "Delete a topic (refused while clients are connected, unless -f)"),
            ("delete-partitioned-topic", delete_partitioned,
             "Delete a partitioned topic and its partitions (refused while clients are connected, unless -f)")):
        p = with_topic(add_verb(verbs, name, action, help))
        p.add_argument("-f", "--force", action="store_true",
                       help="Close all producers and consumers and delete the topic forcefully")
    with_topic(add_verb(verbs, "stats", stats, "Get the stats for the topic and its producers and consumers"))
    with_topic(add_verb(verbs, "stats-internal", stats_internal, "Get the internal stats for the topic"))
    p = with_topic(add_verb(verbs, "partitioned-stats", partitioned_stats,
                            "Get the stats for the partitioned topic, summed over its partitions"))
    p.add_argument("--per-partition", action="store_true", help="Get per partition stats")
    with_topic(add_verb(verbs, "partitioned-stats-internal", partitioned_stats_internal,
                        "Get the internal stats of each partition of the partitioned topic"))
    with_topic(add_verb(verbs, "unload", unload, "Unload a topic (its clients reconnect)"))
    with_topic(add_verb(verbs, "terminate", terminate,
                        "Terminate a topic (no more messages); prints the last message id"))
    with_topic(add_verb(verbs, "partitioned-terminate", partitioned_terminate,
                        "Terminate every partition of a partitioned topic"))
    with_topic(add_verb(verbs, "lookup", lookup, "Lookup a topic from the current serving broker"))


def _quoted(namespace: str) -> str:
    return "/".join(segment(part) for part in namespace.split("/"))


async def list_topics(client, args) -> None:
    show(await client.get(f"/admin/v2/{DOMAINS[args.topic_domain]}/{_quoted(args.namespace)}"))


async def list_partitioned(client, args) -> None:
    show(await client.get(f"/admin/v2/persistent/{_quoted(args.namespace)}/partitioned"))


async def create(client, args) -> None:
    await client.put(topic_path(args.topic))


async def create_partitioned(client, args) -> None:
    await client.put(topic_path(args.topic) + "/partitions", args.partitions)


async def update_partitioned(client, args) -> None:
    await client.post(topic_path(args.topic) + "/partitions", args.partitions)


async def partitioned_metadata(client, args) -> None:
    show(await client.get(topic_path(args.topic) + "/partitions"))


async def delete(client, args) -> None:
    await client.delete(topic_path(args.topic), force=args.force or None)


async def delete_partitioned(client, args) -> None:
    await client.delete(topic_path(args.topic) + "/partitions", force=args.force or None)


async def stats(client, args) -> None:
    show(await client.get(topic_path(args.topic) + "/stats"))


async def stats_internal(client, args) -> None:
    show(await client.get(topic_path(args.topic) + "/internalStats"))


async def partitioned_stats(client, args) -> None:
    show(await client.get(topic_path(args.topic) + "/partitioned-stats", perPartition=args.per_partition))


async def partitioned_stats_internal(client, args) -> None:
    show(await client.get(topic_path(args.topic) + "/partitioned-internalStats"))


async def unload(client, args) -> None:
    await client.put(topic_path(args.topic) + "/unload")


async def terminate(client, args) -> None:
    """Prints the last message id as ledger:entry:partition, as pulsar-admin does."""
    data = await client.post(topic_path(args.topic) + "/terminate")
    print(f"Topic successfully terminated at {data['ledgerId']}:{data['entryId']}:{data['partitionIndex']}")


async def partitioned_terminate(client, args) -> None:
    data = await client.post(topic_path(args.topic) + "/terminate/partitions")
    print(f"Topic successfully terminated at {data}")


async def lookup(client, args) -> None:
    """Prints the broker's URL, as pulsar-admin does."""
    data = await client.get("/lookup/v2/topic/" + "/".join(segment(p) for p in topic_parts(args.topic)))
    show(data.get("brokerUrl") or data.get("brokerUrlTls"))
