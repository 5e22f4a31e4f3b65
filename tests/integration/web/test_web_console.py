"""The web console in a real browser (headless Chromium, tests/integration/web/conftest.py): a topic
the official client made appears with its subscription and backlog, the rate chart moves while
messages flow, peek shows what was produced (a batch split into its messages), clear-backlog
empties the backlog (checked through REST), and with token authentication nothing is listed before
signing in and everything after. Every test ends with no error in the browser's console (the
`browser` fixture checks)."""
from __future__ import annotations

import json
import re
import threading

import pulsar
import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from tests.helpers import wait_for
from tests.integration.web.console import backlog, local_name, open_topic, text_of, topic_stats, wait
from tests.pki import tls_settings, token_settings


def test_a_topic_appears_with_its_subscription_and_backlog(broker, official, topic, browser, console_url):
    official.subscribe(topic, "billing")  # never receives: everything stays in the backlog
    producer = official.create_producer(topic)
    for i in range(5):
        producer.send(f"order-{i}".encode())
    browser.get(f"{console_url}#/ns/public/default")
    link = wait(browser).until(ec.element_to_be_clickable((By.LINK_TEXT, local_name(topic))))
    row = link.find_element(By.XPATH, "./ancestor::tr")
    wait(browser).until(lambda _: row.find_element(By.CSS_SELECTOR, ".backlog").text == "5")
    link.click()
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-name"), "billing"))
    assert text_of(browser, ".sub-backlog") == "5"
    assert backlog(broker, topic, "billing") == 5


@pytest.fixture
def broker(broker_factory):
    """Topic stats' rates (which the console charts) refreshed every second, not every 60 s."""
    return broker_factory(statsUpdateFrequencyInSecs=1)


def test_the_rate_chart_moves_while_messages_flow(broker, official, topic, browser, console_url):
    consumer = official.subscribe(topic, "readers")
    producer = official.create_producer(topic)
    producer.send(b"first")  # the topic exists before the page opens
    # The chart starts from the broker's msgRateIn, the last complete stats interval's rate: the
    # interval that counted the first message, then an idle one (0 again).
    wait_for(lambda: topic_stats(broker, topic)["msgRateIn"] > 0, "the first message in msgRateIn")
    wait_for(lambda: topic_stats(broker, topic)["msgRateIn"] == 0, "an idle interval after it")
    open_topic(browser, console_url, topic)
    assert text_of(browser, ".legend-in") in ("\u2014", "0.00 msg/s")
    stop = threading.Event()

    def produce():  # bounded: at most 2,000 messages, stopped as soon as the chart moved
        for i in range(2000):
            if stop.wait(0.02):
                return
            producer.send(f"m{i}".encode())
            consumer.acknowledge(consumer.receive(10000))

    flow = threading.Thread(target=produce, daemon=True)
    flow.start()
    try:
        wait(browser, 30).until(lambda d: _rate(d.find_element(By.CSS_SELECTOR, ".legend-in").text) > 0
                                and _rate(d.find_element(By.CSS_SELECTOR, ".legend-out").text) > 0)
        label = browser.find_element(By.CSS_SELECTOR, "figure.chart canvas").get_attribute("aria-label")
        assert re.search(r"in [1-9]|in 0\.[0-9]*[1-9]", label), label
    finally:
        stop.set()
        flow.join(10)


def _rate(text: str) -> float:
    match = re.match(r"([\d.,]+) msg/s", text)
    return float(match.group(1).replace(",", "")) if match else 0.0


def test_peek_shows_the_produced_payload(broker, official, topic, browser, console_url):
    official.subscribe(topic, "audit", receiver_queue_size=0)
    producer = official.create_producer(topic)
    producer.send(json.dumps({"order": 7, "amount": 12.5}).encode(), partition_key="customer-7",
                  properties={"source": "web"})
    batcher = official.create_producer(topic, batching_enabled=True, batching_max_messages=3,
                                       batching_max_publish_delay_ms=60000)
    for i in range(3):  # three messages in one batch entry
        batcher.send_async(f"batched-{i}".encode(), None, partition_key=f"key-{i}")
    batcher.flush()
    wait_for(lambda: backlog(broker, topic, "audit") == 2, "two entries in the backlog")
    open_topic(browser, console_url, topic)
    wait(browser).until(ec.element_to_be_clickable((By.CSS_SELECTOR, '[data-focus-key="sub:audit:peek"]'))).click()
    wait(browser).until(ec.element_to_be_clickable((By.CSS_SELECTOR, "dialog button[type=submit]"))).click()
    messages = wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#peeked .message") or None)
    assert len(messages) == 4
    first = messages[0]
    assert json.loads(first.find_element(By.CSS_SELECTOR, ".payload").text) == {"order": 7, "amount": 12.5}
    assert first.find_element(By.CSS_SELECTOR, ".message-key").text == "customer-7"
    assert first.find_element(By.CSS_SELECTOR, ".message-properties").text == "source=web"
    ids = [m.find_element(By.CSS_SELECTOR, ".message-id").text for m in messages]
    assert re.fullmatch(r"\d+:\d+", ids[0]) and all(re.fullmatch(r"\d+:\d+:\d", i) for i in ids[1:]), ids
    assert [m.find_element(By.CSS_SELECTOR, ".payload").text for m in messages[1:]] == \
        ["batched-0", "batched-1", "batched-2"]
    assert [m.find_element(By.CSS_SELECTOR, ".message-key").text for m in messages[1:]] == ["key-0", "key-1", "key-2"]


def test_clear_backlog_empties_it(broker, official, topic, browser, console_url):
    official.subscribe(topic, "billing", receiver_queue_size=0)
    producer = official.create_producer(topic)
    for i in range(7):
        producer.send(f"order-{i}".encode())
    open_topic(browser, console_url, topic)
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-backlog"), "7"))
    browser.find_element(By.CSS_SELECTOR, '[data-focus-key="sub:billing:clear"]').click()
    confirm = wait(browser).until(ec.element_to_be_clickable((By.CSS_SELECTOR, "dialog [data-confirm]")))
    assert browser.switch_to.active_element.text == "Cancel"  # the safe choice has the focus
    confirm.click()
    wait_for(lambda: backlog(broker, topic, "billing") == 0, "the backlog cleared through the console")
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-backlog"), "0"))


def test_produce_from_the_console_reaches_a_consumer(broker, official, topic, browser, console_url):
    consumer = official.subscribe(topic, "inbox")
    open_topic(browser, console_url, topic)
    wait(browser).until(ec.element_to_be_clickable((By.ID, "produce"))).click()
    wait(browser).until(ec.visibility_of_element_located((By.ID, "field-payload"))).send_keys("from the console")
    browser.find_element(By.ID, "field-key").send_keys("k1")
    browser.find_element(By.ID, "field-properties").send_keys("origin=console")
    browser.find_element(By.CSS_SELECTOR, "dialog button[type=submit]").click()
    message = consumer.receive(10000)
    assert (message.data(), message.partition_key(), message.properties()) == \
        (b"from the console", "k1", {"origin": "console"})


@pytest.fixture
def token_broker(broker_factory, jwt_keys):
    return broker_factory(**token_settings(jwt_keys, authorizationEnabled="true", superUserRoles="admin"))


def test_with_token_authentication_nothing_is_listed_before_signing_in(token_broker, make_token, topic, browser):
    token = make_token("admin")
    client = pulsar.Client(token_broker.url, authentication=pulsar.AuthenticationToken(token),
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.create_producer(topic).send(b"secret")
        console = token_broker.broker.web_service_url + "/"
        for page in ("", "#/tenants", "#/ns/public/default", f"#/topic/{topic.replace('://', '/')}"):
            browser.get(console + page)
            wait(browser).until(ec.visibility_of_element_located((By.ID, "token")))
            assert local_name(topic) not in browser.page_source and "public/default" not in browser.page_source
        browser.find_element(By.ID, "token").send_keys(token)
        browser.find_element(By.CSS_SELECTOR, "form.login button[type=submit]").click()
        wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".session"), "signed in as admin"))
        wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "h1"), topic))  # the page asked for
        browser.get(console + "#/ns/public/default")
        wait(browser).until(ec.element_to_be_clickable((By.LINK_TEXT, local_name(topic))))
        browser.get(console)
        wait(browser).until(ec.text_to_be_present_in_element((By.ID, "overview-cards"), "standalone"))
    finally:
        client.close()


def test_the_console_files_are_public_and_its_data_is_not(token_broker):
    base = token_broker.broker.web_service_url
    page = requests.get(base + "/", timeout=10)
    assert page.status_code == 200 and 'data-auth="token"' in page.text
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert requests.get(base + "/console/app.js", timeout=10).headers["Content-Type"].startswith("text/javascript")
    assert requests.get(base + "/admin/v2/broker-stats/topics", timeout=10).status_code == 401
    assert requests.get(base + "/console/../admin/v2/tenants", timeout=10).status_code == 401


def test_web_console_enabled_false_leaves_it_out(broker_factory):
    broker = broker_factory(webConsoleEnabled="false")
    base = broker.broker.web_service_url
    assert requests.get(base + "/", timeout=10).status_code == 404
    assert requests.get(base + "/console/app.js", timeout=10).status_code == 404
    assert requests.get(base + "/admin/v2/tenants", timeout=10).json() == ["public", "pulsar"]


def test_the_tls_web_port_serves_the_console_and_a_client_certificate_signs_in(broker_factory, pki, jwt_keys):
    broker = broker_factory(**token_settings(
        jwt_keys, authenticationProviders="org.apache.pulsar.broker.authentication.AuthenticationProviderTls,"
                                          "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
        authorizationEnabled="true", superUserRoles="admin"), **tls_settings(pki))
    base = broker.broker.web_service_url_tls
    anonymous = requests.get(base + "/", verify=str(pki.ca), timeout=10)
    assert anonymous.status_code == 200 and 'data-auth="token"' in anonymous.text
    with_certificate = requests.get(base + "/", verify=str(pki.ca), cert=(str(pki.admin.cert), str(pki.admin.key)),
                                    timeout=10)
    assert 'data-auth="none"' in with_certificate.text  # the certificate authenticates: no token asked for
    assert requests.get(base + "/console/app.js", verify=str(pki.ca), timeout=10).status_code == 200
