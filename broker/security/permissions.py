"""Permissions granted to roles on namespaces and topics, kept where Pulsar keeps them: in the
namespace's Policies, field `auth_policies` {"namespace_auth": {role: [actions]},
"destination_auth": {topic: {role: [actions]}}, "subscription_auth_roles": {}}, so
GET /admin/v2/namespaces/{tenant}/{namespace} shows them and they live in the broker's metadata
store across restarts.

Actions are Pulsar's AuthAction names. `produce` and `consume` are enforced, and `functions` on a
namespace for its Pulsar Functions (/admin/v3/functions); `sources`, `sinks` and `packages` are
accepted and stored (a Pulsar admin script may grant them) but nothing here uses them. A
partition has the permissions of its partitioned topic too, as in Pulsar's
PulsarAuthorizationProvider.checkPermission.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from minipulsar.broker.topic_name import TopicName

if TYPE_CHECKING:
    from minipulsar.broker.metadata_store import MetadataStore
    from minipulsar.broker.namespaces import Namespaces

AUTH_ACTIONS = ("produce", "consume", "functions", "sources", "sinks", "packages")
AUTH_POLICIES = "auth_policies"


def parse_actions(value: Any) -> list[str]:
    """A JSON list of AuthAction names, sorted and without repeats; raises ValueError."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("the body must be a JSON list of actions, e.g. [\"produce\", \"consume\"]")
    unknown = sorted(set(value) - set(AUTH_ACTIONS))
    if unknown:
        raise ValueError(f"unknown actions {unknown} (Pulsar's AuthAction: {', '.join(AUTH_ACTIONS)})")
    return sorted(set(value))


def _empty_auth_policies() -> dict:
    return {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}}


class PermissionStore:
    """namespaces: the broker's Namespaces (the policies live there); store: the MetadataStore
    that persists them."""

    def __init__(self, namespaces: "Namespaces", store: "MetadataStore"):
        self._namespaces = namespaces
        self._store = store

    def _auth_policies(self, namespace: str) -> dict:
        """The namespace's auth_policies with every field present: a policy body may omit any of
        them (Pulsar's JSON allows it), and an omitted one holds no grant."""
        policies = self._namespaces.policies(namespace) or {}
        stored = policies.get(AUTH_POLICIES) or {}
        return {**_empty_auth_policies(), **{key: value for key, value in stored.items() if value is not None}}

    # ---- queries -------------------------------------------------------------------------
    def namespace_permissions(self, namespace: str) -> dict[str, list[str]]:
        """{role: [actions]} granted on the namespace."""
        return copy.deepcopy(self._auth_policies(namespace)["namespace_auth"])

    def topic_permissions(self, topic: str) -> dict[str, list[str]]:
        """{role: [actions]} granted on the topic itself (not through its namespace)."""
        namespace = TopicName.parse(topic).namespace_name
        return copy.deepcopy(self._auth_policies(namespace)["destination_auth"].get(topic, {}))

    def actions(self, role: str, topic: TopicName) -> set[str]:
        """Every action role holds on topic: through its namespace, the topic, or (for a partition)
        its partitioned topic."""
        auth = self._auth_policies(topic.namespace_name)
        held = set(auth["namespace_auth"].get(role, ()))
        for name in {str(topic), str(topic.partitioned_topic_name)}:
            held.update(auth["destination_auth"].get(name, {}).get(role, ()))
        return held

    # ---- changes ---------------------------------------------------------------------------
    async def grant_namespace(self, namespace: str, role: str, actions: list[str]) -> None:
        await self._update(namespace, lambda auth: auth["namespace_auth"].__setitem__(role, actions))

    async def revoke_namespace(self, namespace: str, role: str) -> None:
        await self._update(namespace, lambda auth: auth["namespace_auth"].pop(role, None))

    async def grant_topic(self, topic: str, role: str, actions: list[str]) -> None:
        namespace = TopicName.parse(topic).namespace_name
        await self._update(namespace, lambda auth: auth["destination_auth"].setdefault(topic, {}).__setitem__(
            role, actions))

    async def revoke_topic(self, topic: str, role: str) -> bool:
        """Remove role's grant on the topic; False when it had none there."""
        if role not in self.topic_permissions(topic):
            return False

        def revoke(auth: dict) -> None:
            grants = auth["destination_auth"][topic]
            del grants[role]
            if not grants:
                del auth["destination_auth"][topic]

        await self._update(TopicName.parse(topic).namespace_name, revoke)
        return True

    async def _update(self, namespace: str, change) -> None:
        """Apply change to a copy of the namespace's auth_policies, store it, persist it."""
        policies = copy.deepcopy(self._namespaces.policies(namespace) or {})
        auth = policies.setdefault(AUTH_POLICIES, _empty_auth_policies())
        for key, value in _empty_auth_policies().items():
            auth.setdefault(key, value)
        change(auth)
        self._namespaces.put_namespace(namespace, policies)
        await self._store.save()
