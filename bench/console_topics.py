"""The web console with many topics: what its lists cost the broker and the browser.

    python bench/console_topics.py [--topics 10000] [--rounds 5]

Starts a broker process (minipulsar.launcher), creates --topics topics in public/default through the
REST API (PUT, so each one is loaded), then measures, in the same run:
  * GET /admin/v2/broker-stats/topics (what the overview and the namespace page poll every 2 s):
    median time and size, beside GET /metrics (the other every-topic document, as a Prometheus
    scraper reads it) for a ratio;
  * GET /admin/v2/persistent/public/default (the names the namespace page lists);
  * in headless Chromium: from opening the namespace page to its first page of 50 rows with figures,
    and from a click on "Backlog" (sort every topic) to the redrawn page.
Prints the figures and the command. Run it by hand; on a shared machine, note the load.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from minipulsar.launcher import BrokerProcess
from perf_compare import stop_brokers_on_sigterm  # bench/ is this script's folder, first on sys.path


def timed_get(session: requests.Session, url: str, rounds: int) -> tuple[float, int]:
    """(median seconds, bytes) of GET url."""
    times, size = [], 0
    for _ in range(rounds):
        start = time.perf_counter()
        answer = session.get(url, timeout=120)
        times.append(time.perf_counter() - start)
        answer.raise_for_status()
        size = len(answer.content)
    return statistics.median(times), size


def create_topics(base: str, count: int) -> float:
    session = requests.Session()

    def create(i: int) -> None:
        session.put(f"{base}/admin/v2/persistent/public/default/bench-{i:05d}", timeout=60).raise_for_status()

    start = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, range(count)))
    return time.perf_counter() - start


def browser_times(base: str, count: int) -> tuple[float, float]:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        start = time.perf_counter()
        driver.get(f"{base}/#/ns/public/default")
        wait = WebDriverWait(driver, 120, poll_frequency=0.01)
        wait.until(lambda d: d.find_element(By.ID, "topic-count").text == f"{count:,} topics"
                   and d.find_elements(By.CSS_SELECTOR, "#topic-list .backlog")[0].text != "\u2014")
        opened = time.perf_counter() - start
        start = time.perf_counter()
        driver.find_element(By.CSS_SELECTOR, '[data-focus-key="sort:backlog"]').click()
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '[data-focus-key="sort:backlog"]').get_attribute("aria-sort"))
        sorted_in = time.perf_counter() - start
        return opened, sorted_in
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    data = Path(tempfile.mkdtemp(prefix="console-bench-"))
    broker = BrokerProcess(data, settings={"brokerDeleteInactiveTopicsEnabled": "false"}).start()
    try:
        base = broker.web_url
        created = create_topics(base, args.topics)
        session = requests.Session()
        stats_s, stats_size = timed_get(session, f"{base}/admin/v2/broker-stats/topics", args.rounds)
        metrics_s, metrics_size = timed_get(session, f"{base}/metrics", args.rounds)
        names_s, names_size = timed_get(session, f"{base}/admin/v2/persistent/public/default", args.rounds)
        opened, sorted_in = browser_times(base, args.topics)
        print(f"python bench/console_topics.py --topics {args.topics} --rounds {args.rounds}")
        print(f"{args.topics} topics created through REST in {created:.1f} s")
        print(f"GET broker-stats/topics: {stats_s * 1000:.0f} ms median, {stats_size / 1e6:.2f} MB")
        print(f"GET /metrics:            {metrics_s * 1000:.0f} ms median, {metrics_size / 1e6:.2f} MB "
              f"(broker-stats/topics takes {stats_s / metrics_s:.2f}x the time of a scrape)")
        print(f"GET topic names:         {names_s * 1000:.0f} ms median, {names_size / 1e6:.2f} MB")
        print(f"browser: namespace page with figures in {opened:.2f} s; sorted by backlog in {sorted_in * 1000:.0f} ms")
    finally:
        broker.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
