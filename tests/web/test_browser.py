"""The explorer in a real browser: Debian's Chromium driven by Selenium 4 through chromedriver,
headless, against the app served by uvicorn on 127.0.0.1 over the session's real SQLite store
(``conftest.World``: two recorded designs and a simulation run).

It signs in with a read token and clicks through as an architect would: the design list, a
design, its campus overview, a hall's floor plan, a rack (elevation, devices, cables), the cut
sheet rows of that rack's cables, the cut sheet sorted by length and searched, a comparison of
the two designs and the run's charts; on each page it checks what the page shows, that the
browser logged no error (Chrome's ``goog:loggingPrefs`` browser log at SEVERE) and saves a
screenshot in ``$CLUSTERLOOM_ARTIFACTS`` (``.ci/run`` points it into the run directory; default:
the test's temporary directory). Skipped without chromium and chromedriver, unless CI is set.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from web_helpers import World

from clusterloom.web import create_app

pytestmark = pytest.mark.browser

CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
#: Seconds a page may take to show what it is waited for.
WAIT_S = 20


def _missing() -> str | None:
    for path in (CHROMEDRIVER, CHROMIUM):
        if not (Path(path).is_file() or shutil.which(path)):
            return f"{path} is not installed (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[str]:
    """The explorer on a free port of 127.0.0.1, served by uvicorn in a thread."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        create_app(world.store), host="127.0.0.1", port=port, log_level="warning"
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the explorer did not start within 20 s")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    why = _missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test must run in CI: {why}")
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.add_argument("--disable-dev-shm-usage")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT_S)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("CLUSTERLOOM_ARTIFACTS")
    folder = Path(given) / "browser" if given else tmp_path_factory.mktemp("browser")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Tour:
    """One browser session's steps: wait for what a page shows, check its console, shoot it."""

    def __init__(self, driver: Any, base: str, folder: Path) -> None:
        self.driver, self.base, self.folder = driver, base, folder
        self.shots: list[str] = []

    def css(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, selector))

    def wait(self, what: Callable[[], Any], describe: str) -> Any:
        from selenium.common.exceptions import StaleElementReferenceException

        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                got = what()
            except StaleElementReferenceException:  # the page replaced it meanwhile
                got = None
            if got:
                return got
            time.sleep(0.1)
        log = [e.get("message") for e in self.driver.get_log("browser")]
        pytest.fail(
            f"{self.driver.current_url}: {describe} did not show within {WAIT_S} s "
            f"(browser log: {log}; page: {self.text()[:400]!r})"
        )

    def text(self) -> str:
        return str(self.driver.find_element("tag name", "body").text)

    def path(self) -> str:
        return unquote(urlparse(self.driver.current_url).path)

    def done(self, name: str, show: str | None = None) -> None:
        """The page is checked: no error in its console, a screenshot saved (scrolled to the
        first element matching ``show`` when given)."""
        errors = [e for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert errors == [], f"{name} ({self.driver.current_url}): console errors {errors}"
        if show is not None and self.css(show):
            self.driver.execute_script(  # its top just under the explorer's sticky header
                "arguments[0].scrollIntoView(); window.scrollBy(0, -64)", self.css(show)[0]
            )
        shot = self.folder / f"{len(self.shots) + 1:02d}-{name}.png"
        assert self.driver.save_screenshot(str(shot)), f"no screenshot of {name}"
        self.shots.append(shot.name)

    def click(self, element: Any) -> None:
        """A click on ``element`` (an SVG ``<a>`` is clicked through script when the driver
        cannot reach it as a link)."""
        from selenium.common.exceptions import WebDriverException

        try:
            element.click()
        except WebDriverException:
            self.driver.execute_script(
                "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", element
            )


def _column(tour: Tour, name: str) -> list[str]:
    heads = [th.get_attribute("data-col") for th in tour.css("table.sortable thead th")]
    i = heads.index(name) + 1
    return [td.text for td in tour.css(f"table.sortable tbody tr td:nth-child({i})")]


def _number(text: str) -> float:
    return float(text.replace(",", "").split()[0])


def test_click_through_the_explorer(
    world: World, server: str, browser: Any, artifacts: Path
) -> None:
    tour = Tour(browser, server, artifacts)
    driver = browser

    # sign in with a read token
    driver.get(server + "/login")
    tour.wait(lambda: tour.css("input#token"), "the sign-in form")
    tour.done("login")
    tour.css("input#token")[0].send_keys(world.read)
    tour.css("form button[type=submit]")[0].click()
    tour.wait(lambda: tour.css("table#designs"), "the design list")
    listed = [a.text for a in tour.css("table#designs tbody td:first-child a")]
    assert sorted(listed) == sorted([world.tight.name, world.campus.name])
    tour.done("designs")

    # a design: its figures, tier diagrams and the campus overview with a tile per hall
    link = next(a for a in tour.css("table#designs a") if a.text == world.campus.name)
    tour.click(link)
    tour.wait(lambda: tour.css("svg#campus-overview"), "the campus overview")
    assert world.campus.name in driver.find_element("tag name", "h1").text
    tiles = tour.css("svg#campus-overview a.hall-at")
    assert sorted(t.get_attribute("data-hall") for t in tiles) == ["b1/h1", "b2/h1"]
    tour.done("design", show="svg#campus-overview")

    # campus -> hall: the floor plan, its rows labelled, every rack a link
    tour.click(next(t for t in tiles if t.get_attribute("data-hall") == "b1/h1"))
    tour.wait(lambda: tour.css("svg.floor a.rack-at"), "the hall's floor plan")
    assert tour.path().endswith("/halls/b1/h1")
    plan = tour.css("svg.floor")[0]
    assert plan.get_attribute("data-hall") == "b1/h1"
    assert sorted(t.text for t in tour.css("svg.floor text.row-label")) == ["r01", "r02"]
    racks = tour.css("svg.floor a.rack-at")
    names = [r.get_attribute("data-rack") for r in racks]
    assert all(n.startswith("b1-h1-r0") for n in names)
    assert tour.css("svg.floor g.scale-bar")
    tour.done("hall")

    # hall -> rack: its elevation with every unit numbered, its devices and cables
    rack = names[0]
    tour.click(racks[0])
    tour.wait(lambda: tour.css("svg.elevation"), "the rack's elevation")
    assert tour.path().endswith(f"/racks/{rack}")
    assert driver.find_element("tag name", "h1").text == f"Rack {rack}"
    elevation = tour.css("svg.elevation")[0]
    assert elevation.get_attribute("data-rack") == rack
    devices = [g.get_attribute("data-device") for g in tour.css("svg.elevation g.device")]
    assert devices, "the elevation draws no device"
    units = tour.css("svg.elevation text.u")
    assert [int(u.text) for u in units] == list(range(1, len(units) + 1))
    cables = tour.css("table#cables tbody tr")
    assert cables, "the rack page lists no cable"
    first = cables[0].text
    tour.done("rack", show="svg.elevation")

    # rack -> one of its cables: the cut sheet rows of this rack hold that cable
    driver.get(f"{server}/designs/{world.campus.id}/tables/cut_sheet?q={rack}")
    tour.wait(lambda: tour.css("table.sortable tbody tr"), "the rack's cut sheet rows")
    rows = [r.text for r in tour.css("table.sortable tbody tr")]
    assert all(rack in r for r in rows)
    cable_id = first.split()[0]
    assert any(cable_id in r for r in rows), f"cable {cable_id} not in the cut sheet"
    tour.done("cable")

    # the cut sheet sorted by length (ascending, then descending) and searched
    driver.get(f"{server}/designs/{world.campus.id}/tables/cut_sheet")
    tour.wait(lambda: tour.css("table.sortable th[data-col]"), "the cut sheet")
    total = _number(tour.css("[data-total]")[0].text)
    length = next(
        c
        for c in (th.get_attribute("data-col") for th in tour.css("table.sortable th"))
        if c.startswith("length")
    )

    def sort_by(descending: bool) -> list[float]:
        head = next(
            th for th in tour.css("table.sortable th") if th.get_attribute("data-col") == length
        )
        head.find_element("tag name", "a").click()
        want = "descending" if descending else "ascending"
        tour.wait(
            lambda: any(
                th.get_attribute("aria-sort") == want for th in tour.css("table.sortable th")
            ),
            f"the cut sheet sorted {want}",
        )
        return [_number(v) for v in _column(tour, length) if v]

    up = sort_by(False)
    assert up == sorted(up) and len(up) > 1
    tour.done("cut-sheet-by-length")
    down = sort_by(True)
    assert down == sorted(down, reverse=True) and down[0] >= up[-1]
    # search for the rack with the fewest cables (the store's count is the expected one)
    counts = {n: world.store.table(world.campus.id, "cut_sheet", search=n).total for n in names}
    rack = min(names, key=lambda n: (counts[n], n))
    search = tour.css("form.search input[type=search]")[0]
    search.clear()
    search.send_keys(rack)
    tour.css("form.search button")[0].click()

    def searched() -> bool:
        rows = tour.css("table.sortable tbody tr")
        return bool(rows) and all(rack in r.text for r in rows)

    tour.wait(searched, "the search result")
    found = _number(tour.css("[data-total]")[0].text)
    assert 0 < found == counts[rack] <= total
    assert f"q={rack}" in driver.current_url  # the search is in the address, to share
    tour.done("cut-sheet-search")

    # a comparison of the two designs
    driver.get(f"{server}/compare?a={world.tight.id}&b={world.campus.id}")
    tour.wait(lambda: " against " in driver.find_element("tag name", "h1").text, "the comparison")
    heading = driver.find_element("tag name", "h1").text
    assert world.tight.name in heading and world.campus.name in heading
    # each summary figure of both designs and its delta b - a, e.g. the error findings
    a, b = int(world.tight.summary["errors"]), int(world.campus.summary["errors"])
    delta = f"{b - a:+d}" if b != a else "0"
    rows = [r.text for r in tour.css("table tr")]
    assert f"errors {a} {b} {delta}" in rows, rows
    tour.done("compare")

    # the run's charts, drawn by plotly from the package (no CDN)
    driver.get(f"{server}/runs/{world.run.id}")
    tour.wait(lambda: len(tour.css(".chart.js-plotly-plot")) >= 3, "the run's three charts")
    titles = " ".join(t.text for t in tour.css(".chart .gtitle"))
    assert "Flow completion times" in titles and "Busiest link" in titles
    assert tour.css(".chart .colorbar"), "the heat map has no colour bar"
    scripts = [s.get_attribute("src") for s in tour.css("script[src]")]
    assert all(s.startswith(server) for s in scripts), scripts
    tour.done("run-charts", show=".chart.js-plotly-plot")

    assert len(tour.shots) == 10


def test_a_console_error_fails_the_page_check(browser: Any, artifacts: Path) -> None:
    """The console check can fail: a page whose script throws is refused."""
    tour = Tour(browser, "", artifacts)
    browser.get("data:text/html,<p>broken</p><script>throw new Error('boom')</script>")
    tour.wait(lambda: "broken" in tour.text(), "the broken page")
    with pytest.raises(AssertionError, match="boom"):
        tour.done("broken")
