"""The web console for roles that are not super-users, with token authentication and authorization
on: a tenant admin sees and acts on its tenant only (the lists show its namespace's topics with their
figures; another tenant, the tenant list and the broker's figures are refused, the reason shown),
and a role with only produce and consume on a namespace may produce from the console but sees no
list and is refused an unload, the reason shown, the topic untouched (checked through REST). The
browser's console holds the refused requests (HTTP 403) and nothing else."""
from __future__ import annotations

import pulsar
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from tests.browser import console_errors
from tests.helpers import rest_path, wait_for
from tests.integration.web.console import click, set_field, table_rows, text_of, toolbar_button, wait
from tests.pki import token_settings

NOT_TENANT_ADMIN = "Don't have permission to administrate resources on this tenant"
NOT_SUPER_USER = "This operation requires super-user access"
ORDERS = "persistent://acme/app/orders"
SECRET = "persistent://public/default/secret-plans"


def sign_in(browser, console: str, token: str, role: str) -> None:
    browser.get(console)
    wait(browser).until(ec.visibility_of_element_located((By.ID, "token"))).send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "form.login button[type=submit]").click()
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".session"), f"signed in as {role}"))


def banner(browser) -> str:
    return text_of(browser, "main .alert[role=alert]")


def only_refusals(browser) -> list[str]:
    """The browser console's errors since the last call, each a refused request (HTTP 403)."""
    errors = [entry["message"] for entry in console_errors(browser)]
    assert errors and all("403" in e for e in errors), errors
    return errors


def test_a_tenant_admin_and_a_produce_consume_role_see_and_do_what_they_may(broker_factory, jwt_keys, make_token,
                                                                             shared_browser):
    browser = shared_browser
    broker = broker_factory(**token_settings(jwt_keys, authorizationEnabled="true", superUserRoles="admin"))
    base = broker.broker.web_service_url
    admin = requests.Session()
    admin.headers["Authorization"] = f"Bearer {make_token('admin')}"
    assert admin.put(f"{base}/admin/v2/tenants/acme", json={"adminRoles": ["acme-admin"],
                                                            "allowedClusters": ["standalone"]}).ok
    assert admin.put(f"{base}/admin/v2/namespaces/acme/app").ok
    assert admin.post(f"{base}/admin/v2/namespaces/acme/app/permissions/app-client", json=["produce", "consume"]).ok
    client = pulsar.Client(broker.url, authentication=pulsar.AuthenticationToken(make_token("admin")),
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.subscribe(ORDERS, "billing").close()
        producer = client.create_producer(ORDERS)
        for i in range(3):
            producer.send(f"order-{i}".encode())
        client.create_producer(SECRET).send(b"not for acme")
        stats = lambda: admin.get(f"{base}/admin/v2{rest_path(ORDERS)}/stats").json()  # noqa: E731
        console = base + "/"

        # the tenant admin: its namespace with figures; the broker's figures, the tenant list and
        # another tenant refused with the reason
        sign_in(browser, console, make_token("acme-admin"), "acme-admin")
        assert banner(browser) == f"Not permitted for this role: {NOT_SUPER_USER}"  # the overview
        browser.get(console + "#/tenants")
        wait(browser).until(ec.text_to_be_present_in_element((By.ID, "tenant-list"), "needs a super-user"))
        browser.get(console + "#/ns/acme/app")
        wait(browser).until(lambda d: [r[:6] for r in table_rows(d, "#topic-list")] ==
                            [["orders", "topic", "1", "1", "0", "3"]])
        assert browser.find_element(By.CSS_SELECTOR, '[data-focus-key="sort:backlog"]').get_attribute(
            "aria-disabled") == "true"  # sorting by figures needs broker-stats
        browser.get(console + "#/ns/public/default")
        assert banner(browser) == f"Not permitted for this role: {NOT_TENANT_ADMIN}"
        assert "secret-plans" not in browser.find_element(By.ID, "main").text
        browser.get(console + "#/topic/persistent/acme/app/orders")
        wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-backlog"), "3"))
        toolbar_button(browser, "Create subscription").click()
        set_field(browser, "name", "audit")
        click(browser, "dialog[open] button[type=submit]")
        wait_for(lambda: "audit" in stats()["subscriptions"], "the tenant admin's subscription")
        refused = only_refusals(browser)
        assert any("broker-stats" in e for e in refused) and any("public/default" in e for e in refused)

        # the produce/consume role: no list, no stats, no unload; producing is allowed
        click(browser, "#session button")  # Sign out
        sign_in(browser, console, make_token("app-client"), "app-client")
        browser.get(console + "#/ns/acme/app")
        assert banner(browser) == f"Not permitted for this role: {NOT_TENANT_ADMIN}"
        assert "orders" not in browser.find_element(By.ID, "topic-list").text
        browser.get(console + "#/topic/persistent/acme/app/orders")
        assert banner(browser) == f"Not permitted for this role: {NOT_TENANT_ADMIN}"
        toolbar_button(browser, "Unload").click()
        wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".toast.error"), NOT_TENANT_ADMIN))
        assert stats()["msgInCounter"] == 3  # not unloaded: a topic loaded again counts from zero
        toolbar_button(browser, "Produce a message").click()
        set_field(browser, "payload", "from app-client")
        click(browser, "dialog[open] button[type=submit]")
        wait(browser).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog[open]"))
        wait_for(lambda: stats()["subscriptions"]["billing"]["msgBacklog"] == 4, "the produce/consume role's message")
        only_refusals(browser)
    finally:
        client.close()
