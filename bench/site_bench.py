"""The site benchmark: `python bench/run.py --suite site`.

On a built corpus, per size:
- cold: `knowl site` as a process into an empty folder;
- one edit: one page edited, the artifact rebuilt (not timed), `knowl site` again into the same
  folder; and how many of the site's files that rewrote;
- initial download: the bytes a browser fetches on search.html before the first query (the page,
  the styles and scripts it references, and search/meta.json, which search.js loads first);
- per query: the bytes of the shards, result chunks and result files (with the text of their
  passages) and the entities' file one query fetches (p50 and max over 100 queries of one to three words), and
  the largest total before a query's first results are shown: the initial download and that
  query's fetches;
- in the browser, when chromium and chromium-driver are installed: the time from a query to
  its ranked and described results (fetches included, from a local HTTP server), p50 of 20
  queries, cold (a fresh page, the HTTP cache off) and warm (the same queries again).
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from corpus import WORDS, page_path

from knowl_build.index.analysis import query_terms
from knowl_build.site.search import lookup

CHROMIUM = os.environ.get("KNOWL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("KNOWL_CHROMEDRIVER", "/usr/bin/chromedriver")
SHOWN = 10  # results search.js describes at first (search.html; the header's panel: 8)


def knowl(*args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "knowl_build", *args], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"knowl {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return elapsed


def knowl_site(root: Path, out: Path) -> float:
    return knowl("site", "--repo", str(root), "--out", str(out))


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in folder.rglob("*")
        if p.is_file()
    }


class _References(HTMLParser):
    """The styles and scripts a page loads before anything else runs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script" and a.get("src"):
            self.found.append(str(a["src"]))
        elif tag == "link" and "stylesheet" in (a.get("rel") or "").split() and a.get("href"):
            self.found.append(str(a["href"]))


def initial_download(out: Path) -> dict[str, int]:
    """Bytes fetched on search.html before the first query, file by file."""
    parser = _References()
    parser.feed((out / "search.html").read_text(encoding="utf-8"))
    sizes = {"search.html": (out / "search.html").stat().st_size}
    for ref in parser.found:
        target = urlsplit(urljoin("http://site/search.html", ref))
        if target.netloc == "site":
            name = unquote(target.path.lstrip("/"))
            sizes[name] = (out / name).stat().st_size
    sizes["search/meta.json"] = (out / "search" / "meta.json").stat().st_size
    return sizes


def query_files(out: Path, text: str) -> list[Path]:
    """The files one query fetches: the term files of its terms (a shard, and a large term's
    own file), the chunks of its first results and their files (the ranking of search.js, in
    short; the passages come from the result files), and the entities' file."""
    folder = out / "search"
    meta = json.loads((folder / "meta.json").read_text())
    terms = query_terms(text)
    files: dict[Path, None] = {}
    entries = {}
    for term in terms:
        entries[term], paths = lookup(folder, meta, term)
        files.update(dict.fromkeys(paths))
    acc: dict[int, float] = {}
    n_docs = max(meta["doc_count"], 1)
    for f in range(len(meta["fields"])):
        for term in terms:
            entry = entries[term]
            if not entry or not entry[0][f]:
                continue
            df = entry[0][f]
            idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
            weight = meta["boosts"][f] * idf * (meta["k1"] + 1)
            doc, postings = 0, entry[1 + f]
            for i in range(0, len(postings), 3):
                doc += postings[i]
                tf, length = postings[i + 1], postings[i + 2]
                norm = meta["k1"] * (1 - meta["b"] + meta["b"] * length / meta["avg_lengths"][f])
                acc[doc] = acc.get(doc, 0.0) + weight * tf / (tf + norm)
    top = sorted(acc, key=lambda d: (-acc[d], d))[:SHOWN]
    chunks = {meta["chunks"][d // meta["chunk"]] for d in top}
    names = {c: json.loads((folder / "docs" / f"{c}.json").read_text()) for c in chunks}
    files.update(dict.fromkeys(folder / "docs" / f"{c}.json" for c in sorted(chunks)))
    results = {names[meta["chunks"][d // meta["chunk"]]][d % meta["chunk"]] for d in top}
    files.update(dict.fromkeys(folder / "results" / f"{r}.json" for r in sorted(results)))
    if meta.get("entities"):  # every query ranks the entities too
        files[folder / "entities" / f"{meta['entities']}.json"] = None
    return list(files)


def query_fetches(out: Path, text: str) -> int:
    """Bytes of the files one query fetches (`query_files`)."""
    return sum(path.stat().st_size for path in query_files(out, text))


def queries(count: int = 100) -> list[str]:
    rng = random.Random(11)
    return [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(count)]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def browser_queries(out: Path, texts: list[str]) -> dict[str, float] | None:
    """p50 of a query in headless chromium (ms), cold then warm; None without the browser."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        return None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    page = f"http://127.0.0.1:{server.server_address[1]}/search.html"
    timed = (
        "var done = arguments[arguments.length - 1], t = performance.now();"
        f"window.knowlSearch.search(arguments[0], {SHOWN}).then(function () {{"
        "  done(performance.now() - t); });"
    )
    try:
        driver.set_script_timeout(120)
        # Cold: a fresh page with the HTTP cache off, so every shard and chunk is fetched.
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        cold = []
        for text in texts[:20]:
            driver.get(page)
            cold.append(driver.execute_async_script(timed, text))
        # Warm: the same queries again in that page (its shards already loaded).
        warm = [driver.execute_async_script(timed, text) for text in texts[:20]]
        return {"cold_ms": statistics.median(cold), "warm_ms": statistics.median(warm)}
    finally:
        driver.quit()
        server.shutdown()
        server.server_close()


def bench_site(root: Path, repeats: int) -> dict[str, Any]:
    """The figures of one corpus, already built (`knowl build`)."""
    out = root / ".knowl" / "site-bench"
    colds = []
    for _ in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        colds.append(knowl_site(root, out))
    edits, rewritten = [], []
    target = root / page_path(1)
    original = target.read_text()
    try:
        for n in range(repeats):
            target.write_text(original + f"\nSite benchmark edit {n}.\n")
            knowl("build", "-q", "--allow-errors", "--repo", str(root))
            before = snapshot(out)
            edits.append(knowl_site(root, out))
            after = snapshot(out)
            rewritten.append(sum(1 for name, stamp in after.items() if before.get(name) != stamp))
    finally:
        target.write_text(original)
        knowl("build", "-q", "--allow-errors", "--repo", str(root))
    files = snapshot(out)
    initial = initial_download(out)
    texts = queries()
    per_query = sorted(query_fetches(out, text) for text in texts)
    result: dict[str, Any] = {
        "cold_s": min(colds),
        "edit_s": min(edits),
        "edit_rewritten": min(rewritten),
        "files": len(files),
        "site_mb": sum(size for _, size in files.values()) / 1e6,
        "initial_bytes": sum(initial.values()),
        "initial_files": initial,
        "query_bytes_p50": statistics.median(per_query),
        "query_bytes_max": per_query[-1],
        "first_result_bytes_max": sum(initial.values()) + per_query[-1],
        "browser": browser_queries(out, texts),
    }
    return result


def print_site(results: list[tuple[int, dict[str, Any]]], header: str) -> None:
    print(f"knowl site benchmark {header}")
    print(
        f"{'pages':>7} {'cold site':>10} {'1-edit':>8} {'rewritten':>10} {'files':>7} "
        f"{'size':>8} {'initial download':>17} {'query fetch p50':>16} {'max':>9} "
        f"{'first result max':>17} {'query p50 cold':>15} {'warm':>7}"
    )
    for n, r in results:
        browser = r["browser"]
        timing = (
            f"{browser['cold_ms']:>13.1f}ms {browser['warm_ms']:>5.1f}ms"
            if browser
            else f"{'(no chromium)':>15} {'':>7}"
        )
        print(
            f"{n:>7} {r['cold_s']:>9.2f}s {r['edit_s']:>7.2f}s {r['edit_rewritten']:>10} "
            f"{r['files']:>7} {r['site_mb']:>6.1f}MB {r['initial_bytes'] / 1000:>15.1f}kB "
            f"{r['query_bytes_p50'] / 1000:>14.1f}kB {r['query_bytes_max'] / 1000:>7.1f}kB "
            f"{r['first_result_bytes_max'] / 1000:>15.1f}kB {timing}"
        )
    for n, r in results:
        parts = ", ".join(
            f"{name} {size / 1000:.1f}kB" for name, size in r["initial_files"].items()
        )
        print(f"{n:>7} initial download: {parts}")
