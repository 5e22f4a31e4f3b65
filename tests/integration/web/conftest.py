"""Fixtures of the web room: `browser`, a headless Chromium driven by Selenium (tests/browser.py),
and `console_url`, the web console of the test broker; `shared_browser`, one Chromium for a whole
test module (starting one costs about a second), for the modules whose tests each walk a page.

Chromium's console is recorded; a test that left an error in it fails at teardown: the console
must run without errors in the browser. The window is 1366x900, a laptop screen."""
from __future__ import annotations

import pytest

from tests.browser import console_errors, start_browser


@pytest.fixture
def browser():
    driver = start_browser()
    driver.set_script_timeout(20)
    yield driver
    errors = console_errors(driver)
    driver.quit()
    assert not errors, f"the browser logged errors: {errors}"


@pytest.fixture(scope="module")
def module_browser():
    driver = start_browser()
    driver.set_script_timeout(20)
    yield driver
    driver.quit()


@pytest.fixture
def shared_browser(module_browser):
    """The module's Chromium, on a blank page with an empty sessionStorage; the test fails at
    teardown when it left an error in the browser's console (a test that provokes an expected one
    reads it with tests.browser.console_errors before it ends)."""
    module_browser.get("about:blank")
    console_errors(module_browser)  # what an earlier test's teardown already judged
    yield module_browser
    errors = console_errors(module_browser)
    module_browser.execute_script("try { sessionStorage.clear(); } catch (e) {}")
    assert not errors, f"the browser logged errors: {errors}"


@pytest.fixture
def console_url(broker) -> str:
    return broker.broker.web_service_url + "/"
