"""Screenshots of the web console for docs/: a broker with a little traffic, headless Chromium.

    python tools/console_screenshots.py [--out docs]

Starts a broker in a child process (minipulsar.launcher) on free ports, makes a few topics with the
official client (a partitioned one, a Key_Shared subscription, a backlog), keeps messages flowing
while it takes docs/console-overview.png, docs/console-namespace.png and docs/console-topic.png at
1366x900, then stops everything. Needs Debian's chromium and chromium-driver and selenium.
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pulsar
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from minipulsar.launcher import BrokerProcess

WARM_UP_SECONDS = 40  # the charts show this much traffic


def traffic(client: pulsar.Client, stop: threading.Event) -> None:
    orders = client.create_producer("persistent://public/default/orders")
    clicks = client.create_producer("persistent://public/default/clicks", batching_enabled=True)
    shipping = client.subscribe("persistent://public/default/orders", "shipping",
                                consumer_type=pulsar.ConsumerType.KeyShared)
    billing = client.subscribe("persistent://public/default/orders", "billing", consumer_type=pulsar.ConsumerType.Shared)
    client.subscribe("persistent://public/default/clicks", "analytics")  # never reads: a backlog
    i = 0
    while not stop.is_set():
        i += 1
        orders.send(json.dumps({"order": i, "customer": f"c-{i % 17}", "amount": round(10 + i % 90 * 1.25, 2)}).encode(),
                    partition_key=f"c-{i % 17}", properties={"source": "web"})
        clicks.send_async(f"click {i}".encode(), None)
        for consumer in (shipping, billing):
            try:
                consumer.acknowledge(consumer.receive(50))
            except pulsar.Timeout:
                pass
        stop.wait(0.02 if (i // 200) % 2 else 0.05)  # the rate goes up and down


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs", type=Path)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="console-shots-"))
    broker = BrokerProcess(data).start()
    client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    stop = threading.Event()
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,900",
                     "--hide-scrollbars"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        client.create_producer("persistent://public/default/events").send(b"{}")
        requests.put(f"{broker.web_url}/admin/v2/persistent/public/default/payments/partitions", json=4, timeout=10)
        flow = threading.Thread(target=traffic, args=(client, stop), daemon=True)
        flow.start()
        driver.get(broker.web_url + "/")
        time.sleep(WARM_UP_SECONDS)  # a screenshot wants history in the charts, not a condition
        driver.save_screenshot(str(args.out / "console-overview.png"))
        driver.get(broker.web_url + "/#/ns/public/default")
        WebDriverWait(driver, 20).until(ec.element_to_be_clickable((By.LINK_TEXT, "orders")))
        driver.find_element(By.CSS_SELECTOR, '[aria-label="partitions of payments"]').click()
        time.sleep(2)
        driver.save_screenshot(str(args.out / "console-namespace.png"))
        driver.get(broker.web_url + "/#/topic/persistent/public/default/orders")
        time.sleep(WARM_UP_SECONDS)
        driver.save_screenshot(str(args.out / "console-topic.png"))
    finally:
        stop.set()
        driver.quit()
        client.close()
        broker.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
