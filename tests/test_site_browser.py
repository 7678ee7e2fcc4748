"""The site in a real headless browser: Debian's chromium driven by Selenium through
chromium-driver, the site served over HTTP on 127.0.0.1.

Without the browser these tests skip, except in CI (the CI variable set), where they fail:
.ci/run installs chromium and chromium-driver. KNOWL_CHROMIUM and KNOWL_CHROMEDRIVER name
other binaries. KNOWL_UPDATE_SCREENSHOTS=1 also writes the README's screenshot
(docs/img/site-page.png), as golden files are regenerated: never by hand.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

try:  # The test extra installs Selenium; without it the browser fixture skips (fails in CI).
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support.ui import WebDriverWait

    SELENIUM = True
except ImportError:
    SELENIUM = False
from whoosh.lang.porter import stem

from knowl_build.index.analysis import analyzer, query_terms
from knowl_build.reader import Reader
from knowl_build.reader.view import visible
from knowl_build.site import search, urls
from tests.helpers import invoke
from tests.test_site_search import DISTINCT, build, make_site_project

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("KNOWL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("KNOWL_CHROMEDRIVER", "/usr/bin/chromedriver")
SCREENSHOT = ROOT / "docs" / "img" / "site-page.png"
WAIT = 15.0

# A page of sections (the passage is under the heading that matches most, a long line is cut
# near its match) and one whose title, heading and text hold markup that must stay text.
LONG = " ".join(["filler words before the match"] * 12)
PASSAGE_PAGES = {
    "knowledge/global/metrics-handbook.md": (
        "---\ntitle: Metrics handbook\nsummary: Where the metrics are defined.\n"
        "tags: [handbook]\n---\nAn introduction to the handbook, and to churn.\n\n"
        "## Churn and retention\n\nChurn counts the customers lost in a month.\n\n"
        "Churn and retention are complements; churn comes first.\n\n"
        f"## Gross margin\n\n{LONG} the gross margin of an order, then more words after it.\n\n"
        "## Basilisk notes\n\nNothing here.\n"
    ),
    "knowledge/global/hostile-passage.md": (
        "---\ntitle: '<img src=x onerror=\"window.__knowlPwned = 8\"> Trap <b>bold</b>'\n"
        "summary: A trap.\n---\n## Cockatrice <i>heading</i>\n\n"
        'The cockatrice: <img src=x onerror="window.__knowlPwned = 9"> beside '
        "<script>window.__knowlPwned = 10</script> the basilisk.\n"
    ),
}
PASSAGE_QUERIES = ["churn", "churn retention", "gross margin", "basilisk", "cockatrice onerror"]
PWNED = "return window.__knowlPwned === undefined ? null : window.__knowlPwned"


def missing(reason: str) -> None:
    """No browser: a failure in CI, where .ci/run installs it; a skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: .ci/run installs chromium and chromium-driver)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            missing(f"{binary} is missing (apt-get install chromium chromium-driver)")
    if not SELENIUM:
        missing("selenium is not installed (pip install -e '.[test]')")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # as root in a container
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,960",
        "--force-device-scale-factor=1",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    browser.set_page_load_timeout(WAIT)
    try:
        yield browser
    finally:
        browser.quit()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """(project root, site folder, its URL): the site of test_site_search's project, served
    by http.server on 127.0.0.1 in a thread."""
    monkey = pytest.MonkeyPatch()
    monkey.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkey.setenv("KNOWL_EMBEDDINGS", "off")
    # Terms in more than two pages get files of their own (as common words do in a large
    # base): search.js follows its shards to them, and reads the rest in the shards.
    monkey.setattr(search, "LARGE", 2)
    root = tmp_path_factory.mktemp("browser") / "proj"
    proj = make_site_project(root)
    proj.write(PASSAGE_PAGES)
    proj.commit("Pages with sections, and a hostile passage")
    out = root.parent / "site"
    build(root)
    invoke(["site", "--repo", str(root), "--out", str(out), "-q"])
    handler = functools.partial(_Quiet, directory=str(out))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, out, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        monkey.undo()


# --- helpers -----------------------------------------------------------------------------------


def wait(driver: WebDriver, condition: Callable[[WebDriver], Any], what: str) -> Any:
    """Wait for `condition`; the page's script replaces the elements a condition reads (the
    results list is rebuilt as the query changes), so a stale element means "not yet".
    Polled every 20 ms, not Selenium's default half second: a search answers in a few
    milliseconds, and the module waits dozens of times."""

    return WebDriverWait(
        driver, WAIT, poll_frequency=0.02, ignored_exceptions=(StaleElementReferenceException,)
    ).until(condition, message=f"waiting for {what}")


def search_for(driver: WebDriver, url: str, text: str) -> list[WebElement]:
    """search.html?q=text, once the results are shown: the result links."""

    driver.get(f"{url}search.html?q={quote(text)}")
    wait(
        driver,
        lambda d: (
            d.execute_script("return document.documentElement.dataset.searchState")
            in ("done", "error")
        ),
        "the search results",
    )
    state = driver.execute_script("return document.documentElement.dataset.searchState")
    assert state == "done", driver.find_element(By.ID, "search-status").text
    return driver.find_elements(By.CSS_SELECTOR, "#search-results .search-result-title a")


def graph_ready(driver: WebDriver) -> WebElement:

    section = driver.find_element(By.ID, "graph")
    wait(driver, lambda d: section.get_attribute("data-state") in ("ready", "error"), "the graph")
    assert section.get_attribute("data-state") == "ready", section.text
    return section


def listed_nodes(section: WebElement) -> list[str]:
    """The names the graph lists as links (its <details> may be closed: textContent)."""

    links = section.find_elements(By.CSS_SELECTOR, ".graph-list a")
    return [str(a.get_attribute("textContent")) for a in links]


def relative(driver: WebDriver, url: str) -> str:
    current: str = driver.current_url
    assert current.startswith(url), current
    return current[len(url) :]


# --- the tests ---------------------------------------------------------------------------------


def test_index_links_to_a_page_that_shows_its_drift(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:

    _root, _out, url = site
    driver.get(url + "index.html")
    driver.find_element(By.LINK_TEXT, "Revenue").click()
    wait(driver, lambda d: relative(d, url) == "pages/revenue.html", "the page")
    badges = [b.text.lower() for b in driver.find_elements(By.CSS_SELECTOR, ".badge")]
    assert any("drift" in b for b in badges), badges
    section = graph_ready(driver)
    listed = listed_nodes(section)
    assert "Refund policy" in listed and "shop_pg.orders.total_revenue" in listed


@pytest.mark.parametrize(("word", "page"), sorted(DISTINCT.items()))
def test_search_finds_the_distinctive_page_first(
    driver: WebDriver, site: tuple[Path, Path, str], word: str, page: str
) -> None:
    _root, _out, url = site
    links = search_for(driver, url, word)
    assert links, f"no result for {word}"
    assert links[0].get_attribute("href") == f"{url}pages/{page}.html"


@pytest.mark.parametrize(
    "text", ["revenue", "Refunds of REVENUES", "margin growth", "notes", "RÉFUND Policy"]
)
def test_search_ranks_as_knowl_search(
    driver: WebDriver, site: tuple[Path, Path, str], text: str
) -> None:
    root, _out, url = site
    search_for(driver, url, text)
    found = driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "window.knowlSearch.search(arguments[0], 500).then(function (r) {"
        "  done(r.results.map(function (x) { return [x.kind, x.href, x.score]; })); });",
        text,
    )
    # The pages as `knowl search --kind page` ranks them: the site's pages in that order when
    # the query finds no entity (with entities, the mixed order is tested below).
    with Reader.open(root) as reader:
        view = reader.view
        expected = []
        for hit in reader.search(text, limit=500)["hits"]:
            assert hit["kind"] == "page"
            entry = view.page(hit["scope"], hit["page"])
            assert entry is not None
            expected.append(("page", urls.page_href(entry), hit["score"]))
        mixes = bool(reader.search(text, limit=1, kind="entity")["hits"])
    if mixes:
        expected = cli_mixed(root, text, 500)
    assert [(k, h) for k, h, _ in found] == [(k, h) for k, h, _ in expected]
    for (_, _, mine), (_, _, theirs) in zip(found, expected, strict=True):
        assert mine == pytest.approx(theirs, rel=1e-9)


def test_results_are_keyboard_navigable(driver: WebDriver, site: tuple[Path, Path, str]) -> None:

    _root, _out, url = site
    links = search_for(driver, url, "revenue")
    assert len(links) >= 3
    box = driver.find_element(By.ID, "search-query")
    assert box.get_attribute("value") == "revenue"

    def focused() -> WebElement:
        return driver.switch_to.active_element

    box.click()
    box.send_keys(Keys.ARROW_DOWN)
    assert focused() == links[0]
    focused().send_keys(Keys.ARROW_DOWN)
    assert focused() == links[1]
    focused().send_keys(Keys.ARROW_DOWN)
    focused().send_keys(Keys.ARROW_UP)
    assert focused() == links[1]
    focused().send_keys(Keys.ARROW_UP)
    focused().send_keys(Keys.ARROW_UP)
    assert focused() == box
    box.send_keys(Keys.ARROW_DOWN)
    focused().send_keys(Keys.ARROW_DOWN)
    target = links[1].get_attribute("href")
    focused().send_keys(Keys.ENTER)
    wait(driver, lambda d: d.current_url == target, "the second result's page")


def test_typing_updates_the_results_and_the_address(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:

    _root, _out, url = site
    search_for(driver, url, "revenue")
    box = driver.find_element(By.ID, "search-query")
    box.clear()
    box.send_keys("quincunx")
    wait(
        driver,
        lambda d: (
            [
                a.get_attribute("href")
                for a in d.find_elements(By.CSS_SELECTOR, "#search-results .search-result-title a")
            ]
            == [f"{url}pages/fiscal-calendar.html"]
        ),
        "the new results",
    )
    assert driver.current_url.endswith("search.html?q=quincunx")


def test_an_entity_page_shows_the_pages_that_use_it(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:

    _root, _out, url = site
    driver.get(url + "pages/revenue.html")
    driver.find_element(By.LINK_TEXT, "shop_pg.orders.total_revenue").click()
    wait(
        driver,
        lambda d: relative(d, url) == "entities/shop_pg.orders.total_revenue.html",
        "the entity page",
    )
    main = driver.find_element(By.TAG_NAME, "main")
    used = {a.text for a in main.find_elements(By.TAG_NAME, "a")}
    assert {"Revenue", "Refund policy"} <= used
    section = graph_ready(driver)
    assert {"Revenue", "Refund policy"} <= set(listed_nodes(section))
    assert "Alice Private Plans" not in driver.page_source


def test_a_hostile_page_runs_nothing(driver: WebDriver, site: tuple[Path, Path, str]) -> None:

    _root, _out, url = site
    pwned = "return window.__knowlPwned === undefined ? null : window.__knowlPwned"
    driver.get(url + "pages/hostile.html")
    graph_ready(driver)  # the page's own scripts ran
    assert driver.execute_script(pwned) is None
    for link in driver.find_elements(By.TAG_NAME, "a"):
        href = link.get_attribute("href") or ""
        assert not href.lower().startswith("javascript:"), href
    # Its title in search results and in graphs is text, never markup.
    links = search_for(driver, url, "hostile")
    assert links and "<script>" in links[0].text
    assert driver.execute_script(pwned) is None
    driver.get(url + "pages/revenue.html")
    section = graph_ready(driver)
    assert any("<script>" in name for name in listed_nodes(section))
    assert driver.execute_script(pwned) is None


def test_the_graph_shows_depth_two_and_the_whole_base(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:

    _root, out, url = site
    driver.get(url + "pages/fiscal-calendar.html")
    section = graph_ready(driver)
    near = len(section.find_elements(By.CSS_SELECTOR, ".graph-list li"))
    section.find_elements(By.CSS_SELECTOR, ".graph-depth")[1].click()
    wait(
        driver,
        lambda d: len(section.find_elements(By.CSS_SELECTOR, ".graph-list li")) > near,
        "depth 2",
    )
    assert "Two links away" in section.find_element(By.CSS_SELECTOR, ".graph-note").text
    driver.get(url + "graph.html")
    section = graph_ready(driver)
    overview = json.loads((out / "graph" / "overview.json").read_text())
    assert len(section.find_elements(By.CSS_SELECTOR, ".graph-list li")) == len(overview["nodes"])
    canvas = section.find_element(By.TAG_NAME, "canvas")
    assert canvas.size["width"] > 200 and canvas.size["height"] >= 240


# Words that exercise every rule of Whoosh's Porter stemmer (and its quirks), and texts that
# exercise the tokeniser: search.js must analyse a query exactly as the index was analysed.
STEM_SUFFIXES = [
    *("s", "es", "ies", "sses", "ed", "eed", "ing", "ational", "tional", "enci", "anci"),
    *("izer", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism"),
    *("iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "logi", "icate", "ative"),
    *("alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able"),
    *("ible", "ant", "ement", "ment", "ent", "ou", "ism", "ate", "iti", "ous", "ive", "ize"),
    *("sion", "tion", "e", "ll", "y", "ly"),
]
TEXTS = [
    "Total_revenue is the REVENUES of İstanbul; naïve Straße 2026 x2 café’s 𝒜𝒜𝒜s",
    "ΣΑΣ Ὀδυσσεύς 日本語のテキスト a-b_c d.e yelling yes y yy yyy",
]


def vocabulary() -> list[str]:
    words: set[str] = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        words.update(w.lower() for w in re.findall(r"[^\W_]+", path.read_text(encoding="utf-8")))
    stems = sorted(w for w in words if w.isalpha() and len(w) < 12)[:400]
    words.update(w + s for w in stems for s in STEM_SUFFIXES)
    words.update(["at", "bl", "iz", "tt", "ss", "yies", "hopping", "falling", "filing", "ééed"])
    return sorted(words)


def test_queries_are_analysed_as_the_index_was(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:
    _root, _out, url = site
    driver.get(url + "search.html")
    words = vocabulary()
    assert len(words) > 10000
    stems = driver.execute_script("return arguments[0].map(window.knowlSearch.stem);", words)
    wrong = [(w, s, stem(w)) for w, s in zip(words, stems, strict=True) if s != stem(w)]
    assert not wrong, wrong[:20]
    for text in TEXTS:
        tokens = driver.execute_script(
            "return (arguments[0].match(/[\\p{L}\\p{N}]+/gu) || []).map(function (t) {"
            "  return window.knowlSearch.stem(t.toLowerCase()); });",
            text,
        )
        assert tokens == [t.text for t in analyzer()(text)]
        assert driver.execute_script("return window.knowlSearch.terms(arguments[0]);", text) == (
            query_terms(text)
        )
    hashes = driver.execute_script("return arguments[0].map(window.knowlSearch.fnv1a32);", words)
    assert hashes == [search.fnv1a32(w) for w in words]
    driver.get(url + "graph.html")  # graph.js names a node's file as urls.segment does
    # Long names keep a prefix and a hash (SHA-256: the page is on 127.0.0.1, a secure
    # context); the cut never splits a %XX, whichever byte it falls on.
    names = ["revenue", "a b/ü", "..", "x.y(z)!*'~", "100%", "收入" * 30, "a" * 250]
    names += ["a" * n + "é" * 40 for n in range(176, 181)]
    segments = driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "Promise.all(arguments[0].map(window.knowlGraph.segment)).then(done);",
        names,
    )
    assert segments == [urls.segment(n) for n in names]


def test_screenshots(driver: WebDriver, site: tuple[Path, Path, str], tmp_path: Path) -> None:
    """A page and search results, saved under the test's folder (and, with
    KNOWL_UPDATE_SCREENSHOTS=1, the README's screenshot)."""
    _root, _out, url = site
    driver.get(url + "pages/revenue.html")
    graph_ready(driver)
    driver.execute_script("return new Promise(function (r) { setTimeout(r, 1500); });")
    page = tmp_path / "site-page.png"
    assert driver.save_screenshot(str(page))
    search_for(driver, url, "revenue")
    results = tmp_path / "site-search.png"
    assert driver.save_screenshot(str(results))
    for shot in (page, results):
        assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 5000
    if os.environ.get("KNOWL_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, SCREENSHOT)


def test_no_page_of_the_site_names_a_user_page(site: tuple[Path, Path, str]) -> None:
    root, out, _url = site
    with Reader.open(root) as reader:
        users = [e for e in reader.view.pages if not visible(e, None)]
    assert users
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".json"):
            text = path.read_text(encoding="utf-8")
            for entry in users:
                assert entry.id not in text and entry.title not in text, path


# --- passages and results as you type ----------------------------------------------------------


def cli_hits(root: Path, text: str, limit: int) -> list[tuple[str, Any, Any]]:
    """`knowl search`'s page hits (of its default, `--kind all`): (href, {heading, anchor} or
    None, {text, matches} or None)."""
    with Reader.open(root) as reader:
        found = []
        for hit in reader.search(text, limit=limit, kind="all")["hits"]:
            if hit["kind"] != "page":
                continue
            entry = reader.view.page(hit["scope"], hit["page"])
            assert entry is not None
            section = hit["section"]
            snippet = hit["snippet"]
            found.append(
                (
                    urls.page_href(entry),
                    None if section is None else [section["heading"], section["anchor"]],
                    None if snippet is None else [snippet["text"], snippet["matches"]],
                )
            )
    return found


def site_hits(driver: WebDriver, text: str, limit: int) -> list[tuple[str, Any, Any]]:
    found = driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "window.knowlSearch.search(arguments[0], arguments[1]).then(function (r) {"
        "  done(r.results.filter(function (x) { return x.kind !== 'entity'; })"
        "  .map(function (x) { return [x.href,"
        "    x.section && [x.section.heading, x.section.anchor],"
        "    x.snippet && [x.snippet.text, x.snippet.matches]]; })); });",
        text,
        limit,
    )
    return [(href, section, snippet) for href, section, snippet in found]


@pytest.mark.parametrize("text", [*PASSAGE_QUERIES, "revenue", "refunds of revenue"])
def test_passages_are_those_of_knowl_search(
    driver: WebDriver, site: tuple[Path, Path, str], text: str
) -> None:
    root, _out, url = site
    driver.get(url + "search.html")
    expected = cli_hits(root, text, 100)
    assert expected and any(snippet for _h, _s, snippet in expected)
    assert site_hits(driver, text, 100) == expected


def test_passages_pick_the_section_and_cut_the_line(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:
    _root, _out, url = site
    driver.get(url + "search.html")
    handbook = "pages/metrics-handbook.html"
    hits = {href: (s, p) for href, s, p in site_hits(driver, "churn retention", 50)}
    section, (text, matches) = hits[handbook]
    # The section whose heading and lines hold both words, and its line with both.
    assert section == ["Churn and retention", "churn-and-retention"]
    assert text == "Churn and retention are complements; churn comes first."
    assert [text[a:b] for a, b in matches] == ["Churn", "retention", "churn"]
    hits = {href: (s, p) for href, s, p in site_hits(driver, "margin", 50)}
    section, (text, matches) = hits[handbook]
    assert section == ["Gross margin", "gross-margin"]
    # A long line is cut a little before its first match.
    assert text.startswith("…") and len(text) <= 242
    assert [text[a:b] for a, b in matches] == ["margin"]
    assert matches[0][0] < 80


def panel_ready(driver: WebDriver) -> WebElement:
    """The header's panel, once the results of what was typed are shown."""
    panel: WebElement = wait(
        driver, lambda d: d.find_element(By.ID, "site-search-panel"), "the panel"
    )
    wait(driver, lambda d: panel.get_attribute("data-state") in ("done", "error"), "results")
    assert panel.get_attribute("data-state") == "done", panel.text
    return panel


def type_in_header(driver: WebDriver, text: str) -> WebElement:
    box = driver.find_element(By.ID, "site-search")
    box.click()
    box.clear()
    box.send_keys(text)
    return box


def test_typing_in_the_header_shows_results_with_passages(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:
    root, _out, url = site
    driver.get(url + "pages/fiscal-calendar.html")
    type_in_header(driver, "churn complements")
    panel = panel_ready(driver)
    assert panel.is_displayed()
    options = panel.find_elements(By.CSS_SELECTOR, "li.search-option")
    expected = cli_mixed(root, "churn complements", 8)
    assert [o.get_attribute("data-href") for o in options] == [url + h for _k, h, _s in expected]
    hrefs = [o.get_attribute("data-href") for o in options]
    first = options[hrefs.index(url + "pages/metrics-handbook.html")]
    section = first.find_element(By.CSS_SELECTOR, "a.search-section")
    assert section.text == "Churn and retention"
    assert section.get_attribute("href") == url + "pages/metrics-handbook.html#churn-and-retention"
    snippet = first.find_element(By.CSS_SELECTOR, ".search-option-snippet")
    assert snippet.text == "Churn and retention are complements; churn comes first."
    marks = [m.text for m in snippet.find_elements(By.TAG_NAME, "mark")]
    assert marks == ["Churn", "complements", "churn"]
    # Typing on updates the panel; a query with no hit says so.
    type_in_header(driver, "quincunx")
    wait(
        driver,
        lambda d: (
            [
                o.get_attribute("data-href")
                for o in d.find_elements(By.CSS_SELECTOR, "#site-search-panel li.search-option")
            ]
            == [url + "pages/fiscal-calendar.html"]
        ),
        "the new results",
    )
    type_in_header(driver, "zzqqxxnothing")
    wait(
        driver,
        lambda d: "No page matches" in d.find_element(By.ID, "site-search-panel").text,
        "no hit",
    )
    assert not driver.find_elements(By.CSS_SELECTOR, "#site-search-panel li")


def test_the_header_results_are_keyboard_navigable(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:
    _root, _out, url = site
    driver.get(url + "index.html")
    box = type_in_header(driver, "revenue")
    panel = panel_ready(driver)
    options = panel.find_elements(By.CSS_SELECTOR, "li.search-option")
    assert len(options) >= 3

    def selected() -> list[str]:
        return [
            str(o.get_attribute("id"))
            for o in panel.find_elements(By.CSS_SELECTOR, "li.search-option")
            if o.get_attribute("aria-selected") == "true"
        ]

    ids = [str(o.get_attribute("id")) for o in options]
    assert selected() == [] and box.get_attribute("aria-expanded") == "true"
    box.send_keys(Keys.ARROW_DOWN)
    assert selected() == [ids[0]] and box.get_attribute("aria-activedescendant") == ids[0]
    box.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN, Keys.ARROW_UP)
    assert selected() == [ids[1]]
    assert driver.switch_to.active_element == box  # the focus stays in the box
    box.send_keys(Keys.ESCAPE)
    assert not panel.is_displayed() and box.get_attribute("aria-expanded") == "false"
    box.send_keys(Keys.ARROW_DOWN)  # opens it again, on the first result
    assert panel.is_displayed() and selected() == [ids[0]]
    box.send_keys(Keys.ARROW_DOWN)
    target = options[1].get_attribute("data-href")
    box.send_keys(Keys.ENTER)
    wait(driver, lambda d: d.current_url == target, "the second result's page")
    # With none selected, Enter opens the full results page, which shows the same passages.
    box = type_in_header(driver, "churn complements")
    panel_ready(driver)
    box.send_keys(Keys.ENTER)
    wait(driver, lambda d: "search.html?q=churn+complements" in d.current_url, "the results page")
    wait(
        driver,
        lambda d: d.execute_script("return document.documentElement.dataset.searchState") == "done",
        "the results",
    )
    first = next(
        r
        for r in driver.find_elements(By.CSS_SELECTOR, "#search-results .search-result")
        if r.find_element(By.CSS_SELECTOR, ".search-result-title a").text == "Metrics handbook"
    )
    assert first.find_element(By.CSS_SELECTOR, "a.search-section").get_attribute("href") == (
        url + "pages/metrics-handbook.html#churn-and-retention"
    )
    snippet = first.find_element(By.CSS_SELECTOR, ".search-result-snippet")
    assert [m.text for m in snippet.find_elements(By.TAG_NAME, "mark")] == [
        "Churn",
        "complements",
        "churn",
    ]


def test_a_hostile_passage_renders_inert(driver: WebDriver, site: tuple[Path, Path, str]) -> None:
    _root, _out, url = site
    driver.get(url + "index.html")
    type_in_header(driver, "cockatrice onerror")
    panel = panel_ready(driver)
    options = panel.find_elements(By.CSS_SELECTOR, "li.search-option")
    hrefs = [o.get_attribute("data-href") for o in options]
    # Both hostile pages (the other's summary and text hold `onerror` too).
    assert {url + "pages/hostile-passage.html", url + "pages/hostile.html"} <= set(hrefs)
    option = options[hrefs.index(url + "pages/hostile-passage.html")]
    title = option.find_element(By.CSS_SELECTOR, ".search-option-title")
    assert title.text == '<img src=x onerror="window.__knowlPwned = 8"> Trap <b>bold</b>'
    snippet = option.find_element(By.CSS_SELECTOR, ".search-option-snippet")
    assert '<img src=x onerror="window.__knowlPwned = 9">' in snippet.text
    assert [m.text for m in snippet.find_elements(By.TAG_NAME, "mark")] == [
        "cockatrice",
        "onerror",
    ]
    # Text only: no element but the panel's own, nothing ran.
    tags = driver.execute_script(
        "return Array.from(document.getElementById('site-search-panel')"
        ".querySelectorAll('*'), function (e) { return e.tagName; });"
    )
    assert set(tags) <= {"P", "UL", "LI", "A", "MARK", "SPAN"}, tags
    assert driver.execute_script(PWNED) is None
    search_for(driver, url, "cockatrice onerror")
    results = driver.find_element(By.ID, "search-results")
    tags = driver.execute_script(
        "return Array.from(arguments[0].querySelectorAll('*'), function (e) { return e.tagName; });",
        results,
    )
    assert set(tags) <= {"P", "LI", "A", "MARK", "SPAN"}, tags
    assert "<script>" in results.text or "<img" in results.text
    assert driver.execute_script(PWNED) is None


# --- entities, mixed with pages as `knowl search` mixes them -----------------------------------


def cli_mixed(root: Path, text: str, limit: int) -> list[tuple[str, str, float]]:
    """`knowl search --json`'s hits (its default `--kind all`): (kind, link, score)."""
    answer = json.loads(
        invoke(["search", text, "--json", "--limit", str(limit), "--repo", str(root)]).stdout
    )
    found = []
    with Reader.open(root) as reader:
        for hit in answer["hits"]:
            if hit["kind"] == "entity":
                found.append(("entity", urls.href(urls.ENTITIES, hit["entity"]), hit["score"]))
            else:
                entry = reader.view.page(hit["scope"], hit["page"])
                assert entry is not None
                found.append(("page", urls.page_href(entry), hit["score"]))
    return found


def site_mixed(driver: WebDriver, text: str, limit: int) -> list[tuple[str, str, float]]:
    found = driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "window.knowlSearch.search(arguments[0], arguments[1]).then(function (r) {"
        "  done(r.results.map(function (x) { return [x.kind || 'page', x.href, x.score]; })); });",
        text,
        limit,
    )
    return [(kind, href, score) for kind, href, score in found]


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("total revenue", 5),
        ("total_revenue", 10),
        ("revenue", 5),
        ("revenue", 30),
        ("orders amount", 10),
        ("refund policy", 5),
        ("quincunx", 5),
    ],
)
def test_entities_are_mixed_in_as_knowl_search_mixes_them(
    driver: WebDriver, site: tuple[Path, Path, str], text: str, limit: int
) -> None:
    root, _out, url = site
    driver.get(url + "search.html")
    expected = cli_mixed(root, text, limit)
    got = site_mixed(driver, text, limit)
    assert [(kind, href) for kind, href, _ in got] == [(kind, href) for kind, href, _ in expected]
    for (_, _, mine), (_, _, theirs) in zip(got, expected, strict=True):
        assert mine == pytest.approx(theirs, rel=1e-12)


def test_an_entity_query_finds_the_measure_first(
    driver: WebDriver, site: tuple[Path, Path, str]
) -> None:
    root, _out, url = site
    expected = cli_mixed(root, "total revenue", 8)
    assert expected[0][:2] == ("entity", "entities/shop_pg.orders.total_revenue.html")
    driver.get(url + "pages/fiscal-calendar.html")
    type_in_header(driver, "total revenue")
    panel = panel_ready(driver)
    options = panel.find_elements(By.CSS_SELECTOR, "li.search-option")
    assert [o.get_attribute("data-href") for o in options] == [url + h for _k, h, _s in expected]
    first = options[0]
    assert "search-entity" in str(first.get_attribute("class"))
    assert first.find_element(By.CSS_SELECTOR, "a").text == "shop_pg.orders.total_revenue"
    # Pages binding the measure follow it (Revenue and the refund policy bind it).
    assert url + "pages/revenue.html" in [o.get_attribute("data-href") for o in options]
    search_for(driver, url, "total revenue")
    first_result = driver.find_element(By.CSS_SELECTOR, "#search-results .search-result")
    assert "search-entity" in str(first_result.get_attribute("class"))
