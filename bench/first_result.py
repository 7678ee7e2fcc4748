"""The bytes a reader of the static site fetches before the first search result shows, measured
in a browser, whatever the site's search files look like.

Headless Chromium (Selenium, /usr/bin/chromium and /usr/bin/chromedriver, or KNOWL_CHROMIUM and
KNOWL_CHROMEDRIVER) opens search.html over HTTP on 127.0.0.1 with the HTTP cache off, a query is
typed into the search box, and when the first result is in the list the page's Performance API
names every file fetched so far (the page itself and each resource whose response had ended).
Each file counts with its size on disk (raw) and gzipped: the shipped `.gz` beside it where the
site has one, else `gzip -9` of it. Nothing here reads the search format, so the figure holds
while that format changes and compares two revisions that write different ones.
"""

from __future__ import annotations

import functools
import gzip
import os
import random
import statistics
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from corpus import WORDS

CHROMIUM = os.environ.get("KNOWL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("KNOWL_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT_S = 60.0

# Set before the query is typed: the moment the first result is in the list, and the files
# whose responses had ended by then (the page's own document first).
_WATCH = """
var list = document.getElementById("search-results");
performance.setResourceTimingBufferSize(100000);
window.__knowlFirst = null;
new MutationObserver(function (changes, observer) {
  if (!list.querySelector("li")) return;
  var now = performance.now();
  var names = [performance.getEntriesByType("navigation")[0].name];
  performance.getEntriesByType("resource").forEach(function (e) {
    if (e.responseEnd <= now) names.push(e.name);
  });
  window.__knowlFirst = names;
  observer.disconnect();
}).observe(list, {childList: true, subtree: true});
"""
# The query typed at once (one input event), as a paste: each keystroke would start a search of
# its own prefix, and how many of those the page coalesces depends on the machine's speed.
_TYPE = """
var input = document.getElementById("search-query");
input.focus();
input.value = arguments[0];
input.dispatchEvent(new Event("input", {bubbles: true}));
"""


def queries(count: int = 30) -> list[str]:
    """A fixed set of one- to three-word queries of the corpus' vocabulary (bench/corpus.py)."""
    rng = random.Random(25)
    return [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(count)]


def available() -> bool:
    """Whether the browser, its driver and Selenium are here."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        return False
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return True


def file_bytes(site: Path, url: str) -> tuple[int, int]:
    """(raw, gzip) bytes of the site's file at `url`. A file fetched compressed (gzip's magic
    number first) is its own gzip size; another is its shipped `.gz` or `gzip -9` of it."""
    name = unquote(urlsplit(url).path).lstrip("/") or "index.html"
    path = site / name
    data = path.read_bytes()
    shipped = path.with_name(path.name + ".gz")
    if data[:2] == b"\x1f\x8b":
        packed = len(data)
    elif shipped.is_file():
        packed = shipped.stat().st_size
    else:
        packed = len(gzip.compress(data, 9, mtime=0))
    return len(data), packed


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def _served(site: Path) -> Iterator[str]:
    """search.html's address, the site served on 127.0.0.1 while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/search.html"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        yield driver
    finally:
        driver.quit()


def _fetched(driver: Any, page: str, text: str) -> list[str]:
    """The addresses fetched on a fresh `page` before `text`'s first result shows."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page)
    driver.execute_script(_WATCH)
    driver.execute_script(_TYPE, text)
    names: list[str] = WebDriverWait(driver, WAIT_S, poll_frequency=0.02).until(
        lambda d: d.execute_script("return window.__knowlFirst")
    )
    return names


def first_result_bytes(site: Path, texts: list[str]) -> list[tuple[int, int]]:
    """(raw, gzip) bytes before the first result of each query, in order."""
    totals = []
    with _served(site) as page, _browser() as driver:
        for text in texts:
            sizes = [file_bytes(site, url) for url in _fetched(driver, page, text)]
            totals.append((sum(raw for raw, _ in sizes), sum(packed for _, packed in sizes)))
    return totals


def worst_and_median(totals: list[tuple[int, int]]) -> dict[str, float]:
    """The figures of the goals table: the worst and the median query, raw and gzip (kB)."""
    raw = [r for r, _ in totals]
    packed = [p for _, p in totals]
    return {
        "first_result_raw_max_kb": max(raw) / 1000,
        "first_result_gz_max_kb": max(packed) / 1000,
        "first_result_raw_p50_kb": statistics.median(raw) / 1000,
        "first_result_gz_p50_kb": statistics.median(packed) / 1000,
    }


def measured(site: Path) -> dict[str, float]:
    """`worst_and_median` over `queries()`; nothing where the browser is missing or the site's
    search fails in it (said on stderr): the goals table then says the row was not measured."""
    if not available():
        print("site-search bytes: no chromium, chromedriver or selenium here", file=sys.stderr)
        return {}
    from selenium.common.exceptions import WebDriverException

    try:
        return worst_and_median(first_result_bytes(site, queries()))
    except WebDriverException as error:
        print(f"site-search bytes not measured: {error.msg}", file=sys.stderr)
        return {}
