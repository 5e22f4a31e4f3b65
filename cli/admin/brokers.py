"""`minipulsar admin brokers ...`: Pulsar's CmdBrokers over /admin/v2/brokers.

    healthcheck   get-runtime-config   list-dynamic-config   get-all-dynamic-config
    update-dynamic-config -c NAME -v VALUE   delete-dynamic-config -c NAME
"""
from __future__ import annotations

from minipulsar.cli.admin.args import add_verb, segment
from minipulsar.cli.admin.http import show

CONFIGURATION = "/admin/v2/brokers/configuration"


def add_verbs(verbs) -> None:
    add_verb(verbs, "healthcheck", healthcheck, "Run a health check against the broker")
    add_verb(verbs, "get-runtime-config", runtime_config, "Get runtime configuration values")
    add_verb(verbs, "list-dynamic-config", dynamic_names, "Get list of updatable configuration name")
    add_verb(verbs, "get-all-dynamic-config", dynamic_values, "Get all overridden dynamic-configuration values")
    p = add_verb(verbs, "update-dynamic-config", update_dynamic, "Update dynamic-serviceConfiguration of broker")
    p.add_argument("-c", "--config", required=True, help="service-configuration name")
    p.add_argument("-v", "--value", required=True, help="service-configuration value")
    p = add_verb(verbs, "delete-dynamic-config", delete_dynamic, "Delete dynamic-serviceConfiguration of broker")
    p.add_argument("-c", "--config", required=True, help="service-configuration name")


async def healthcheck(client, args) -> None:
    await client.get("/admin/v2/brokers/health")
    print("ok")


async def runtime_config(client, args) -> None:
    show(await client.get(CONFIGURATION + "/runtime"))


async def dynamic_names(client, args) -> None:
    show(await client.get(CONFIGURATION))


async def dynamic_values(client, args) -> None:
    show(await client.get(CONFIGURATION + "/values"))


async def update_dynamic(client, args) -> None:
    await client.post(f"{CONFIGURATION}/{segment(args.config)}/{segment(args.value)}")


async def delete_dynamic(client, args) -> None:
    await client.delete(f"{CONFIGURATION}/{segment(args.config)}")
