"""The site's search shards and graph files, without a browser: they rank as `knowl search`
does (a reference of search.js's scoring in Python), hold nothing of a user's page, are the
same bytes for the same artifact, and a rebuild after one edit rewrites only what changed.
The browser tests (test_site_browser.py) run the shipped scripts on the same data."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

import pytest

from knowl_build.artifacts.schema import CatalogEntry
from knowl_build.index.analysis import query_terms
from knowl_build.index.fields import name_key, search_terms
from knowl_build.reader import Reader
from knowl_build.reader.view import ArtifactView, find_artifact, visible
from knowl_build.site import datafiles, graph, search, shards, urls
from knowl_build.site.shards import pack_file, read_file
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

ORDERS = "semantics/shop/orders.yaml"
# Words that occur in one page each, and the page a query for them must rank first.
DISTINCT = {"zymurgical": "refund-policy", "quincunx": "fiscal-calendar"}
# The user's page: none of these may appear in any file of the site.
USER_ID = "alice-private-plans"
USER_TITLE = "Alice Private Plans"
USER_WORDS = ("xylophonist", "quokkaberry")

FILLER = [
    "revenue",
    "orders",
    "customers",
    "churn",
    "margin",
    "cohort",
    "refunds",
    "invoices",
    "pipeline",
    "forecast",
    "quarterly",
    "monthly",
    "subscriptions",
    "retention",
    "growth",
    "dashboard",
    "warehouse",
    "definitions",
]


def site_files() -> dict[str, str]:
    """A small knowledge base: linked pages, an entity with a live definition, a page that
    drifts (its measure changes in the next commit), a hostile page and a user's page."""
    files: dict[str, str] = dict(SEMANTICS)
    files["knowl.toml"] = 'repo_name = "site-demo"\nstaleness_days = 3650\n'
    files["knowledge/global/revenue.md"] = (
        "---\ntitle: Revenue\nsummary: What revenue means here, and how it is computed.\n"
        "tags: [revenue, finance]\nsl_refs: [shop_pg.orders.total_revenue]\n"
        'meta:\n  last_validated_at: "2026-01-01T12:00:00Z"\n  bound_fingerprints:\n'
        f'    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n---\n'
        "# Revenue\n\nRevenue is `<< sl:shop_pg.orders.total_revenue.expr >>` over completed "
        "orders. Refunds are netted out as the [[refund-policy]] says.\n"
    )
    files["knowledge/global/refund-policy.md"] = (
        "---\ntitle: Refund policy\nsummary: How refunds are netted out of revenue.\n"
        "tags: [refunds]\nrefs: [revenue]\nsl_refs: [shop_pg.orders.total_revenue]\n"
        "usage_mode: caveat\n---\n# Refund policy\n\nA zymurgical note: refunds reduce "
        "[[revenue]] in the month they are paid, not the month of the order.\n"
    )
    files["knowledge/global/fiscal-calendar.md"] = (
        "---\ntitle: Fiscal calendar\nsummary: Quarters start in February.\ntags: [finance]\n"
        "---\n# Fiscal calendar\n\nThe quincunx of quarters: see [[revenue]] and "
        "[[refund-policy]].\n"
    )
    files["knowledge/global/hostile.md"] = (
        "---\ntitle: 'Hostile <script>window.__knowlPwned = 1</script> page'\n"
        "summary: '<img src=x onerror=\"window.__knowlPwned = 2\">'\n---\n"
        "# Hostile\n\n<script>window.__knowlPwned = 3</script>\n\n"
        '<img src="x" onerror="window.__knowlPwned = 4">\n\n'
        "[click me](javascript:window.__knowlPwned=5) and "
        '<a href="javascript:window.__knowlPwned=6" onclick="window.__knowlPwned=7">me</a>. '
        "It mentions [[revenue]].\n"
    )
    for i, word in enumerate(FILLER):
        others = " ".join(FILLER[(i + k) % len(FILLER)] for k in range(1, 9))
        files[f"knowledge/global/notes/note-{i:02d}.md"] = (
            f"---\ntitle: Note on {word}\nsummary: A note about {word} and {others[:40]}.\n"
            f"tags: [{word}]\n---\n# Note on {word}\n\n{word} {word} {others}. "
            f"See [[revenue]].\n"
        )
    files[f"knowledge/user/alice/{USER_ID}.md"] = (
        f"---\ntitle: {USER_TITLE}\nsummary: {USER_WORDS[0]} revenue plans\n"
        f"sl_refs: [shop_pg.orders.total_revenue]\n---\n# {USER_TITLE}\n\n"
        f"{USER_WORDS[1]} {USER_WORDS[0]} revenue zymurgical, see [[revenue]].\n"
    )
    return files


def make_site_project(root: Path) -> Project:
    """The project, committed, then its measure changed in a second commit (the drift)."""
    proj = Project(root)
    proj.write(site_files())
    proj.commit("A small knowledge base")
    proj.write({ORDERS: SEMANTICS[ORDERS].replace('"sum(amount)"', '"sum(amount) - sum(refunds)"')})
    proj.commit("Net out refunds in revenue")
    return proj


def build(root: Path) -> Path:
    invoke(["build", "--repo", str(root), "-q", "--allow-errors"], code=0)
    return find_artifact(root)


def site_pages(view: ArtifactView) -> list[tuple[str, CatalogEntry]]:
    """What the core build passes: every global page with its link."""
    return [(urls.page_href(e), e) for e in view.pages if visible(e, None)]


def write_data(artifact: Path, out: Path) -> tuple[Any, Any]:
    view = ArtifactView.open(artifact)
    try:
        return search.write(view, out, site_pages(view)), graph.write(view, out)
    finally:
        view.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(project root, site folder with the search and graph data written)."""
    monkey = pytest.MonkeyPatch()
    monkey.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkey.setenv("KNOWL_EMBEDDINGS", "off")
    root = tmp_path_factory.mktemp("site") / "proj"
    make_site_project(root)
    out = root.parent / "out"
    write_data(build(root), out)
    yield root, out
    monkey.undo()


# --- a reference of search.js's ranking --------------------------------------------------------


def ranked(out: Path, text: str) -> list[tuple[str, float]]:
    """search.js's algorithm over the written files, in Python: (href, score), best first."""
    folder = out / search.FOLDER
    meta = json.loads((folder / search.META).read_text())
    acc: dict[int, float] = {}
    terms = search_terms(text)
    key = name_key(text)
    entries = {term: search.lookup(folder, meta, term)[0] for term in terms}
    k1, b, n = meta["k1"], meta["b"], max(meta["doc_count"], 1)
    # The names and the headings count by what they cover, after the other fields.
    # scores, covered, matched
    short: dict[str, tuple[dict[int, float], dict[int, float], dict[int, int]]] = {
        "title": ({}, {}, {}),
        "headings": ({}, {}, {}),
    }
    for f, field in enumerate(meta["fields"]):
        sums, covered, matched = short.get(field, (acc, {}, {}))
        for term in terms:
            entry = entries[term]
            if entry is None or not entry[0][f]:
                continue
            idf = math.log(1 + (n - entry[0][f] + 0.5) / (entry[0][f] + 0.5))
            weight = meta["boosts"][f] * idf * (k1 + 1)
            postings, doc = entry[1 + f], 0
            for i in range(0, len(postings), 3):
                doc += postings[i]
                tf, length = postings[i + 1], postings[i + 2]
                norm = k1 * (1 - b + b * length / meta["avg_lengths"][f])
                sums[doc] = sums.get(doc, 0.0) + weight * tf / (tf + norm)
                covered[doc] = covered.get(doc, 0.0) + tf / max(length, 1)
                matched[doc] = matched.get(doc, 0) + 1
    names, covered, _matched = short["title"]
    for doc, score in names.items():
        acc[doc] = acc.get(doc, 0.0) + score * min(1.0, covered[doc])
    headings, _covered, matched = short["headings"]
    for doc, score in headings.items():
        acc[doc] = acc.get(doc, 0.0) + score * (matched[doc] / max(len(terms), 1))
    # A name's entry is in the shard of its first term.
    gaps = search.lookup(folder, meta, shards.NAMED + key, query_terms(key)[0])[0] if key else []
    named = set(accumulate(gaps or []))
    for doc in named:
        acc.setdefault(doc, 0.0)
    hits = sorted(acc.items(), key=lambda item: (item[0] not in named, -item[1], item[0]))
    chunks: dict[int, list[Any]] = {}
    result = []
    for doc, score in hits:
        c = doc // meta["chunk"]
        if c not in chunks:
            path = folder / search.DOCS / f"{meta['chunks'][c]}.json"
            chunks[c] = json.loads(path.read_text())
        file = folder / search.RESULTS / f"{chunks[c][doc % meta['chunk']]}.json"
        result.append((json.loads(file.read_text())[0], score))
    return result


QUERIES = [
    "zymurgical",
    "quincunx",
    "revenue",
    "refunds revenue",
    "Revenues of ORDERS",
    "margin",
    "Revenue",
    "RÉFUND Policy",
    "the refunds of the revenue",
]


@pytest.mark.parametrize("text", QUERIES)
def test_the_shards_rank_as_knowl_search(built: tuple[Path, Path], text: str) -> None:
    root, out = built
    with Reader.open(root) as reader:
        expected = [
            (urls.page_href(reader.view.page(h["scope"], h["page"]) or _no_page()), h["score"])
            for h in reader.search(text, limit=200)["hits"]
            if h["kind"] == "page"
        ]
    got = ranked(out, text)
    assert [href for href, _ in got] == [href for href, _ in expected]
    for (_, mine), (_, theirs) in zip(got, expected, strict=True):
        assert mine == pytest.approx(theirs, rel=1e-12)


def _no_page() -> CatalogEntry:
    raise AssertionError("a hit without a catalog entry")


def test_a_distinctive_word_ranks_its_page_first(built: tuple[Path, Path]) -> None:
    _root, out = built
    for word, page in DISTINCT.items():
        assert ranked(out, word)[0][0] == f"pages/{page}.html"
    # The user's page holds "zymurgical" too, and is not a result: only one hit.
    assert len(ranked(out, "zymurgical")) == 1


def test_no_file_holds_anything_of_a_user_page(built: tuple[Path, Path]) -> None:
    _root, out = built
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    needles = [USER_ID, USER_TITLE, "user:alice", "alice", *USER_WORDS]
    # The index holds stems: a user's word must not reach a shard in that form either.
    needles += [t for word in USER_WORDS for t in query_terms(word)]
    for path in files:
        text = path.read_bytes().lower()  # a shard's postings are binary
        found = [n for n in needles if n.lower().encode() in text or n.lower() in path.name.lower()]
        assert not found, f"{path.relative_to(out)}: {found}"


def test_the_same_artifact_gives_the_same_bytes(built: tuple[Path, Path], tmp_path: Path) -> None:
    root, out = built
    again = tmp_path / "again"
    write_data(find_artifact(root), again)

    def tree(folder: Path) -> dict[str, bytes]:
        return {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*")
            if p.suffix in (".json", ".bin")
        }

    assert tree(again) == tree(out)
    # Written over itself, nothing is rewritten, nothing removed, no temporary file left.
    found, drawn = write_data(find_artifact(root), again)
    assert found.written == drawn.written == found.removed == drawn.removed == []
    assert not list(again.rglob(".*"))


def test_meta_names_its_files_by_content(built: tuple[Path, Path]) -> None:
    _root, out = built
    folder = out / search.FOLDER
    meta = json.loads((folder / search.META).read_text())
    assert meta["format"] == search.FORMAT and meta["fields"] == [
        "title",
        "summary",
        "tags",
        "body",
        "headings",
    ]
    assert len(meta["shards"]) & (len(meta["shards"]) - 1) == 0  # a power of two
    files = [
        f for n in meta["chunks"] for f in json.loads((folder / "docs" / f"{n}.json").read_text())
    ]
    rows = [json.loads((folder / search.RESULTS / f"{f}.json").read_text()) for f in files]
    # The term files: the shards, and the files of their large terms, which the shards name.
    shards = [(folder / search.TERMS / f"{n}.bin").read_bytes() for n in meta["shards"]]
    own = {
        v for data in shards for v in read_file(data, meta["docs"]).values() if isinstance(v, str)
    }
    assert {p.name for p in (folder / search.TERMS).iterdir()} == {
        f"{n}.bin" for n in [*meta["shards"], *own]
    }
    # Every result's file is named by its chunk, a large term's by its shard, every other
    # file by meta.json.
    on_disk = {p.stem for p in folder.glob("*/*") if p.is_file()}
    assert meta["entities"] is not None  # the project has a semantic layer
    assert on_disk == {*meta["shards"], *own, *meta["chunks"], *files, meta["entities"]}
    for kind in (search.TERMS, search.DOCS, search.RESULTS, search.ENTITIES):
        for path in (folder / kind).iterdir():
            assert path.stem == datafiles.digest(path.read_bytes())
    # Every result is an active global page, linked relative to the site's root.
    assert len(rows) == len(set(files)) == meta["docs"]
    assert all(re.fullmatch(r"pages/[A-Za-z0-9%._~-]+\.html", r[0]) for r in rows)
    drifted = [r for r in rows if r[0] == "pages/revenue.html"]
    assert drifted and drifted[0][4] is True


def test_one_edit_rewrites_only_the_shards_of_its_terms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "BYTES_PER_SHARD", 64)  # many shards for a small base
    proj = make_site_project(tmp_path / "proj")
    out = tmp_path / "out"
    first, _ = write_data(build(proj.root), out)
    shards = len(json.loads((out / "search/meta.json").read_text())["shards"])
    assert shards >= 32
    page = "knowledge/global/fiscal-calendar.md"
    proj.write({page: site_files()[page].replace("quincunx", "quincunx heptagonal")})
    proj.commit("One edit")
    found, drawn = write_data(build(proj.root), out)

    def of(names: list[str], kind: str) -> list[str]:
        return [name for name in names if name.startswith(f"search/{kind}/")]

    # Only the shards of the page's terms change (its lengths and the new word), each
    # written under its new content name, the old file removed.
    # (A large term's own file may change with its shard.)
    touched = {search.fnv1a32(t) % shards for t in query_terms(site_files()[page] + " heptagonal")}
    written = of(found.written, "terms")
    assert 1 <= len(written) <= 2 * len(touched) and len(touched) < shards
    assert len(of(found.removed, "terms")) == len(written)
    assert len(of(found.removed, "docs")) == len(of(found.written, "docs")) <= 1
    # The page's own result file (its text changed), and no other.
    assert len(of(found.written, "results")) == len(of(found.removed, "results")) == 1
    assert first.written and "search/meta.json" in found.written
    assert ranked(out, "heptagonal")[0][0] == "pages/fiscal-calendar.html"
    assert not drawn.written  # the links did not change: no graph file either


def test_a_result_link_is_relative_to_the_site(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("javascript:alert(1)", "/etc/passwd", "https://example.com/x.html", "", "a\\b"):
        with pytest.raises(ValueError):
            search._safe_href(bad)
    assert search._safe_href("pages/a%253Ab.html") == "pages/a%253Ab.html"


def test_summaries_are_cut_at_a_word() -> None:
    assert search.summary("short  text\n") == "short text"
    long = " ".join(["word"] * 200)
    cut = search.summary(long)
    assert len(cut) <= search.SUMMARY_CHARS + 1 and cut.endswith("word…")


def test_a_term_file_packs_its_postings_in_bytes() -> None:
    terms = {
        "revenu": [[2, 0, 1, 3, 0], [0, 1, 5, 127, 1, 128], [], [9, 2, 3], [1, 300, 2**40], []],
        "weigh": [[1, 0, 0, 0, 0], [4, 1.5, 7], [], [], [], []],  # a fractional tf stays JSON
        "order": [[3, 0, 0, 0, 0], [0, 1, 5, 2, 2, 5, 7, 1, 7], [], [], [], []],
        "margin": "0123456789abcdef",  # a large term: the name of its own file
        shards.NAMED + "revenue": [0, 3],
    }
    data = pack_file(terms, 20)
    assert read_file(data, 20) == terms
    size = int.from_bytes(data[:4], "little")
    lengths, head = json.loads(data[4 : 4 + size])
    # Most frequent first, ties by length (a field kept in the JSON needs none).
    assert lengths == [5, 3, 7, 128, 2**40]
    # order: 3 of 20 documents, a bitmap of 3 bytes, then one byte a posting, (tf - 1) * 5 +
    # the place of its length; revenu: gaps 0, 127 and 2, 3 / gap 9 then 1 * 5 + 2 / gap 1
    # then 299 * 5 + 4 (two bytes)
    assert head["order"][1] == [0, 3, 1]
    assert head["revenu"][1:4] == [[6, 2], [], [10, 1]] and head["revenu"][4] == [12, 1]
    assert head["weigh"][1] == [[4, 1.5, 7]]
    assert len(data) - 4 - size == 3 + 3 + 4 + 2 + 3


def test_fnv1a32_is_the_published_function() -> None:
    # Test vectors of FNV-1a 32 (http://www.isthe.com/chongo/tech/comp/fnv/).
    assert search.fnv1a32("") == 0x811C9DC5
    assert search.fnv1a32("a") == 0xE40C292C
    assert search.fnv1a32("foobar") == 0xBF9CF968


# --- the graph ---------------------------------------------------------------------------------


def graph_doc(out: Path, node: str) -> dict[str, Any]:
    name = graph.node_file(node)
    assert name is not None
    data: dict[str, Any] = json.loads((out / name).read_text())
    return data


def test_every_global_page_and_entity_has_its_neighbourhood(built: tuple[Path, Path]) -> None:
    root, out = built
    view = ArtifactView.open(find_artifact(root))
    try:
        pages = [e for e in view.pages if visible(e, None)]
        entities = sorted(view.entities)
    finally:
        view.close()
    files = {p.relative_to(out).as_posix() for p in (out / graph.FOLDER).rglob("*.json")}
    expected = {graph.node_file(f"page:global:{urls.page_name(e)}") for e in pages}
    expected |= {graph.node_file(f"entity:{name}") for name in entities}
    assert files == {*expected, f"{graph.FOLDER}/{graph.OVERVIEW}"}

    revenue = graph_doc(out, "page:global:revenue")
    ids = [n[0] for n in revenue["nodes"]]
    assert ids[0] == "page:global:revenue"
    assert "entity:shop_pg.orders.total_revenue" in ids and "page:global:refund-policy" in ids
    assert revenue["total"] == len(ids) - 1  # below the cap: every neighbour
    centre = revenue["nodes"][0]
    assert centre[1:4] == ["Revenue", "reference", "pages/revenue.html"]
    assert centre[5] == "drifted"
    # Edges index the node list, and keep their direction and kind.
    pairs = {(ids[a], ids[b], kind) for a, b, kind in revenue["edges"]}
    assert ("page:global:refund-policy", "page:global:revenue", "ref") in pairs
    assert ("page:global:revenue", "entity:shop_pg.orders.total_revenue", "sl_ref") in pairs
    entity = graph_doc(out, "entity:shop_pg.orders.total_revenue")
    assert entity["nodes"][0][3] == "entities/shop_pg.orders.total_revenue.html"


def test_what_is_drawn_is_capped(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _out = built
    monkeypatch.setattr(graph, "NEIGHBOURHOOD_CAP", 5)
    monkeypatch.setattr(graph, "OVERVIEW_CAP", 7)
    out = tmp_path / "capped"
    write_data(find_artifact(root), out)
    revenue = graph_doc(out, "page:global:revenue")
    assert len(revenue["nodes"]) == 5 and revenue["total"] > 4
    degrees = [n[4] for n in revenue["nodes"][1:]]
    assert degrees == sorted(degrees, reverse=True)  # the most connected neighbours kept
    overview = json.loads((out / "graph/overview.json").read_text())
    assert len(overview["nodes"]) == 7 and overview["total"] > 7
    centres = [json.loads(p.read_text())["nodes"][0] for p in out.glob("graph/*/*.json")]
    top = sorted(centres, key=lambda n: (-n[4], n[0]))[:7]
    assert sorted(n[0] for n in overview["nodes"]) == sorted(n[0] for n in top)


@pytest.mark.parametrize(
    ("node", "file"),
    [
        ("page:global:revenue", "graph/pages/revenue.json"),
        ("page:global:a b/ü", "graph/pages/a%20b%2F%C3%BC.json"),
        ("page:global:..", "graph/pages/%2E%2E.json"),
        ("entity:x.y(z)!", "graph/entities/x.y%28z%29%21.json"),
        ("page:user:alice:x", None),
    ],
)
def test_a_node_file_name_is_safe(node: str, file: str | None) -> None:
    assert graph.node_file(node) == file
