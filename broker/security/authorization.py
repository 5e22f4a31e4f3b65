"""AuthorizationService: what an authenticated role may do, as Pulsar's
org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider decides it.

- A super-user (superUserRoles) may do everything.
- A tenant admin (the tenant's TenantInfo.adminRoles) may do everything within the tenant: its
  namespaces, topics, policies and permissions.
- Anyone else needs a grant (broker/security/permissions.py): `produce` to produce, `consume` to
  subscribe, either one to look a topic up; `consume` on the namespace to list its topics;
  `functions` on the namespace to manage its Pulsar Functions (allowFunctionOps).
- Cluster, broker and tenant-level administration (create or change tenants, clusters, dynamic
  settings) is for super-users only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from minipulsar.broker.security.permissions import PermissionStore
from minipulsar.broker.topic_name import TopicName

if TYPE_CHECKING:
    from minipulsar.broker.namespaces import Namespaces


def role_list(value: str) -> frozenset[str]:
    """Comma-separated roles (superUserRoles) as a set, without blanks."""
    return frozenset(role.strip() for role in value.split(",") if role.strip())


class AuthorizationService:
    """super_users: superUserRoles; namespaces: the broker's Namespaces (TenantInfo.adminRoles);
    permissions: the grants."""

    def __init__(self, super_users: frozenset[str], namespaces: "Namespaces", permissions: PermissionStore):
        self.super_users = super_users
        self._namespaces = namespaces
        self.permissions = permissions

    def is_super_user(self, role: str | None) -> bool:
        return role is not None and role in self.super_users

    def is_tenant_admin(self, tenant: str, role: str | None) -> bool:
        """A super-user, or a role in the tenant's adminRoles (Pulsar's validateTenantAdminAccess)."""
        if self.is_super_user(role):
            return True
        info = self._namespaces.tenant_info(tenant)
        return role is not None and info is not None and role in info.get("adminRoles", ())

    def can_produce(self, topic: TopicName, role: str | None) -> bool:
        return self._allowed(topic, role, "produce")

    def can_consume(self, topic: TopicName, role: str | None) -> bool:
        return self._allowed(topic, role, "consume")

    def can_lookup(self, topic: TopicName, role: str | None) -> bool:
        """Producers and consumers may look up (Pulsar's canLookup)."""
        return self.can_produce(topic, role) or self.can_consume(topic, role)

    def can_list_topics(self, namespace: str, role: str | None) -> bool:
        """GET_TOPICS on a namespace: tenant admins, and roles with `consume` on the namespace."""
        tenant = namespace.split("/", 1)[0]
        if self.is_tenant_admin(tenant, role):
            return True
        return role is not None and "consume" in self.permissions.namespace_permissions(namespace).get(role, ())

    def can_operate_functions(self, namespace: str, role: str | None) -> bool:
        """/admin/v3/functions on a namespace: tenant admins, and roles with `functions` on it
        (Pulsar's ComponentImpl.isAuthorizedRole / allowFunctionOps)."""
        if self.is_tenant_admin(namespace.split("/", 1)[0], role):
            return True
        return role is not None and "functions" in self.permissions.namespace_permissions(namespace).get(role, ())

    def _allowed(self, topic: TopicName, role: str | None, action: str) -> bool:
        if role is None:
            return False
        if self.is_tenant_admin(topic.tenant, role):
            return True
        return action in self.permissions.actions(role, topic)
