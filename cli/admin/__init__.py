"""`minipulsar admin`: Pulsar's pulsar-admin tool (its verbs, flags and output) for what the
broker's admin REST API serves, talking only to that API.

    minipulsar admin [--admin-url http://127.0.0.1:8080] [--request-timeout 60]
                     [--auth-plugin CLASS --auth-params PARAMS] [--tls-trust-cert-path CA.pem]
                     [--tls-allow-insecure] GROUP VERB [ARGS]

--auth-plugin / --auth-params are pulsar-admin's: org.apache.pulsar.client.impl.auth.AuthenticationToken
with token:<jwt> or file:///path (sent as `Authorization: Bearer`), or
org.apache.pulsar.client.impl.auth.AuthenticationTls with tlsCertFile:/path,tlsKeyFile:/path (the
client certificate of an https:// --admin-url).

Groups and their verbs (`minipulsar admin GROUP --help` lists them, `... VERB --help` their flags):
    clusters    list, get, create, update, delete                                (clusters)
    tenants     list, get, create, update, delete                                (tenants)
    namespaces  list, topics, policies, create, delete, set-/get-clusters        (namespaces)
                set-/get-/remove- message-ttl, deduplication, retention, backlog-quota(s),
                subscription-types-enabled, max-unacked-messages-per-consumer, delayed-delivery,
                dispatcher-pause-on-ack-state-persistent; set-/get- schema-compatibility-strategy,
                is-allow-auto-update-schema                                      (namespace_policies)
                permissions, grant-permission, revoke-permission                 (permissions)
    topics      list, list-partitioned-topics, create[-partitioned-topic], update-partitioned-topic,
                get-partitioned-topic-metadata, delete[-partitioned-topic], [partitioned-]stats[-internal],
                unload, lookup                                                   (topics)
                last-message-id, get-message-by-id, examine-message              (messages)
                subscriptions, create-subscription, unsubscribe, reset-cursor, skip, clear-backlog,
                expire-messages, set-/get-replicated-subscription-status         (subscriptions)
                permissions, grant-permission, revoke-permission                 (permissions)
    schemas     get, upload, delete, test-compatibility                          (schemas)
    brokers     healthcheck, get-runtime-config, list-dynamic-config, get-all-dynamic-config,
                update-dynamic-config, delete-dynamic-config                     (brokers)
    functions   create, update, delete, get, list, status, stats, start, stop, restart, trigger,
                querystate, putstate, localrun                                   (functions)

Output is pulsar-admin's: JSON (pretty-printed) for what a get verb answers, one item a line for
lists, nothing for a verb that changes something. A failure prints one line on stderr -- the
server's reason and HTTP status, or the URL that could not be reached and why -- and exits with
status 1 (2 for bad flags).
"""
from __future__ import annotations

import argparse
import sys

from minipulsar.cli.admin import (brokers, clusters, functions, messages, namespace_policies,
                                  namespaces, permissions, schemas, subscriptions, tenants,
                                  topics)
from minipulsar.cli.admin.auth import add_auth_arguments, authentication_of
from minipulsar.cli.admin.http import DEFAULT_ADMIN_URL, AdminClient, AdminError
from minipulsar.cli.runtime import EXIT_FAILURE, UsageError, positive_float, run_verb

DEFAULT_REQUEST_TIMEOUT = 60.0
# group name, its help, the modules that add its verbs
GROUPS = (
    ("clusters", "Operations about clusters", (clusters,)),
    ("tenants", "Operations about tenants", (tenants,)),
    ("namespaces", "Operations about namespaces", (namespaces, namespace_policies, permissions.namespace_verbs)),
    ("topics", "Operations on persistent topics", (topics, messages, subscriptions, permissions.topic_verbs)),
    ("schemas", "Operations about schemas", (schemas,)),
    ("brokers", "Operations about brokers", (brokers,)),
    ("functions", "Interface for managing Pulsar Functions (lightweight, Lambda-style compute processes that work "
                  "with Pulsar)", (functions,)),
)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `admin` (its groups and their verbs) on the root parser's sub-commands."""
    admin = subparsers.add_parser("admin", help="administer the broker over its REST API (as pulsar-admin)",
                                  description="Administer the broker over its admin REST API, as Pulsar's "
                                              "pulsar-admin tool.")
    admin.add_argument("--admin-url", default=DEFAULT_ADMIN_URL,
                       help=f"the broker's web service URL (default {DEFAULT_ADMIN_URL})")
    admin.add_argument("--request-timeout", type=positive_float, default=DEFAULT_REQUEST_TIMEOUT, metavar="SECONDS",
                       help=f"bound on each request (default {DEFAULT_REQUEST_TIMEOUT:g})")
    add_auth_arguments(admin)
    admin.add_argument("--tls-trust-cert-path", help="CAs (PEM) that sign the web service's certificate")
    admin.add_argument("--tls-allow-insecure", action="store_true",
                       help="accept an untrusted certificate from the web service")
    groups = admin.add_subparsers(dest="admin_group", required=True, metavar="GROUP")
    for name, help, modules in GROUPS:
        group = groups.add_parser(name, help=help, description=help)
        verbs = group.add_subparsers(dest="admin_verb", required=True, metavar="VERB")
        for module in modules:
            module.add_verbs(verbs)
    admin.set_defaults(run=run)
    return admin


def run(args: argparse.Namespace) -> int:
    """An admin verb: 0 on success, 1 when the request fails, 2 on bad flags."""
    name = f"admin {args.admin_group} {args.admin_verb}"
    return run_verb(name, lambda: execute(name, args))


async def execute(name: str, args: argparse.Namespace) -> int:
    if not args.admin_url.startswith(("http://", "https://")):
        raise UsageError(f"--admin-url must be an http:// or https:// URL, not {args.admin_url!r}")
    async with AdminClient(args.admin_url, args.request_timeout, authentication_of(args), args.tls_trust_cert_path,
                           args.tls_allow_insecure) as client:
        try:
            return await args.action(client, args) or 0
        except AdminError as exc:
            print(f"minipulsar {name}: {exc}", file=sys.stderr)
            return EXIT_FAILURE
