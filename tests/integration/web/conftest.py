"""Fixtures of the web room: `browser`, a headless Chromium driven by Selenium (tests/browser.py),
and `console_url`, the web console of the test broker.

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


@pytest.fixture
def console_url(broker) -> str:
    return broker.broker.web_service_url + "/"
