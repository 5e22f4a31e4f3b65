"""Fixtures of the web room: `browser`, a headless Chromium driven by Selenium through
chromedriver (Debian's chromium and chromium-driver packages; .ci/run installs them), and
`console_url`, the web console of the test broker.

Chromium's console is recorded; a test that left an error in it fails at teardown: the console
must run without errors in the browser. The window is 1366x900, a laptop screen."""
from __future__ import annotations

import shutil

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "chromium"
CHROMEDRIVER = "chromedriver"


def chrome_options() -> webdriver.ChromeOptions:
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
        pytest.fail("the console's browser tests need Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver; .ci/run does)")
    return webdriver.Chrome(service=Service(driver_path), options=chrome_options())


def console_errors(driver: webdriver.Chrome) -> list[dict]:
    """Error entries of the browser's console since the last call (failed requests included)."""
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.fixture
def browser():
    driver = start_browser()
    driver.set_script_timeout(20)
    yield driver
    errors = console_errors(driver)
    driver.quit()
    assert not errors, f"the browser logged errors: {errors}"


@pytest.fixture
def console_url(broker) -> str:
    return broker.broker.web_service_url + "/"
