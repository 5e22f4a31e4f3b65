"""What the web console's browser tests share: waiting on the page (Selenium's WebDriverWait on
DOM conditions, never a sleep), opening pages, driving dialogs, and reading the broker back
through its REST API (the oracle the console's figures are checked against)."""
from __future__ import annotations

import requests
from selenium.common.exceptions import ElementNotInteractableException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.helpers import rest_path

WAIT_SECONDS = 20


def wait(driver, timeout: float = WAIT_SECONDS, ignoring: tuple = ()) -> WebDriverWait:
    """A WebDriverWait that also retries a condition raising one of ignoring (NoSuchElement always)."""
    return WebDriverWait(driver, timeout, ignored_exceptions=ignoring)


def press(driver, keys: str) -> None:
    """Type keys into the focused element, read again when the browser refuses the one read: a refresh
    that redraws the view replaces the focused element with its copy (the console moves the focus to
    it: dom.js refill), which leaves the element read stale, and a CI run once found the focus, at the
    first Tab after a dialog had closed, on an element that could not take keys. Gives up after
    WAIT_SECONDS."""
    wait(driver, ignoring=(StaleElementReferenceException, ElementNotInteractableException)).until(
        lambda d: d.switch_to.active_element.send_keys(keys) or True)


def focused_text(driver) -> str:
    """The text of the focused element, read again when a redraw replaced it meanwhile."""
    return wait(driver, ignoring=(StaleElementReferenceException,)).until(
        lambda d: (d.switch_to.active_element.text,))[0]


def text_of(driver, css: str) -> str:
    return wait(driver).until(ec.visibility_of_element_located((By.CSS_SELECTOR, css))).text


def clickable(driver, css: str):
    return wait(driver).until(ec.element_to_be_clickable((By.CSS_SELECTOR, css)))


def click(driver, css: str) -> None:
    """Click what css selects once it can be clicked, finding it again when a refresh redrew it
    between finding and clicking (the topic page redraws its tabs and tables every 2 s)."""
    def clicked(d) -> bool:
        element = d.find_element(By.CSS_SELECTOR, css)
        if not (element.is_displayed() and element.is_enabled()):
            return False
        element.click()
        return True

    wait(driver, ignoring=(StaleElementReferenceException,)).until(clicked)


def local_name(topic: str) -> str:
    return topic.rsplit("/", 1)[1]


def topic_hash(topic: str) -> str:
    return f"#/topic/{topic.replace('://', '/')}"


def open_topic(driver, console_url: str, topic: str) -> None:
    driver.get(console_url + topic_hash(topic))
    wait(driver).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "h1"), topic))


def toolbar_button(driver, label: str):
    """A button of the topic page's toolbar by its label, once it can be clicked."""
    return wait(driver).until(ec.element_to_be_clickable(
        (By.XPATH, f"//div[contains(@class,'toolbar')]/button[normalize-space()='{label}']")))


def submit_dialog(driver) -> None:
    """Press the open form dialog's OK button and wait for the dialog to close (the action succeeded)."""
    clickable(driver, "dialog[open] button[type=submit]").click()
    wait(driver).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog[open]"))


def confirm(driver) -> None:
    """Confirm the open confirmation dialog (the safe choice, Cancel, has the focus)."""
    button = clickable(driver, "dialog[open] [data-confirm]")
    assert driver.switch_to.active_element.text == "Cancel"
    button.click()
    wait(driver).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog[open]"))


def set_field(driver, name: str, value: str) -> None:
    """Set a dialog field (input, select or datetime-local) the way a user's input would."""
    field = wait(driver).until(ec.visibility_of_element_located((By.ID, f"field-{name}")))
    driver.execute_script("arguments[0].value = arguments[1];"
                          "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));", field, value)


def open_tab(driver, key: str) -> None:
    click(driver, f"#tab-{key}")
    wait(driver).until(lambda d: d.execute_script(
        "return document.getElementById(arguments[0]).getAttribute('aria-selected')", f"tab-{key}") == "true")


def table_rows(driver, css: str = "#tabpanel") -> list[list[str]]:
    """The cell texts of the body rows of the tables in css (one list per row), read in one script:
    the page redraws its tables every refresh, so elements found one by one can go stale."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0] + ' table tbody tr'), (row) =>"
        " Array.from(row.cells, (cell) => cell.innerText.trim()));", css)


def texts(driver, css: str) -> list[str]:
    """The texts of every element css selects, read in one script (see table_rows)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), (el) => el.innerText.trim());", css)


def rest(broker, path: str, method: str = "GET", **kwargs) -> requests.Response:
    """The broker's admin REST API (path after /admin/v2)."""
    return requests.request(method, f"{broker.broker.web_service_url}/admin/v2{path}", timeout=10, **kwargs)


def topic_stats(broker, topic: str) -> dict:
    return rest(broker, f"{rest_path(topic)}/stats").json()


def backlog(broker, topic: str, subscription: str) -> int:
    return topic_stats(broker, topic)["subscriptions"][subscription]["msgBacklog"]
