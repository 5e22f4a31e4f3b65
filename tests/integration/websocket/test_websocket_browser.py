"""The WebSocket API from a real browser (headless Chromium): a page opens a consumer and a producer
socket with a token in the query string and shows what it received; a bad token is refused."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pulsar
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.helpers import wait_for

PAGE = Path(__file__).with_name("browser_page.html")
TOPIC = "persistent://public/default/browser"
COUNT = 5


def _open_page(browser, broker, token: str) -> None:
    query = urlencode({"base": f"ws://127.0.0.1:{broker.broker.web.port}", "topic": TOPIC.replace("://", "/"),
                       "token": token, "count": COUNT})
    browser.get(f"{PAGE.as_uri()}?{query}")


def _texts(browser, list_id: str) -> list[str]:
    return [item.text for item in browser.find_elements(By.CSS_SELECTOR, f"#{list_id} li")]


def test_browser_page_produces_and_consumes_with_a_token(browser, secure_broker, make_token):
    broker = secure_broker()
    admin = {"Authorization": f"Bearer {make_token('admin')}"}
    grant = requests.post(broker.broker.web_service_url + "/admin/v2/namespaces/public/default/permissions/web-user",
                          json=["produce", "consume"], headers=admin, timeout=10)
    assert grant.status_code == 204
    _open_page(browser, broker, make_token("web-user"))
    WebDriverWait(browser, 30).until(lambda d: len(_texts(d, "received")) == COUNT)
    assert _texts(browser, "received") == [f'hello from the browser {i} | key=k{i} | props={{"index":"{i}"}}'
                                           for i in range(COUNT)]
    assert sorted(_texts(browser, "answers")) == sorted(f"{i} ok" for i in range(COUNT))
    # the page acknowledged everything it showed
    wait_for(lambda: broker.subscription_stats(TOPIC, "browser-sub")["msgBacklog"] == 0, "the page's acks")
    client = pulsar.Client(broker.url, authentication=pulsar.AuthenticationToken(make_token("admin")),
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:  # and the messages are stored for any client
        reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
        assert [reader.read_next(10000).data() for _ in range(COUNT)] == [
            f"hello from the browser {i}".encode() for i in range(COUNT)]
    finally:
        client.close()


def test_browser_page_with_a_bad_token_is_refused(browser, secure_broker):
    broker = secure_broker()
    _open_page(browser, broker, "not-a-token")
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "closed").text)
    # a refused upgrade is a failed connection to a browser: close code 1006, nothing received
    assert browser.find_element(By.ID, "closed").text == "consumer closed 1006"
    assert browser.find_element(By.ID, "status").text == "starting"
    assert _texts(browser, "received") == []
