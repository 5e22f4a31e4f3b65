"""Pulsar Functions under authentication and authorization: who may manage a namespace's functions
(tenant admins, roles granted `functions` on it; others get Pulsar's 401), and instances that
connect with the broker's client credentials (brokerClientAuthenticationPlugin) to process."""
from __future__ import annotations

import json

import pulsar
import requests

from minipulsar.client.auth import TOKEN_PLUGIN
from tests.helpers import wait_for
from tests.integration.functions.support import collect, write_package
from tests.integration.security.conftest import official_client

SHOUT = """
    def process(input):
        return input.upper()
"""


def test_function_permissions_and_an_authenticated_instance(token_broker, make_token, tmp_path):
    broker = token_broker(authorizationEnabled="true", superUserRoles="admin",
                          brokerClientAuthenticationPlugin=TOKEN_PLUGIN,
                          brokerClientAuthenticationParameters="token:" + make_token("admin"))
    web = broker.broker.web_service_url
    base = f"{web}/admin/v3/functions/public/default"

    def as_role(role: str) -> dict:
        return {"Authorization": "Bearer " + make_token(role)}

    package = write_package(tmp_path / "code", "shout.py", SHOUT)
    files = {"functionConfig": (None, json.dumps({"className": "shout", "inputs": ["sec-in"], "output": "sec-out"})),
             "data": ("shout.py", package.read_bytes())}
    refused = requests.get(base, headers=as_role("stranger"), timeout=10)
    assert (refused.status_code, refused.json()["reason"]) == (401, "client is not authorize to perform operation")
    assert requests.post(f"{base}/shout", files=files, headers=as_role("stranger"), timeout=10).status_code == 401
    assert requests.get(base, timeout=10).status_code == 401, "no credentials at all"
    grant = requests.post(f"{web}/admin/v2/namespaces/public/default/permissions/deployer",
                          json=["functions"], headers=as_role("admin"), timeout=10)
    assert grant.status_code == 204, grant.text
    created = requests.post(f"{base}/shout", files=files, headers=as_role("deployer"), timeout=30)
    assert created.status_code == 204, created.text
    assert requests.get(base, headers=as_role("deployer"), timeout=10).json() == ["shout"]
    with official_client(broker.url, authentication=pulsar.AuthenticationToken(make_token("admin"))) as client:
        out = client.subscribe("sec-out", "check")
        status_url = f"{base}/shout/status"
        wait_for(lambda: requests.get(status_url, headers=as_role("deployer"), timeout=10).json()["numRunning"] == 1,
                 "the instance connected with the broker's client token")
        client.create_producer("sec-in").send(b"quiet")
        assert collect(out, 1)[0].data() == b"QUIET"



def test_a_tenant_admin_operates_the_functions_of_their_tenant_only(token_broker, make_token, tmp_path):
    """A role in the tenant's adminRoles, not a super-user, and granted nothing: Pulsar's
    isAuthorizedRole lets it manage the tenant's functions, and no other tenant's."""
    broker = token_broker(authorizationEnabled="true", superUserRoles="admin",
                          brokerClientAuthenticationPlugin=TOKEN_PLUGIN,
                          brokerClientAuthenticationParameters="token:" + make_token("admin"))
    web = broker.broker.web_service_url
    admin, owner = ({"Authorization": "Bearer " + make_token(role)} for role in ("admin", "acme-admin"))
    tenant = requests.put(f"{web}/admin/v2/tenants/acme", json={"adminRoles": ["acme-admin"]}, headers=admin,
                          timeout=10)
    assert tenant.status_code == 204, tenant.text
    assert requests.put(f"{web}/admin/v2/namespaces/acme/apps", headers=owner, timeout=10).status_code == 204
    package = write_package(tmp_path / "code", "shout.py", SHOUT)
    config = {"className": "shout", "inputs": ["persistent://acme/apps/in"], "output": "persistent://acme/apps/out"}
    files = {"functionConfig": (None, json.dumps(config)), "data": ("shout.py", package.read_bytes())}
    base = f"{web}/admin/v3/functions/acme/apps"
    created = requests.post(f"{base}/shout", files=files, headers=owner, timeout=30)
    assert created.status_code == 204, created.text
    assert requests.get(base, headers=owner, timeout=10).json() == ["shout"]
    wait_for(lambda: requests.get(f"{base}/shout/status", headers=owner, timeout=10).json()["numRunning"] == 1,
             "the tenant admin reads the status of its running function")
    assert requests.post(f"{base}/shout/restart", headers=owner, timeout=30).status_code == 204
    elsewhere = requests.get(f"{web}/admin/v3/functions/public/default", headers=owner, timeout=10)
    assert (elsewhere.status_code, elsewhere.json()["reason"]) == (401, "client is not authorize to perform operation")
    assert requests.get(base, headers={"Authorization": "Bearer " + make_token("stranger")},
                        timeout=10).status_code == 401, "another role is still refused on acme/apps"
    assert requests.delete(f"{base}/shout", headers=owner, timeout=30).status_code == 204
    assert requests.get(base, headers=owner, timeout=10).json() == []
