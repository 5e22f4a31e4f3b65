"""`minipulsar admin namespaces set-/get-/remove-POLICY TENANT/NS`: Pulsar's CmdNamespaces policy
verbs over /admin/v2/namespaces/{tenant}/{namespace}/{policy}, with pulsar-admin's flags:

    set-message-ttl -ttl TIME                    set-deduplication --enable|--disable
    set-retention -t TIME -s SIZE                set-backlog-quota [-l SIZE] [-lt TIME] -p POLICY [-t TYPE]
    set-subscription-types-enabled -t TYPES      set-max-unacked-messages-per-consumer -c N
    set-schema-compatibility-strategy -c STRATEGY                set-is-allow-auto-update-schema -e|-d
    set-dispatcher-pause-on-ack-state-persistent set-delayed-delivery -e|-d [-t TICK] [-md MAX]

Each has its get- verb and, where Pulsar has one, its remove- verb (get-backlog-quotas and
remove-backlog-quota [-t TYPE] for the quotas). Times and sizes take Pulsar's units (10m, 1h,
100M; -1 = unlimited); retention is sent in minutes and MB, as pulsar-admin converts it.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

from minipulsar.cli.admin.args import (add_verb, byte_size, comma_list, enable_disable, namespace_name,
                                       namespace_path, relative_millis, relative_seconds)
from minipulsar.cli.admin.http import NO_BODY, show
from minipulsar.cli.runtime import UsageError

QUOTA_TYPES = ("destination_storage", "message_age")
QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")
STRATEGIES = ("UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
              "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE")
MB = 1 << 20


@dataclass(frozen=True)
class Policy:
    """name: the verbs' suffix; path: the REST path segment; what: for --help; flags: adds the set
    verb's flags; body: the set call's JSON body from the flags (None: no body); method: of the
    set call; removable: whether Pulsar has a remove- verb."""

    name: str
    path: str
    what: str
    flags: Callable[[argparse.ArgumentParser], None]
    body: Callable[[argparse.Namespace], Any] | None
    method: str = "POST"
    removable: bool = True


def _ttl_flags(p) -> None:
    p.add_argument("-ttl", "--messageTTL", dest="ttl", type=relative_seconds, required=True, metavar="TIME",
                   help="Message TTL in seconds (or minutes, hours, days, weeks eg: 100m, 3h, 2d, 5w); "
                        "0 disables TTL")


def _retention_flags(p) -> None:
    p.add_argument("-t", "--time", type=relative_seconds, required=True, metavar="TIME",
                   help="Retention time with an optional unit (100m, 3h, 2d, 5w; no unit: seconds); "
                        "0 means no retention and -1 infinite time retention")
    p.add_argument("-s", "--size", type=byte_size, required=True, metavar="SIZE",
                   help="Retention size limit with an optional unit (10M, 16G, 3T; no unit: bytes); "
                        "0 or less than 1MB means no retention and -1 infinite size retention")


def _retention_body(args) -> dict:
    return {"retentionTimeInMinutes": args.time if args.time == -1 else int(args.time / 60),
            "retentionSizeInMB": args.size if args.size == -1 else args.size // MB}


def _types_flags(p) -> None:
    p.add_argument("-t", "--types", type=comma_list, required=True, metavar="TYPES",
                   help="Subscription types enabled list (comma separated values): "
                        "Exclusive, Shared, Failover, Key_Shared")


def _unacked_flags(p) -> None:
    p.add_argument("-c", "--max-unacked-messages-per-topic", dest="max_unacked", type=int, required=True,
                   metavar="N", help="maxUnackedMessagesPerConsumer for a namespace")


def _strategy_flags(p) -> None:
    p.add_argument("-c", "--compatibility", type=str.upper, choices=STRATEGIES, required=True, metavar="STRATEGY",
                   help=f"Compatibility level required for new schemas: {', '.join(STRATEGIES)}")


def _delayed_flags(p) -> None:
    enable_disable(p, "delayed delivery messages")
    p.add_argument("-t", "--time", type=relative_millis, default=1000, metavar="TIME",
                   help="The tick time for delayed delivery (eg: 1s, 10s, 1m; default 1s)")
    p.add_argument("-md", "--maxDelay", dest="max_delay", type=relative_millis, default=0, metavar="TIME",
                   help="The max allowed delay for delayed delivery (eg: 1s, 10s, 1m; default 0: none)")


POLICIES = (
    Policy("message-ttl", "messageTTL", "Message TTL", _ttl_flags, lambda a: a.ttl),
    Policy("deduplication", "deduplication", "Deduplication",
           lambda p: enable_disable(p, "deduplication"), lambda a: a.enable),
    Policy("retention", "retention", "the retention policy", _retention_flags, _retention_body),
    Policy("subscription-types-enabled", "subscriptionTypesEnabled", "subscription types enabled",
           _types_flags, lambda a: a.types),
    Policy("max-unacked-messages-per-consumer", "maxUnackedMessagesPerConsumer", "maxUnackedMessagesPerConsumer",
           _unacked_flags, lambda a: a.max_unacked),
    Policy("schema-compatibility-strategy", "schemaCompatibilityStrategy", "the schema compatibility strategy",
           _strategy_flags, lambda a: a.compatibility, method="PUT", removable=False),
    Policy("is-allow-auto-update-schema", "isAllowAutoUpdateSchema", "whether producers may auto update the schema",
           lambda p: enable_disable(p, "auto update schema"), lambda a: a.enable, removable=False),
    Policy("dispatcher-pause-on-ack-state-persistent", "dispatcherPauseOnAckStatePersistent",
           "dispatcherPauseOnAckStatePersistent", lambda p: None, None),
    Policy("delayed-delivery", "delayedDelivery", "the delayed delivery policy", _delayed_flags,
           lambda a: {"active": a.enable, "tickTime": a.time, "maxDeliveryDelayInMillis": a.max_delay}),
)


def add_verbs(verbs) -> None:
    for policy in POLICIES:
        p = _verb(verbs, f"set-{policy.name}", _setter(policy), f"Set {policy.what} for a namespace")
        policy.flags(p)
        _verb(verbs, f"get-{policy.name}", _getter(policy), f"Get {policy.what} for a namespace")
        if policy.removable:
            _verb(verbs, f"remove-{policy.name}", _remover(policy), f"Remove {policy.what} for a namespace")
    _add_backlog_quota_verbs(verbs)


def _verb(verbs, name: str, action, help: str) -> argparse.ArgumentParser:
    parser = add_verb(verbs, name, action, help)
    parser.add_argument("namespace", type=namespace_name, metavar="TENANT/NAMESPACE")
    return parser


def _setter(policy: Policy):
    async def set_policy(client, args) -> None:
        body = NO_BODY if policy.body is None else policy.body(args)
        await client.call(policy.method, f"{namespace_path(args.namespace)}/{policy.path}", body)
    return set_policy


def _getter(policy: Policy):
    async def get_policy(client, args) -> None:
        show(await client.get(f"{namespace_path(args.namespace)}/{policy.path}"))
    return get_policy


def _remover(policy: Policy):
    async def remove_policy(client, args) -> None:
        await client.delete(f"{namespace_path(args.namespace)}/{policy.path}")
    return remove_policy


# ---- backlog quotas ------------------------------------------------------------------------
def _add_backlog_quota_verbs(verbs) -> None:
    _verb(verbs, "get-backlog-quotas", get_backlog_quotas, "Get the backlog quota policies for a namespace")
    p = _verb(verbs, "set-backlog-quota", set_backlog_quota, "Set a backlog quota policy for a namespace")
    p.add_argument("-l", "--limit", "--limitSize", dest="limit", type=byte_size, metavar="SIZE",
                   help="Size limit (eg: 10M, 16G); needed for the destination_storage type")
    p.add_argument("-lt", "--limitTime", dest="limit_time", type=relative_seconds, metavar="TIME",
                   help="Time limit in second (or minutes, hours, days, weeks eg: 100m, 3h, 2d, 5w); "
                        "needed for the message_age type")
    p.add_argument("-p", "--policy", required=True, choices=QUOTA_POLICIES,
                   help="Retention policy to enforce when the limit is reached")
    p.add_argument("-t", "--type", default="destination_storage", choices=QUOTA_TYPES,
                   help="Backlog quota type to set (default destination_storage: by size; message_age: by time)")
    p = _verb(verbs, "remove-backlog-quota", remove_backlog_quota, "Remove a backlog quota policy from a namespace")
    p.add_argument("-t", "--type", default="destination_storage", choices=QUOTA_TYPES,
                   help="Backlog quota type to remove (default destination_storage)")


async def get_backlog_quotas(client, args) -> None:
    show(await client.get(namespace_path(args.namespace) + "/backlogQuotaMap"))


async def set_backlog_quota(client, args) -> None:
    """As pulsar-admin: the destination_storage type sets the size limit, message_age the time limit."""
    quota = {"limitSize": -1, "limitTime": -1, "policy": args.policy}
    if args.type == "destination_storage":
        if args.limit is None:
            raise UsageError("Quota type of 'destination_storage' needs a size limit (-l/--limit)")
        quota["limitSize"] = args.limit
    else:
        if args.limit_time is None:
            raise UsageError("Quota type of 'message_age' needs a time limit (-lt/--limitTime)")
        quota["limitTime"] = args.limit_time
    await client.post(namespace_path(args.namespace) + "/backlogQuota", quota, backlogQuotaType=args.type)


async def remove_backlog_quota(client, args) -> None:
    await client.delete(namespace_path(args.namespace) + "/backlogQuota", backlogQuotaType=args.type)
