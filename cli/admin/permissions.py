"""`minipulsar admin namespaces|topics permissions|grant-permission|revoke-permission`: Pulsar's
CmdNamespaces and CmdTopics permission verbs over .../permissions[/{role}].

    namespaces permissions TENANT/NS                                   {role: [actions]} as JSON
    namespaces grant-permission TENANT/NS --role ROLE --actions produce,consume
    namespaces revoke-permission TENANT/NS --role ROLE
    topics permissions TOPIC
    topics grant-permission TOPIC --role ROLE --actions produce,consume
    topics revoke-permission TOPIC --role ROLE
"""
from __future__ import annotations

from minipulsar.cli.admin.args import (
    add_verb,
    comma_list,
    namespace_name,
    namespace_path,
    segment,
    topic_name,
    topic_path,
)
from minipulsar.cli.admin.http import show


class _Verbs:
    """The permission verbs of one group: target is how the group names what it grants on."""

    def __init__(self, metavar: str, parse, path):
        self._metavar, self._parse, self._path = metavar, parse, path

    def add_verbs(self, verbs) -> None:
        self._target(add_verb(verbs, "permissions", self.permissions, "Get the permissions"))
        p = self._target(add_verb(verbs, "grant-permission", self.grant, "Grant permissions to a client role"))
        p.add_argument("--role", required=True, help="Client role to which grant permissions")
        p.add_argument("--actions", required=True, type=comma_list, metavar="ACTIONS",
                       help="Actions to be granted (produce,consume,functions)")
        p = self._target(add_verb(verbs, "revoke-permission", self.revoke, "Revoke permissions from a client role"))
        p.add_argument("--role", required=True, help="Client role from which to revoke permissions")

    def _target(self, parser):
        parser.add_argument("target", type=self._parse, metavar=self._metavar)
        return parser

    async def permissions(self, client, args) -> None:
        show(await client.get(self._path(args.target) + "/permissions"))

    async def grant(self, client, args) -> None:
        await client.post(f"{self._path(args.target)}/permissions/{segment(args.role)}", args.actions)

    async def revoke(self, client, args) -> None:
        await client.delete(f"{self._path(args.target)}/permissions/{segment(args.role)}")


namespace_verbs = _Verbs("TENANT/NAMESPACE", namespace_name, namespace_path)
topic_verbs = _Verbs("TOPIC", topic_name, topic_path)
