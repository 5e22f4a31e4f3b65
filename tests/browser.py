"""A headless Chromium driven by Selenium through chromedriver (Debian's chromium and
chromium-driver; .ci/run installs them), for the browser tests of the web console and the
WebSocket API. Missing, they fail the test, naming what to install: never a silent skip."""
from __future__ import annotations

import shutil

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "chromium"
CHROMEDRIVER = "chromedriver"


def chrome_options() -> webdriver.ChromeOptions:
    """Headless, a laptop's 1366x900 window, the browser's console recorded."""
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which(CHROMIUM) or CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1366,900", "--lang=en-US"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return options


def start_browser() -> webdriver.Chrome:
    """A headless Chromium; fails (never skips) when Chromium or its driver is missing."""
    driver_path = shutil.which(CHROMEDRIVER)
    if driver_path is None or shutil.which(CHROMIUM) is None:
        pytest.fail("the browser tests need Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver; .ci/run does)", pytrace=False)
    return webdriver.Chrome(service=Service(driver_path), options=chrome_options())


def console_errors(driver: webdriver.Chrome) -> list[dict]:
    """Error entries of the browser's console since the last call (failed requests included)."""
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
