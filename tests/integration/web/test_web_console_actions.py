"""The web console's actions and pages in a real browser (one Chromium and one broker for the
module), each checked against the broker's admin REST API: creating and deleting a topic and a
subscription, skipping, resetting a cursor to a time, unloading and compacting; the topic page's
producers, consumers (unacked, permits, Key_Shared hash ranges), schema and internal stats; peek's
text and hex views of LZ4- and ZLIB-compressed messages; the namespace list's search, sorting by
backlog and a partitioned topic's row; the overview's figures; and the keyboard alone reaching and
pressing the main actions. Every test ends with no error in the browser's console."""
from __future__ import annotations

import json
import re
import time
import uuid
from datetime import datetime

import pulsar
import pytest
from pulsar.schema import Integer, JsonSchema, Record, String
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from tests.helpers import BrokerThread, rest_path, wait_for
from tests.integration.web.console import (backlog, click, confirm, focused_text, local_name, open_tab, open_topic,
                                           press, rest, set_field, submit_dialog, table_rows, text_of, texts,
                                           toolbar_button, topic_stats, wait)


@pytest.fixture(scope="module")
def console_broker(tmp_path_factory):
    broker = BrokerThread(tmp_path_factory.mktemp("console")).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def client(console_broker):
    c = pulsar.Client(console_broker.url, operation_timeout_seconds=10,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield c
    c.close()


@pytest.fixture
def console(console_broker) -> str:
    return console_broker.broker.web_service_url + "/"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def subscriptions(broker, topic: str) -> list[str]:
    return rest(broker, f"{rest_path(topic)}/subscriptions").json()


def test_topic_and_subscription_actions_reach_the_broker(console_broker, client, shared_browser, console):
    """Create a topic and a subscription, skip, reset to a time, compact, unload, delete the
    subscription and the topic: each through the console's buttons, each checked through REST."""
    browser, broker = shared_browser, console_broker
    name = unique("walk")
    topic = f"persistent://public/default/{name}"
    browser.get(console + "#/ns/public/default")
    click(browser, "main .toolbar button.primary")  # Create topic
    set_field(browser, "name", name)
    submit_dialog(browser)
    assert topic in rest(broker, "/persistent/public/default").json()
    click(browser, f'[data-focus-key="topic:{topic}"]')  # the list shows it
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "h1"), topic))

    toolbar_button(browser, "Create subscription").click()
    set_field(browser, "name", "walker")
    set_field(browser, "position", "earliest")
    submit_dialog(browser)
    assert subscriptions(broker, topic) == ["walker"]

    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"step-{i}".encode())
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-backlog"), "5"))

    click(browser, '[data-focus-key="sub:walker:skip"]')
    set_field(browser, "count", "2")
    submit_dialog(browser)
    assert backlog(broker, topic, "walker") == 3
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-backlog"), "3"))

    click(browser, '[data-focus-key="sub:walker:reset"]')
    field = wait(browser).until(ec.visibility_of_element_located((By.ID, "field-when")))
    when = datetime.strptime(field.get_attribute("value"), "%Y-%m-%dT%H:%M")  # an hour ago, local time
    assert 3500 < time.time() - when.timestamp() < 3700
    submit_dialog(browser)
    assert backlog(broker, topic, "walker") == 5  # back before the skipped two
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-backlog"), "5"))

    assert rest(broker, f"{rest_path(topic)}/compaction").json()["status"] == "NOT_RUN"
    toolbar_button(browser, "Compact").click()
    wait_for(lambda: rest(broker, f"{rest_path(topic)}/compaction").json()["status"] == "SUCCESS",
             "the compaction the console started succeeded")

    assert topic_stats(broker, topic)["msgInCounter"] == 5
    toolbar_button(browser, "Unload").click()
    wait_for(lambda: topic_stats(broker, topic)["msgInCounter"] == 0,  # a topic loaded again counts from zero
             "the topic unloaded and loaded again")
    assert backlog(broker, topic, "walker") == 5  # and keeps its messages and cursor
    producer.send(b"after the unload")  # the producer reconnected to the topic loaded again
    assert backlog(broker, topic, "walker") == 6

    click(browser, '[data-focus-key="sub:walker:delete"]')
    confirm(browser)
    wait_for(lambda: subscriptions(broker, topic) == [], "the subscription deleted through the console")
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#tabpanel td.empty"), "No subscriptions"))

    producer.close()  # else its reconnection would create the topic again
    toolbar_button(browser, "Delete topic").click()
    confirm(browser)
    wait(browser).until(lambda d: d.current_url.endswith("#/ns/public/default"))
    assert topic not in rest(broker, "/persistent/public/default").json()
    assert rest(broker, f"{rest_path(topic)}/stats").status_code == 404
    wait(browser).until(ec.visibility_of_element_located((By.ID, "topic-list")))
    assert not browser.find_elements(By.LINK_TEXT, name)


class Order(Record):
    item = String()
    quantity = Integer()


def test_the_topic_page_shows_what_the_admin_api_says(console_broker, client, shared_browser, console):
    """Producers (name, address, count), a Key_Shared subscription's unacked messages and its
    consumers (name, address, permits, unacked, hash ranges), the schema and the internal stats."""
    browser, broker = shared_browser, console_broker
    topic = f"persistent://public/default/{unique('page')}"
    producer = client.create_producer(topic, producer_name="orders-producer", schema=JsonSchema(Order),
                                      batching_enabled=False)
    consumers = [client.subscribe(topic, "shipping", consumer_name=f"ks-{i}", schema=JsonSchema(Order),
                                  consumer_type=pulsar.ConsumerType.KeyShared) for i in range(2)]
    for i in range(6):
        producer.send(Order(item=f"item-{i}", quantity=i), partition_key=f"customer-{i}")
    wait_for(lambda: topic_stats(broker, topic)["subscriptions"]["shipping"]["unackedMessages"] == 6,
             "six messages delivered and not acknowledged")
    stats = topic_stats(broker, topic)
    open_topic(browser, console, topic)

    sub = stats["subscriptions"]["shipping"]
    wait(browser).until(lambda d: len(table_rows(d)) == 3)  # the subscription's row, then its two consumers
    rows = table_rows(browser)
    assert rows[0][:5] == ["shipping", "Key_Shared", str(sub["msgBacklog"]), "6", "2"]
    shown = {row[0]: row for row in rows[1:]}
    for consumer in stats["subscriptions"]["shipping"]["consumers"]:
        row = shown[consumer["consumerName"]]
        assert row[1] == consumer["address"]
        assert row[2] == str(consumer["availablePermits"])
        assert row[3] == str(consumer["unackedMessages"])
        assert row[6] == " ".join(consumer["keyHashRanges"]) and consumer["keyHashRanges"]
    assert sum(int(row[3]) for row in shown.values()) == 6

    open_tab(browser, "producers")
    wait(browser).until(lambda d: table_rows(d) and table_rows(d)[0][0] == "orders-producer")
    [publisher] = stats["publishers"]
    row = table_rows(browser)[0]
    assert (row[1], row[4]) == (publisher["address"], "6")

    open_tab(browser, "schema")
    wait(browser).until(ec.visibility_of_element_located((By.ID, "schema-definition")))
    schema = rest(broker, f"/schemas/public/default/{local_name(topic)}/schema").json()
    assert json.loads(texts(browser, "#schema-definition")[0]) == json.loads(schema["data"])
    assert texts(browser, "#tabpanel .card .value")[:2] == ["JSON", str(schema["version"])]

    open_tab(browser, "internal")
    internal = rest(broker, f"{rest_path(topic)}/internalStats").json()
    wait(browser).until(lambda d: any(r and r[0] == "shipping" for r in table_rows(d)))
    rows = table_rows(browser)
    ledgers = [r[:2] for r in rows if len(r) == 3]
    assert ledgers == [[str(ledger["ledgerId"]), str(ledger["entries"])] for ledger in internal["ledgers"]]
    cursor = internal["cursors"]["shipping"]
    assert [r for r in rows if r[0] == "shipping"][0][1:3] == [cursor["markDeletePosition"], cursor["readPosition"]]
    for consumer in consumers:
        consumer.close()
    producer.close()


def peeked(browser, topic: str, subscription: str, console: str, count: int) -> list:
    open_topic(browser, console, topic)
    click(browser, f'[data-focus-key="sub:{subscription}:peek"]')
    set_field(browser, "count", str(count))
    click(browser, "dialog[open] button[type=submit]")
    return wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#peeked .message") or None)


def view(message, name: str) -> str:
    """Switch a peeked message's payload to a view (text, hex, json) and return what it shows."""
    button = message.find_element(By.XPATH, f".//button[normalize-space()='{name}']")
    button.click()
    assert button.get_attribute("aria-pressed") == "true"
    return message.find_element(By.CSS_SELECTOR, ".payload").text


def hex_dump(payload: bytes) -> list[str]:
    """The hex view's lines: offset, 16 bytes in hex, the printable ones as text."""
    lines = []
    for at in range(0, len(payload), 16):
        row = payload[at:at + 16]
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        lines.append(f"{at:06x}  {' '.join(f'{b:02x}' for b in row):<47}  {ascii_}".rstrip())
    return lines


def test_peek_shows_compressed_messages_as_text_and_hex(console_broker, client, shared_browser, console):
    """An LZ4-compressed message and a ZLIB-compressed batch, peeked: decompressed, in the text
    view and the hex view (a binary payload opens in the hex view)."""
    browser, broker = shared_browser, console_broker
    topic = f"persistent://public/default/{unique('peek')}"
    client.subscribe(topic, "audit", receiver_queue_size=0)
    text = " ".join(["compressed"] * 40)
    binary = bytes(range(256)) * 2
    lz4 = client.create_producer(topic, compression_type=pulsar.CompressionType.LZ4, batching_enabled=False)
    lz4.send(text.encode())
    lz4.send(binary)
    zlib = client.create_producer(topic, compression_type=pulsar.CompressionType.ZLib, batching_enabled=True,
                                  batching_max_messages=2, batching_max_publish_delay_ms=60000)
    for i in range(2):
        zlib.send_async(" ".join([f"zlib-{i}"] * 30).encode(), None)
    zlib.flush()
    wait_for(lambda: backlog(broker, topic, "audit") == 3, "three entries in the backlog")
    stored = rest(broker, f"{rest_path(topic)}/internalStats").json()["ledgers"][0]["size"]
    assert stored < len(text) + len(binary)  # the entries are stored compressed
    messages = peeked(browser, topic, "audit", console, 3)
    assert len(messages) == 4
    first, second = messages[0], messages[1]
    assert first.find_element(By.CSS_SELECTOR, ".payload").text == text  # not JSON: the text view first
    assert view(first, "hex").splitlines()[:3] == hex_dump(text.encode())[:3]
    assert view(first, "text") == text
    assert second.find_element(By.XPATH, ".//button[normalize-space()='hex']").get_attribute("aria-pressed") == "true"
    assert second.find_element(By.CSS_SELECTOR, ".payload").text.splitlines() == hex_dump(binary)
    assert [view(m, "text") for m in messages[2:]] == [" ".join([f"zlib-{i}"] * 30) for i in range(2)]
    click(browser, "dialog[open] .actions button")  # Close
    lz4.close()
    zlib.close()


def test_the_namespace_list_searches_sorts_and_unfolds_a_partitioned_topic(console_broker, client, shared_browser,
                                                                            console):
    """In a namespace of its own: the search box keeps the matching rows, sorting by backlog orders
    them by the broker's backlogs, and a partitioned topic is one row whose partitions unfold."""
    browser, broker = shared_browser, console_broker
    namespace = unique("lists")
    assert rest(broker, f"/namespaces/public/{namespace}", "PUT").status_code == 204
    backlogs = {"alpha": 1, "bravo": 3, "delta": 0}
    for local, count in backlogs.items():
        topic = f"persistent://public/{namespace}/{local}"
        client.subscribe(topic, "s", receiver_queue_size=0).close()
        producer = client.create_producer(topic)
        for i in range(count):
            producer.send(b"m")
        producer.close()
    partitioned = f"persistent://public/{namespace}/charlie"
    assert rest(broker, f"{rest_path(partitioned)}/partitions", "PUT", json=2).status_code == 204
    client.subscribe(partitioned, "s").close()  # its cursors stay
    producer = client.create_producer(partitioned, batching_enabled=False)
    for i in range(8):
        producer.send(b"m", partition_key=f"k{i}")  # spread over both partitions
    wait_for(lambda: sum(backlog(broker, f"{partitioned}-partition-{p}", "s") for p in range(2)) == 8, "backlog 8")
    backlogs["charlie"] = 8

    browser.get(f"{console}#/ns/public/{namespace}")
    names = lambda d: [row[0].lstrip("\u25b8\u25be ") for row in table_rows(d, "#topic-list")]  # noqa: E731
    wait(browser).until(lambda d: sorted(names(d)) == sorted(backlogs))
    row = wait(browser).until(lambda d: [r for r in table_rows(d, "#topic-list") if r[0].endswith("charlie")
                                         and r[5] == "8"] or None)[0]  # the partitions' backlogs summed
    assert row[1] == "partitioned (2)"

    click(browser, '[data-focus-key="sort:backlog"]')
    wait(browser).until(lambda d: names(d) == sorted(backlogs, key=backlogs.get, reverse=True))
    assert [r[5] for r in table_rows(browser, "#topic-list")] == ["8", "3", "1", "0"]

    search = browser.find_element(By.ID, "topic-search")
    search.send_keys("ha")  # alpha, charlie
    wait(browser).until(lambda d: names(d) == ["charlie", "alpha"])
    assert text_of(browser, "#topic-count") == "2 topics"

    click(browser, f'[data-focus-key="open:{partitioned}"]')
    wait(browser).until(lambda d: names(d) == ["charlie", "charlie-partition-0", "charlie-partition-1", "alpha"])
    children = table_rows(browser, "#topic-list")[1:3]
    assert [r[1] for r in children] == ["partition", "partition"]
    assert sum(int(r[5]) for r in children) == 8
    assert [int(r[5]) for r in children] == [backlog(broker, f"{partitioned}-partition-{p}", "s") for p in range(2)]
    search.clear()
    search.send_keys("zulu")
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#topic-list td.empty"), "No topic matches"))
    producer.close()


def test_the_overview_shows_the_broker(broker_factory, official, shared_browser):
    """Version, cluster, uptime and the counts of a broker whose topics the test made."""
    broker = broker_factory()
    browser = shared_browser
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        first, second = "persistent://public/default/one", "persistent://public/default/two"
        producer = client.create_producer(first)
        consumers = [client.subscribe(first, "a"), client.subscribe(second, "b"), client.subscribe(second, "c")]
        for _ in range(4):
            producer.send(b"m")
        report = rest(broker, "/broker-stats/load-report").json()
        browser.get(broker.broker.web_service_url + "/")
        cards = lambda d: dict(zip(texts(d, "#overview-cards .label"), texts(d, "#overview-cards .value")))  # noqa: E731
        wait(browser).until(lambda d: cards(d).get("TOPICS") == "2" and cards(d).get("PRODUCERS") == "1"
                            and cards(d).get("CONSUMERS") == "3" and cards(d).get("SUBSCRIPTIONS") == "3")
        shown = cards(browser)
        assert shown["VERSION"] == report["brokerVersionString"] == minipulsar_version()
        assert shown["CLUSTER"] == "standalone"
        uptime = shown["UPTIME"]
        assert re.fullmatch(r"\d+s", uptime) and int(uptime[:-1]) <= time.time() - report["startTimestamp"] / 1000 + 1
        wait(browser).until(lambda d: cards(d)["UPTIME"] != uptime)  # it counts on
        for consumer in consumers:
            consumer.close()
    finally:
        client.close()


def minipulsar_version() -> str:
    from minipulsar import __version__
    return __version__


def test_the_keyboard_reaches_and_presses_the_main_actions(console_broker, client, shared_browser, console):
    """Tab from the top of a topic page reaches "Produce a message"; Enter opens its dialog with
    the focus in the payload; Tab and Enter send it; a subscription's "Clear backlog" is reached
    and confirmed the same way (Cancel first, then the confirmation)."""
    browser, broker = shared_browser, console_broker
    topic = f"persistent://public/default/{unique('keys')}"
    consumer = client.subscribe(topic, "inbox")
    open_topic(browser, console, topic)
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-name"), "inbox"))

    def tab_to(label: str, limit: int = 40) -> None:
        for _ in range(limit):
            press(browser, Keys.TAB)
            if focused_text(browser) == label:
                return
        raise AssertionError(f"{limit} presses of Tab never reached {label!r}")

    browser.find_element(By.TAG_NAME, "body").click()
    tab_to("Produce a message")
    press(browser, Keys.ENTER)
    wait(browser).until(lambda d: d.switch_to.active_element.get_attribute("id") == "field-payload")
    press(browser, "typed")
    tab_to("Send", 6)
    press(browser, Keys.ENTER)
    message = consumer.receive(10000)
    assert message.data() == b"typed"
    consumer.acknowledge(message)
    wait(browser).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog[open]"))
    wait(browser).until(lambda d: focused_text(d) == "Produce a message")  # back where it was opened
    client.create_producer(topic).send(b"second")
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".sub-backlog"), "1"))

    tab_to("Clear backlog")
    press(browser, Keys.ENTER)
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "dialog[open] [data-confirm]"))
    assert focused_text(browser) == "Cancel"
    press(browser, Keys.TAB)
    press(browser, Keys.ENTER)
    wait_for(lambda: backlog(broker, topic, "inbox") == 0, "the backlog cleared from the keyboard")
    consumer.close()
