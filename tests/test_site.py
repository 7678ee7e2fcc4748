"""`knowl site`: the URL layout, the safety of what a page becomes, global pages only, links
that all lead somewhere, what a page and an entity page show, and incremental rebuilds. Real
git repositories in temporary folders; the browser tests are in test_site_browser.py."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from knowl_build.artifacts.schema import LinkRecord, PageRecord
from knowl_build.core.errors import ConfigError
from knowl_build.core.model import TextIndex
from knowl_build.parse.body import scan_body
from knowl_build.reader.view import ArtifactView, find_artifact, visible
from knowl_build.site import urls
from knowl_build.site.build import compact_js
from knowl_build.site.markup import Headings, fragment, parse_wiki, render_body, safe_url, slug
from knowl_build.site.output import MANIFEST, layout_name
from knowl_build.site.templates import Templates
from tests.helpers import Project, invoke
from tests.test_site_search import USER_ID, USER_TITLE, USER_WORDS, make_site_project

SAMPLE = Path(__file__).resolve().parent.parent / "sample_repo"
OURS = {"assets/search.js", "assets/graph.js"}  # the only scripts a page may load


@pytest.fixture(autouse=True)
def _pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkeypatch.setenv("KNOWL_EMBEDDINGS", "off")


# --- the projects ---------------------------------------------------------------------------------

HOSTILE_IDS = ["50% off", "a b", "straße ünïcode", "%2E%2E", "x<y>&z"]

# A user's page that shares the id of a global page, tags of its own, a caveat about an
# entity, links to global pages: none of it may reach the site.
CAROL = {
    "knowledge/user/carol/revenue.md": (
        "---\ntitle: Carol Shadow Musings\nsummary: plumbago notes\ntags: [carolsecrettag]\n"
        "sl_refs: [shop_pg.orders.total_revenue]\nusage_mode: caveat\ncategory: decision\n"
        "---\n# Carol Shadow Musings\n\nplumbago thoughts on [[refund-policy]] and "
        "[[fiscal-calendar]].\n"
    ),
    "knowledge/user/carol/carol-ledger.md": (
        "---\ntitle: Carol Ledger Secrets\nsummary: obsidianwhisper\ntags: [finance]\n---\n"
        "See [[revenue]], obsidianwhisper.\n"
    ),
}
USER_TEXT = [
    USER_ID,
    USER_TITLE,
    *USER_WORDS,
    "Carol Shadow Musings",
    "plumbago",
    "carolsecrettag",
    "carol-ledger",
    "Carol Ledger Secrets",
    "obsidianwhisper",
    "user:carol",
    "user:alice",
    "knowledge/user",
]


def hostile_files() -> dict[str, str]:
    files = {
        f"knowledge/global/odd/{name}.md": (
            f"---\ntitle: Odd {name}\nsummary: an odd name\ntags: ['{name}']\n---\n"
            f"Odd page {name}, see [[revenue]].\n"
        )
        for name in HOSTILE_IDS
    }
    files["knowledge/global/hostile2.md"] = (
        '---\ntitle: "Second <img src=x onerror=alert(1)> hostile"\n'
        "summary: \"javascript:alert(1)\"\ntags: ['<script>alert(1)</script>']\n---\n"
        "# Second\n\n"
        "<script>alert(1)</script>\n\n"
        '<iframe src="javascript:alert(1)"></iframe>\n\n'
        "[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](vbscript:msgbox(1)) "
        # A short payload: a long base64 word is a secret (KB401), whose page the site leaves out.
        "[d](data:text/html;base64,PHNjcmlwdD4=) "
        "[e](&#106;avascript:alert(1)) [f](java\tscript:alert(1)) <javascript:alert(1)>\n\n"
        "![img](javascript:alert(1)) ![img2](x.png) ![img3](https://example.org/i.png)\n\n"
        "[ref link][r]\n\n[r]: javascript:alert(1)\n\n"
        '<a href="javascript:alert(1)" onmouseover="alert(1)">x</a> '
        "<svg onload=alert(1)> <meta http-equiv=refresh content=0;url=javascript:alert(1)>\n\n"
        "[ok](https://example.org/ok) [rel](../other.md) [here](#second)\n\n"
        "`[[revenue]]` in code, and [[revenue|the <b>revenue</b>]] aliased.\n"
    )
    return files


def make_project(root: Path) -> Project:
    """test_site_search's project (a drifted page, a hostile page, a user's page), with pages
    whose ids need encoding, a second hostile page and carol's pages."""
    proj = make_site_project(root)
    proj.write({**hostile_files(), **CAROL})
    proj.commit("Odd names, a second hostile page, carol's notes")
    return proj


def build(root: Path) -> Path:
    invoke(["build", "--repo", str(root), "-q", "--allow-errors"])
    return find_artifact(root)


def site(root: Path, *args: str) -> Path:
    out = root.parent / "site"
    invoke(["site", "--repo", str(root), "--out", str(out), "-q", *args])
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(project root, site folder)."""
    monkey = pytest.MonkeyPatch()
    monkey.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkey.setenv("KNOWL_EMBEDDINGS", "off")
    root = tmp_path_factory.mktemp("site") / "proj"
    make_project(root)
    build(root)
    out = site(root)
    yield root, out
    monkey.undo()


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    monkey = pytest.MonkeyPatch()
    monkey.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkey.setenv("KNOWL_EMBEDDINGS", "off")
    root = tmp_path_factory.mktemp("sample") / "proj"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".knowl"))
    Project(root).commit("sample")
    invoke(["build", "--repo", str(root), "-q", "--site"])
    yield root, root / ".knowl" / "site"
    monkey.undo()


# --- reading HTML ----------------------------------------------------------------------------------


class Parsed(HTMLParser):
    """Every tag with its attributes, the ids, the text of <title> and <h1>, and scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.ids: set[str] = set()
        self.script_text: list[str] = []
        self.h1 = 0
        self._in: list[str] = []
        self.text: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.tags.append((tag, found))
        if "id" in found:
            self.ids.add(found["id"])
        if tag == "h1":
            self.h1 += 1
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "script" and data.strip():
            self.script_text.append(data)
        if self._in:
            self.text[self._in[-1]] = self.text.get(self._in[-1], "") + data


def parse(path: Path) -> Parsed:
    parsed = Parsed()
    parsed.feed(path.read_text(encoding="utf-8"))
    return parsed


def html_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.html") if p.is_file())


def targets(parsed: Parsed) -> Iterator[tuple[str, str, str]]:
    """(tag, attribute, URL) of every URL attribute."""
    for tag, attrs in parsed.tags:
        for name in ("href", "src", "action", "data", "formaction", "poster", "srcset"):
            if name in attrs:
                yield tag, name, attrs[name]


# --- the URL layout --------------------------------------------------------------------------------


def test_a_name_is_one_safe_segment() -> None:
    assert urls.segment("revenue") == "revenue"
    assert urls.segment("warehouse_pg.orders.total_revenue") == "warehouse_pg.orders.total_revenue"
    assert urls.segment("../etc/passwd") == "..%2Fetc%2Fpasswd"
    assert urls.segment("..") == "%2E%2E"
    assert urls.segment("50% off") == "50%25%20off"
    assert urls.segment("straße") == "stra%C3%9Fe"
    assert urls.file_name(urls.PAGES, "a b") == "pages/a%20b.html"
    assert urls.href(urls.PAGES, "a b") == "pages/a%2520b.html"
    for name in ("../x", "a/b", "..", ".", "x\\y", "%2e%2e"):
        assert "/" not in urls.segment(name) and urls.segment(name) not in (".", "..")


def test_the_layout(built: tuple[Path, Path]) -> None:
    root, out = built
    for name in ("index.html", "search.html", "stale.html", "graph.html", MANIFEST):
        assert (out / name).is_file(), name
    for name in ("site.css", "search.js", "graph.js"):
        assert (out / "assets" / name).is_file()
    view = ArtifactView.open(find_artifact(root))
    try:
        pages = [e for e in view.pages if visible(e, None)]
        assert {p.relative_to(out).as_posix() for p in (out / "pages").iterdir()} == {
            urls.page_file(e) for e in pages
        }
        for name in HOSTILE_IDS:
            assert (out / "pages" / f"{urls.segment(name)}.html").is_file(), name
        assert {p.name for p in (out / "entities").iterdir()} == {
            f"{urls.segment(n)}.html" for n in view.entities
        }
        tags = {t for e in pages for t in e.tags}
        assert {p.name for p in (out / "tags").iterdir()} == {
            f"{urls.segment(t)}.html" for t in tags
        }
        assert (out / "tags" / f"{urls.segment('<script>alert(1)</script>')}.html").is_file()
        assert "pages/revenue.html" in {urls.page_file(e) for e in pages}
        assert (out / "entities" / "shop_pg.orders.total_revenue.html").is_file()
    finally:
        view.close()


def test_pages_that_share_an_id_are_named_by_their_path(tmp_path: Path) -> None:
    proj = Project(tmp_path / "proj")
    proj.write(
        {
            "knowl.toml": 'staleness_days = 3650\n[links]\nresolution = "obsidian"\n',
            "knowledge/global/a/notes.md": "---\ntitle: Notes A\n---\nSee [[b/notes]].\n",
            "knowledge/global/b/notes.md": "---\ntitle: Notes B\n---\nSee [[a/notes]].\n",
        }
    )
    proj.commit()
    build(proj.root)
    out = site(proj.root)
    names = sorted(p.name for p in (out / "pages").iterdir())
    assert names == ["a%2Fnotes.html", "b%2Fnotes.html"]
    html = (out / "pages" / "a%2Fnotes.html").read_text()
    assert 'href="../pages/b%252Fnotes.html"' in html
    assert_no_broken_links(out)


def test_a_long_name_fits_the_file_system(tmp_path: Path) -> None:
    """60 CJK characters encode to 540 bytes: the file name keeps a prefix and a hash."""
    long_id = "收入" * 30
    other = "收入" * 29 + "支出"
    proj = Project(tmp_path / "proj")
    proj.write(
        {
            "knowl.toml": "staleness_days = 3650\n",
            f"knowledge/global/{long_id}.md": f"---\ntitle: Long\n---\nSee [[{other}]].\n",
            f"knowledge/global/{other}.md": "---\ntitle: Other\n---\nBack.\n",
        }
    )
    proj.commit()
    build(proj.root)
    out = site(proj.root)
    names = sorted(p.name for p in (out / "pages").iterdir())
    assert len(names) == 2 and all(len(n.encode()) <= 255 for n in names)
    assert names[0] != names[1] and all("~" in n for n in names)
    assert urls.segment(long_id) != urls.segment(other)
    assert_no_broken_links(out)


# --- safety ------------------------------------------------------------------------------------------


def assert_nothing_runs(out: Path) -> None:
    """No script but the site's own, no event attribute, no URL with a scheme that runs."""
    for path in html_files(out):
        parsed = parse(path)
        root = "../" * len(path.relative_to(out).parts[:-1])
        assert not parsed.script_text, f"{path}: inline script"
        for tag, attrs in parsed.tags:
            events = [name for name in attrs if name.lower().startswith("on")]
            assert not events, f"{path}: <{tag}> with {events}"
            assert tag not in ("iframe", "object", "embed", "base", "style", "svg", "frame"), path
            if tag == "script":
                assert attrs.get("src", "").removeprefix(root) in OURS, (path, attrs)
            if tag == "meta" and "http-equiv" in attrs:
                assert attrs["http-equiv"].lower() == "content-security-policy", path
            if tag == "form":
                assert attrs.get("action") == f"{root}search.html", path
            if tag == "img":
                assert attrs["src"].startswith("https://"), path
        for tag, name, url in targets(parsed):
            cleaned = re.sub(r"[\x00-\x20\x7f]", "", url).lower()
            scheme = re.match(r"^([a-z][a-z0-9+.-]*):", cleaned)
            assert scheme is None or scheme.group(1) in ("http", "https", "mailto"), (
                f"{path}: <{tag} {name}={url!r}>"
            )


def test_a_hostile_page_produces_nothing_that_runs(built: tuple[Path, Path]) -> None:
    _root, out = built
    assert_nothing_runs(out)
    html = (out / "pages" / "hostile2.html").read_text()
    parsed = parse(out / "pages" / "hostile2.html")
    # The markup is shown as text.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert parsed.text["title"].startswith("Second <img src=x onerror=alert(1)> hostile · ")
    assert "<title>Second &lt;img src=x onerror=alert(1)&gt; hostile · " in html
    links = {attrs["href"] for tag, attrs in parsed.tags if tag == "a" and "href" in attrs}
    assert "https://example.org/ok" in links
    assert "#second" in links  # an anchor on the page
    assert not any("other.md" in link for link in links)  # the source tree is not in the site
    images = [attrs for tag, attrs in parsed.tags if tag == "img"]
    assert [i["src"] for i in images] == ["https://example.org/i.png"]
    # A wiki-link in code is code; an aliased one links, its alias as text.
    assert "<code>[[revenue]]</code>" in html
    assert 'href="../pages/revenue.html">the &lt;b&gt;revenue&lt;/b&gt;</a>' in html
    # The first page's title and summary are text in every list that shows them.
    index = (out / "index.html").read_text()
    assert "Hostile &lt;script&gt;window.__knowlPwned = 1&lt;/script&gt; page" in index


def test_pages_have_a_content_security_policy(built: tuple[Path, Path]) -> None:
    _root, out = built
    for path in html_files(out):
        policy = [
            attrs["content"]
            for tag, attrs in parse(path).tags
            if tag == "meta" and attrs.get("http-equiv", "").lower() == "content-security-policy"
        ]
        assert len(policy) == 1 and "script-src 'self'" in policy[0], path


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        ("https://example.org", True),
        ("HTTP://example.org", True),
        ("mailto:a@example.org", True),
        ("#heading", True),
        ("other.md", True),  # relative: made text by the renderer, never a scheme
        ("javascript:alert(1)", False),
        ("JavaScript:alert(1)", False),
        (" javascript:alert(1)", False),
        ("java\tscript:alert(1)", False),
        ("java\nscript:alert(1)", False),
        ("vbscript:x", False),
        ("data:text/html,x", False),
        ("file:///etc/passwd", False),
    ],
)
def test_safe_urls(url: str, safe: bool) -> None:
    assert safe_url(url) is safe


# --- global pages only ---------------------------------------------------------------------------


def test_no_file_of_the_site_holds_anything_of_a_user_page(built: tuple[Path, Path]) -> None:
    _root, out = built
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 50
    for path in files:
        lowered = path.read_bytes().lower()  # a search shard's postings are binary
        for needle in USER_TEXT:
            assert needle.lower().encode() not in lowered, f"{path.relative_to(out)}: {needle!r}"
    assert not (out / "tags" / "carolsecrettag.html").exists()
    assert not (out / "categories").exists()  # only carol's page has a category


def test_a_user_page_neither_links_nor_counts(built: tuple[Path, Path]) -> None:
    _root, out = built
    refund = (out / "pages" / "refund-policy.html").read_text()
    backlinks = refund.split('id="backlinks-heading"', 1)[1]
    # Linked from the revenue and fiscal calendar pages only (carol's shadow links it too).
    assert re.findall(r'<li>\n<a href="\.\./pages/([^"]+)\.html">', backlinks) == [
        "fiscal-calendar",
        "revenue",
    ]
    revenue = (out / "pages" / "revenue.html").read_text()
    caveats = revenue.split('id="caveats-heading"', 1)[1].split("</section>", 1)[0]
    assert caveats.count("<li>") == 1 and "Refund policy" in caveats
    entity = (out / "entities" / "shop_pg.orders.total_revenue.html").read_text()
    assert entity.count('<li>\n<a href="../pages/') == 2  # revenue, refund-policy
    finance = (out / "tags" / "finance.html").read_text()
    assert "<p>2 pages.</p>" in finance  # revenue, fiscal-calendar; not carol's ledger


def test_sample_repo_has_no_user_page_in_its_site(sample_site: tuple[Path, Path]) -> None:
    root, out = sample_site
    view = ArtifactView.open(find_artifact(root))
    try:
        users = [e for e in view.pages if not visible(e, None)]
        global_ids = {e.id for e in view.pages if visible(e, None)}
    finally:
        view.close()
    assert len(users) >= 6
    for path in (p for p in out.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8", "replace")  # a term file's postings are binary
        for entry in users:
            assert entry.title not in text, f"{path}: {entry.title}"
            if entry.id not in global_ids:
                assert entry.id not in text, f"{path}: {entry.id}"


# --- links -------------------------------------------------------------------------------------------


def assert_no_broken_links(out: Path) -> int:
    """Every link and source of every file of the site leads to a file of the site (and a
    fragment to an element of it); returns how many were checked."""
    checked = 0
    ids: dict[Path, set[str]] = {}
    for path in html_files(out):
        page_url = path.resolve().as_uri()
        for tag, name, url in targets(parse(path)):
            parts = urlsplit(url)
            if parts.scheme or parts.netloc:
                continue
            resolved = urlsplit(urljoin(page_url, url))
            target = Path(unquote(resolved.path))
            assert target.is_relative_to(out.resolve()), f"{path}: {url} leaves the site"
            assert target.is_file(), f"{path}: <{tag} {name}={url!r}> leads nowhere"
            if resolved.fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = parse(target).ids
                assert unquote(resolved.fragment) in ids[target], f"{path}: {url}: no such id"
            checked += 1
    for data in (out / "graph").rglob("*.json"):
        for node in json.loads(data.read_text())["nodes"]:
            if node[3] is not None:
                assert (out / unquote(node[3])).is_file(), f"{data}: {node[3]}"
    for data in (out / "search" / "results").glob("*.json"):
        href = json.loads(data.read_text())[0]
        assert (out / unquote(href)).is_file(), f"{data}: {href}"
    return checked


def test_sample_repo_builds_a_site_without_a_broken_link(sample_site: tuple[Path, Path]) -> None:
    _root, out = sample_site
    assert assert_no_broken_links(out) > 1000
    assert_nothing_runs(out)


def test_the_test_projects_site_has_no_broken_link(built: tuple[Path, Path]) -> None:
    _root, out = built
    assert assert_no_broken_links(out) > 500


def test_html_basics(sample_site: tuple[Path, Path]) -> None:
    _root, out = sample_site
    for path in html_files(out):
        text = path.read_text(encoding="utf-8")
        parsed = parse(path)
        assert text.startswith('<!doctype html>\n<html lang="en">'), path
        assert parsed.h1 == 1, f"{path}: {parsed.h1} h1"
        tags = [tag for tag, _ in parsed.tags]
        assert tags.count("main") == 1 and tags.count("title") == 1, path
        metas = [attrs for tag, attrs in parsed.tags if tag == "meta"]
        assert {"charset": "utf-8"} in metas and any(m.get("name") == "viewport" for m in metas)
        assert len(parsed.ids) == len([a for _t, a in parsed.tags if "id" in a]), (
            f"{path}: an id used twice"
        )
        labelled = {a["for"] for t, a in parsed.tags if t == "label"}
        for tag, attrs in parsed.tags:
            if tag == "input":
                assert attrs["id"] in labelled, f"{path}: an input without a label"


def test_wiki_links_go_where_the_checker_resolved_them(sample_site: tuple[Path, Path]) -> None:
    root, out = sample_site
    view = ArtifactView.open(find_artifact(root))
    try:
        expected = 0
        for entry in view.pages:
            if not visible(entry, None):
                continue
            record = view.record(entry)
            html = (out / urls.page_file(entry)).read_text(encoding="utf-8")
            body = html.split('<div class="body">', 1)[1].split("</div>", 1)[0]
            found = re.findall(r'<a class="wikilink[^"]*" href="\.\./([^"#]+)', body)
            wanted = []
            for link in record.links:
                if link.kind == "ref" or not isinstance(link.to, str):
                    continue
                target = view.by_key[link.to]
                if visible(target, None):
                    wanted.append(urls.page_href(target))
            assert found == wanted, entry.id
            expected += len(wanted)
        assert expected > 20
    finally:
        view.close()


# --- what pages show ------------------------------------------------------------------------------


def test_a_drifted_page_shows_what_changed_and_where(built: tuple[Path, Path]) -> None:
    _root, out = built
    html = (out / "pages" / "revenue.html").read_text()
    drift = html.split('<section class="drift"', 1)[1].split("</section>", 1)[0]
    assert '<span class="badge badge-drift">drifted</span>' in html.split("</header>", 2)[1]
    assert 'href="../entities/shop_pg.orders.total_revenue.html"' in drift
    assert '<code class="before">sum(amount)</code>' in drift
    assert '<code class="after">sum(amount) - sum(refunds)</code>' in drift
    assert "“Net out refunds in revenue”" in drift
    assert re.search(r'<code title="[0-9a-f]{40}">[0-9a-f]{12}</code> \(2026-01-02', drift)
    reasons = html.split('id="freshness-heading"', 1)[1].split("</section>", 1)[0]
    assert "Why it needs review" in reasons and "<code>KB201</code>" in reasons
    stale = (out / "stale.html").read_text()
    assert 'href="pages/revenue.html"' in stale and "badge-drift" in stale


def test_an_entity_page_shows_its_definition_users_and_history(built: tuple[Path, Path]) -> None:
    _root, out = built
    html = (out / "entities" / "shop_pg.orders.total_revenue.html").read_text()
    definition = html.split('id="definition-heading"', 1)[1].split("</section>", 1)[0]
    assert "<dt>Expression</dt><dd><code>sum(amount) - sum(refunds)</code></dd>" in definition
    assert "<dt>Description</dt><dd>Revenue.</dd>" in definition
    assert "<dt>Kind</dt><dd>measure</dd>" in definition
    assert "<dt>Grain</dt><dd>order_id</dd>" in definition
    assert re.search(r"<code class=\"fingerprint\">sha256:[0-9a-f]{64}</code>", definition)
    assert "semantics/shop/orders.yaml:" in definition
    assert 'href="../entities/shop_pg.orders.html"' in definition
    usage = html.split('id="usage-heading"', 1)[1].split("</section>", 1)[0]
    headings = re.findall(r"<h3>([^<]+)</h3>", usage)
    assert headings == ["Caveats", "References"]
    assert usage.index("Refund policy") < usage.index(">Revenue<")
    history = html.split('id="history-heading"', 1)[1].split("</section>", 1)[0]
    assert "Changed in" in history and "“Net out refunds in revenue”" in history
    assert "Introduced in" in history and "“A small knowledge base”" in history
    drifted = html.split('id="drifted-heading"', 1)[1].split("</section>", 1)[0]
    assert 'href="../pages/revenue.html"' in drifted and "sum(amount)" in drifted
    assert 'data-node="entity:shop_pg.orders.total_revenue"' in html


def test_backlinks_show_the_sentence_around_each_link(built: tuple[Path, Path]) -> None:
    _root, out = built
    html = (out / "pages" / "revenue.html").read_text()
    backlinks = html.split('id="backlinks-heading"', 1)[1].split("</section>", 1)[0]
    assert (
        "<p>A zymurgical note: refunds reduce <mark>revenue</mark> in the month they are paid, "
        "not the month of the order.</p>"
    ) in backlinks
    assert "<p>The quincunx of quarters: see <mark>revenue</mark> and refund-policy.</p>" in (
        backlinks
    )
    assert "Lists this page in its <code>refs</code>." in backlinks  # refund-policy's refs
    # A live definition before the link reads as it renders.
    refund = (out / "pages" / "refund-policy.html").read_text()
    assert "Refunds are netted out as the <mark>refund-policy</mark> says." in refund


def test_a_superseded_page_points_at_its_successor(sample_site: tuple[Path, Path]) -> None:
    _root, out = sample_site
    old = (out / "pages" / "warehouse-engine-2023.html").read_text()
    notice = old.split('<aside class="notice notice-superseded"', 1)[1].split("</aside>", 1)[0]
    assert 'by <a class="successor" href="../pages/warehouse-engine.html">' in notice
    new = (out / "pages" / "warehouse-engine.html").read_text()
    supersedes = new.split('id="supersedes-heading"', 1)[1].split("</section>", 1)[0]
    assert 'href="../pages/warehouse-engine-2023.html"' in supersedes


def test_the_interface_of_search_and_graph(built: tuple[Path, Path]) -> None:
    _root, out = built
    for path in html_files(out):
        root = "../" * len(path.relative_to(out).parts[:-1])
        text = path.read_text()
        assert f'<script src="{root}assets/search.js" defer></script>' in text
        assert (
            f'<form action="{root}search.html" role="search">'
            '<input type="search" name="q" id="site-search"></form>'
        ) in text
    page = (out / "pages" / "revenue.html").read_text()
    assert (
        '<section id="graph" data-root="../" data-node="page:global:revenue" data-depth="1">'
        "</section>"
    ) in page
    assert '<script src="../assets/graph.js" defer></script>' in page
    graph = (out / "graph.html").read_text()
    assert '<section id="graph" data-root="" data-node="" data-depth="all"></section>' in graph
    search = (out / "search.html").read_text()
    assert '<input id="search-query" type="search"> <ol id="search-results"></ol>' in search
    assert (out / "search" / "meta.json").is_file() and (out / "graph" / "overview.json").is_file()


# --- incremental --------------------------------------------------------------------------------


def snapshot(out: Path) -> dict[str, int]:
    return {
        p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()
    }


def changed(before: dict[str, int], after: dict[str, int]) -> set[str]:
    return {name for name in after if before.get(name) != after[name]}


def test_a_rebuild_after_one_edit_renders_that_page_and_its_dependents(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    proj = make_site_project(root)
    build(root)
    out = site(root)
    first = snapshot(out)
    # Nothing changed: nothing rendered, nothing written.
    site(root)
    assert changed(first, snapshot(out)) == set()

    # One page's sentence changes: the page, the page it links to (whose backlink quotes it)
    # and the home page (its recent changes) are rendered again; not the other 20 pages.
    note = root / "knowledge/global/notes/note-03.md"
    note.write_text(note.read_text().replace("See [[revenue]].", "Also see [[revenue]] now."))
    proj.commit("Edit a note")
    build(root)
    before = snapshot(out)
    site(root)
    html = {n for n in changed(before, snapshot(out)) if n.endswith(".html") or n == MANIFEST}
    assert html == {"pages/note-03.html", "pages/revenue.html", "index.html", MANIFEST}
    assert "Also see <mark>revenue</mark> now." in (out / "pages/revenue.html").read_text()

    # A page removed: its file goes, and the pages and lists that showed it change.
    proj.remove("knowledge/global/notes/note-05.md")
    proj.commit("Remove a note")
    build(root)
    before = snapshot(out)
    site(root)
    after = snapshot(out)
    assert "pages/note-05.html" not in after and "tags/cohort.html" not in after
    html = {n for n in changed(before, after) if n.endswith(".html")}
    assert html == {"pages/revenue.html", "index.html", "stale.html"}
    assert_no_broken_links(out)


def test_counts_of_a_rebuild(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    proj = make_site_project(root)
    build(root)
    out = tmp_path / "site"
    first = invoke(["site", "--repo", str(root), "--out", str(out)]).stderr
    assert re.search(r"\b(\d+) file\(s\) written, 0 unchanged, 0 removed", first)
    again = invoke(["site", "--repo", str(root), "--out", str(out)]).stderr
    assert " 0 file(s) written," in again
    proj.write({"knowledge/global/fiscal-calendar.md": "---\ntitle: Fiscal calendar\n---\nNew.\n"})
    proj.commit()
    build(root)
    full = invoke(["site", "--repo", str(root), "--out", str(out), "--full"]).stderr
    written = int(re.search(r"(\d+) file\(s\) written", full).group(1))  # type: ignore[union-attr]
    assert 0 < written < 10  # rendered again, written only where the bytes differ


def test_a_file_changed_by_hand_is_rendered_again(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    make_site_project(root)
    build(root)
    out = site(root)
    page = out / "pages" / "revenue.html"
    good = page.read_bytes()
    page.write_bytes(good.replace(b"Revenue", b"Revenu!"))
    (out / "pages" / "refund-policy.html").unlink()
    site(root)
    assert page.read_bytes() == good
    assert (out / "pages" / "refund-policy.html").is_file()


def test_the_manifest_only_names_files_of_the_layout(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    make_site_project(root)
    build(root)
    out = site(root)
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"]["../precious.txt"] = ["x", 7, 0]
    manifest["files"]["pages/../../precious.txt"] = ["x", 7, 0]
    (out / MANIFEST).write_text(json.dumps(manifest))
    site(root)
    assert outside.read_text() == "keep me"
    for name in ("../x.html", "pages/../x.html", "/etc/passwd", ".knowl-site.json", "pages/a/b"):
        assert not layout_name(name), name
    for name in ("index.html", "pages/a%20b.html", "assets/site.css", "entities/x.y.html"):
        assert layout_name(name), name


# --- where the site may go ------------------------------------------------------------------------


def test_the_site_folder_is_knowls_own(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    make_site_project(root)
    build(root)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    for out, problem in [
        (root, "must not be the project root or hold it"),
        (tmp_path, "must not be the project root or hold it"),
        (root / "knowledge", "apart from the knowledge/ folder"),
        (root / "knowledge" / "global" / "site", "apart from the knowledge/ folder"),
        (root / "semantics", "apart from the semantics/ folder"),
        (root / ".knowl" / "build" / "site", "apart from the build folder"),
        (root / ".knowl", "apart from the build folder"),
        (tmp_path / "foreign", "not empty and not a site knowl wrote"),
    ]:
        result = invoke(["site", "--repo", str(root), "--out", str(out)], code=2)
        assert problem in result.stderr, (out, result.stderr)
    assert (tmp_path / "foreign" / "notes.txt").read_text() == "mine"
    # The default is .knowl/site, beside the builds.
    invoke(["site", "--repo", str(root), "-q"])
    assert (root / ".knowl" / "site" / "index.html").is_file()


def test_site_from_an_artifact_without_a_project(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    make_site_project(root)
    artifact = build(root)
    copy = tmp_path / "artifact"
    shutil.copytree(artifact, copy)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        no_out = invoke(["site", "--artifact", str(copy)], code=2)
        assert "--out is needed outside a project" in no_out.stderr
        invoke(["site", "--artifact", str(copy), "--out", str(tmp_path / "public"), "-q"])
    finally:
        os.chdir(cwd)
    assert (tmp_path / "public" / "pages" / "revenue.html").is_file()
    assert "site-demo" in (tmp_path / "public" / "index.html").read_text()


def test_build_site_runs_after_a_publish_only(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    proj = Project(root)
    proj.write(
        {
            "knowl.toml": "staleness_days = 3650\n",
            "knowledge/global/a.md": "---\ntitle: A\n---\nSee [[missing]].\n",
        }
    )
    proj.commit()
    invoke(["build", "--repo", str(root), "-q", "--site"], code=1)  # refused: a broken link
    assert not (root / ".knowl" / "site").exists()
    invoke(["build", "--repo", str(root), "-q", "--site", "--allow-errors"])
    assert (root / ".knowl" / "site" / "pages" / "a.html").is_file()


# --- configuration and templates ----------------------------------------------------------------


def test_site_settings_and_a_template_override(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    proj = make_site_project(root)
    proj.write(
        {
            "knowl.toml": 'repo_name = "site-demo"\nstaleness_days = 3650\n[site]\n'
            'title = "Acme <Knowledge>"\nbase_url = "https://acme.example/kb"\n'
            'templates = "site-templates"\n',
            "site-templates/page.html": (
                '{% extends "knowl/page.html" %}{% block footer %}Owned by data: '
                "{{ page.title }} {{ page.summary }}{% endblock %}"
            ),
        }
    )
    proj.commit()
    build(root)
    out = site(root)
    page = (out / "pages" / "hostile.html").read_text()
    assert "<title>Hostile &lt;script&gt;window.__knowlPwned = 1&lt;/script&gt; page · " in page
    assert "Acme &lt;Knowledge&gt;</a>" in page
    assert "Owned by data: Hostile &lt;script&gt;" in page  # the override is escaped too
    assert '<link rel="canonical" href="https://acme.example/kb/pages/hostile.html">' in page
    assert_nothing_runs(out)
    # Templates are code: a change renders every page again.
    before = snapshot(out)
    (root / "site-templates" / "page.html").write_text(
        '{% extends "knowl/page.html" %}{% block footer %}Owned by finance.{% endblock %}'
    )
    site(root)
    pages = {n for n in changed(before, snapshot(out)) if n.startswith("pages/")}
    assert pages == {p.relative_to(out).as_posix() for p in (out / "pages").iterdir()}


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ page.__class__ }}",
        "{{ cycler.__init__.__globals__ }}",
        "{% set x = caveats.append(1) %}",
        "{{ no_such_value }}",
    ],
)
def test_a_template_runs_in_the_sandbox(tmp_path: Path, template: str) -> None:
    root = tmp_path / "proj"
    proj = make_site_project(root)
    proj.write(
        {
            "knowl.toml": 'staleness_days = 3650\n[site]\ntemplates = "tpl"\n',
            "tpl/page.html": template,
        }
    )
    proj.commit()
    build(root)
    result = invoke(["site", "--repo", str(root), "--out", str(tmp_path / "out")], code=2)
    assert "site template page.html" in result.stderr, result.stderr


def test_templates_stay_inside_the_project(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "page.html").write_text("stolen {{ page.title }}")
    root = tmp_path / "proj"
    proj = make_site_project(root)
    (root / "tpl").mkdir()
    os.symlink(outside / "page.html", root / "tpl" / "page.html")
    proj.write({"knowl.toml": 'staleness_days = 3650\n[site]\ntemplates = "tpl"\n'})
    proj.commit()
    build(root)
    out = site(root)
    assert "stolen" not in (out / "pages" / "revenue.html").read_text()
    with pytest.raises(ConfigError, match="not inside the project"):
        Templates(outside, root)
    (root / "knowl.toml").write_text('[site]\ntemplates = "../outside"\n')
    bad = invoke(["site", "--repo", str(root), "--out", str(tmp_path / "o3")], code=2)
    assert "'site.templates': must be a folder inside the project" in bad.stderr


# --- markup --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[[a]] [[b|B]] [[c#H]] [[#Only]] ![[d.md]] [[e\\|x]] [[]] [[|x]] [[ f ]]",
        "`[[code]]` and ``[[more `code`]]`` then [[after]]",
        "```\n[[fenced]]\n```\n\n    [[indented]]\n\n[[real]]",
        "\\[[escaped]] [x [[inside]]](https://e.org) [[last]]",
        "| a | b |\n| - | - |\n| [[t\\|alias]] | [[u]] |",
    ],
)
def test_wiki_links_match_the_body_scan(text: str) -> None:
    """The renderer and the body scan read the same `[[...]]`: each token finds its record."""
    scan = scan_body(text, 0, TextIndex(text))
    records = [
        LinkRecord(
            target=link.target,
            kind="embed" if link.embed else "link",
            heading=link.heading,
            line=link.span.line,
            column=link.span.column,
            to=f"knowledge/global/{link.target or 'self'}.md",
        )
        for link in scan.links
    ]
    for link in scan.links:
        parsed = parse_wiki(link.raw[3 if link.embed else 2 : -2], link.embed)
        assert parsed is not None and (parsed.target, parsed.heading) == (link.target, link.heading)
    record = PageRecord(
        id="p",
        scope="global",
        owner=None,
        path="knowledge/global/p.md",
        title="P",
        frontmatter={},
        fields=None,  # type: ignore[arg-type]
        body=text,
        raw_body=text,
        headings=[],
        links=records,
        freshness=None,  # type: ignore[arg-type]
        drift=[],
        last_commit=None,
    )
    html = render_body(record, lambda path: f"to/{path.rsplit('/', 1)[1]}")
    linked = re.findall(r'class="wikilink[^"]*" href="to/([^"#]+)\.md', html)
    code = "".join(re.findall(r"<code>(.*?)</code>", html, flags=re.S))
    expected = [
        r.target or "self"
        for r in records
        # `\[[escaped]]` is text to markdown-it and a link to the scan: it matches no token.
        if f"[[{r.target}" not in code and r.target != "escaped"
    ]
    assert linked == expected


def test_headings_get_anchors_and_move_down_a_level() -> None:
    text = "# Title\n\n# What counts\n\n## What counts\n\nx\n"
    record = PageRecord(
        id="p",
        scope="global",
        owner=None,
        path="k.md",
        title="Title",
        frontmatter={},
        fields=None,  # type: ignore[arg-type]
        body=text,
        raw_body=text,
        headings=[],
        links=[],
        freshness=None,  # type: ignore[arg-type]
        drift=[],
        last_commit=None,
    )
    html = render_body(record, lambda path: None)
    assert html.startswith('<h2 id="what-counts">What counts</h2>\n<h3 id="what-counts-1">')
    assert Headings("Title").title == "title" and Headings("Graph").title == "graph-1"
    assert fragment("Graph") == "#graph-1" and fragment("A#What counts") == "#what-counts"
    assert slug("Straße *bold* `x`") == "strasse-bold-x"


def test_scripts_ship_without_comment_lines() -> None:
    source = (
        "/* A header\n * over lines. */\n(function () {\n  // a comment line\n"
        '  var a = "// kept: code"; /* inline, kept */\n  /* one line */\n'
        "  return a * 2;\n})();\n"
    )
    assert compact_js(source) == (
        '(function () {\nvar a = "// kept: code"; /* inline, kept */\nreturn a * 2;\n})();\n'
    )
