"""`minipulsar admin tenants ...`: Pulsar's CmdTenants over /admin/v2/tenants.

    list   get TENANT   create TENANT [-r ROLES] [-c CLUSTERS]   update TENANT [-r ROLES] [-c CLUSTERS]
    delete TENANT

create without -c allows every cluster (pulsar-admin asks for the list); update keeps what -r or
-c leaves out.
"""
from __future__ import annotations

from minipulsar.cli.admin.args import add_verb, comma_list, segment
from minipulsar.cli.admin.http import show

TENANTS = "/admin/v2/tenants"


def add_verbs(verbs) -> None:
    add_verb(verbs, "list", list_tenants, "List the existing tenants")
    p = add_verb(verbs, "get", get_tenant, "Gets the configuration of a tenant")
    p.add_argument("tenant", metavar="TENANT")
    for name, action, help in (("create", create_tenant, "Creates a new tenant"),
                               ("update", update_tenant, "Updates the configuration for a tenant")):
        p = add_verb(verbs, name, action, help)
        p.add_argument("tenant", metavar="TENANT")
        p.add_argument("-r", "--admin-roles", type=comma_list, action="extend", metavar="ROLES",
                       help="Comma separated list of auth principal allowed to administrate the tenant")
        p.add_argument("-c", "--allowed-clusters", type=comma_list, action="extend", metavar="CLUSTERS",
                       help="Comma separated allowed clusters (create: all when left out; update: unchanged)")
    p = add_verb(verbs, "delete", delete_tenant, "Deletes an existing tenant")
    p.add_argument("tenant", metavar="TENANT")


async def list_tenants(client, args) -> None:
    show(await client.get(TENANTS))


async def get_tenant(client, args) -> None:
    show(await client.get(f"{TENANTS}/{segment(args.tenant)}"))


async def create_tenant(client, args) -> None:
    clusters = args.allowed_clusters or await client.get("/admin/v2/clusters")
    await client.put(f"{TENANTS}/{segment(args.tenant)}",
                     {"adminRoles": args.admin_roles or [], "allowedClusters": clusters})


async def update_tenant(client, args) -> None:
    path = f"{TENANTS}/{segment(args.tenant)}"
    current = await client.get(path) if args.admin_roles is None or args.allowed_clusters is None else {}
    await client.post(path, {
        "adminRoles": current.get("adminRoles", []) if args.admin_roles is None else args.admin_roles,
        "allowedClusters": current.get("allowedClusters", []) if args.allowed_clusters is None
        else args.allowed_clusters})


async def delete_tenant(client, args) -> None:
    await client.delete(f"{TENANTS}/{segment(args.tenant)}")
