"""Markdown links and images are links (issue 22, item 1): what the body scan reads as one and
where, each finding of the checker at its exact position, the graph, backlinks, traverse,
records, the site and `knowl fix` on real git repositories; and the property that Markdown
links and wiki-links to the same targets give the same graph, backlinks and traverse.
"""

from __future__ import annotations

import datetime as dt
import json
import posixpath
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.core.config import SecurityConfig
from knowl_build.core.config_loader import config_from_mapping
from knowl_build.core.linkpaths import exclude_problem, github_slugs
from knowl_build.core.model import MARKDOWN
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner
from tests.helpers import Project, current_build, invoke, records

G = "knowledge/global"
P = f"{G}/page.md"
FM = "---\nsummary: s\n---\n"  # a body starts on line 4
OFF_STALE: dict[str, Any] = {"rules": {"KB202": "off"}}


def _links(body: str) -> list[tuple[str, str, str | None, bool, int, int]]:
    parsed = parse_page((FM + body).encode(), SecurityConfig(), SecretScanner())
    return [
        (link.form, link.target, link.heading, link.embed, link.span.line, link.span.column)
        for link in parsed.links
    ]


def _urls(body: str) -> list[tuple[str, int, int]]:
    parsed = parse_page((FM + body).encode(), SecurityConfig(), SecretScanner())
    return [(u.url, u.span.line, u.span.column) for u in parsed.urls]


M = MARKDOWN

# --- what is a link, and where -----------------------------------------------------------

SCAN: list[tuple[str, str, list[tuple[str, str, str | None, bool, int, int]]]] = [
    ("inline", "See [rev](revenue.md).\n", [(M, "revenue.md", None, False, 4, 5)]),
    ("title", '[x](a.md "The title")\n', [(M, "a.md", None, False, 4, 1)]),
    ("angle-and-space", "[x](<a b.md#Some Part>)\n", [(M, "a b.md", "Some Part", False, 4, 1)]),
    ("percent", "[x](a%20b.md#x%20y)\n", [(M, "a b.md", "x y", False, 4, 1)]),
    ("query-dropped", "[x](a.md?v=1#h)\n", [(M, "a.md", "h", False, 4, 1)]),
    ("escapes-and-entities", "[x](a\\_b&amp;c.md)\n", [(M, "a_b&c.md", None, False, 4, 1)]),
    ("image", "![alt](img/a.png)\n", [(M, "img/a.png", None, True, 4, 1)]),
    (
        "image-in-link",
        "[![alt](a.png)](b.md)\n",
        [(M, "b.md", None, False, 4, 1), (M, "a.png", None, True, 4, 2)],
    ),
    ("self-heading", "[x](#local)\n", [(M, "", "local", False, 4, 1)]),
    (
        "reference-forms",
        "[a][r] [r][] [r] [R]\n\n[r]: ./d.md#h\n",
        [
            (M, "./d.md", "h", False, 4, 1),
            (M, "./d.md", "h", False, 4, 8),
            (M, "./d.md", "h", False, 4, 14),
            (M, "./d.md", "h", False, 4, 18),
        ],
    ),
    ("reference-undefined", "[a][nope] and [nope]\n", []),
    ("first-definition-wins", "[r]\n\n[r]: a.md\n[r]: b.md\n", [(M, "a.md", None, False, 4, 1)]),
    ("multi-line", "A [long\nlink](m.md) here\n", [(M, "m.md", None, False, 4, 3)]),
    ("in-blockquote", "> quoted\n> [q](q.md)\n", [(M, "q.md", None, False, 5, 3)]),
    ("in-list", "- item\n  1. [l](l.md)\n", [(M, "l.md", None, False, 5, 6)]),
    ("in-heading", "## See [h](h.md)\n", [(M, "h.md", None, False, 4, 8)]),
    ("crlf", "a\r\n[c](c.md)\r\n", [(M, "c.md", None, False, 5, 1)]),
    ("code-span", "`[x](a.md)` and ``[y](b.md)``\n", []),
    ("fence", "```\n[x](a.md)\n```\n", []),
    ("indented-code", "para\n\n    [x](a.md)\n", []),
    ("html-comment", "text <!-- [x](a.md) --> more\n", []),
    ("html-block", "<div>\n[x](a.md)\n</div>\n", []),
    ("escaped", "\\[x](a.md)\n", []),
    (
        "hugo-shortcodes",
        '{{< highlight md >}}\n[a](b.md)\n{{< /highlight >}}\n[c](d.md) {{< x t="[e](f.md)" >}}\n',
        [(M, "d.md", None, False, 7, 1)],
    ),
    ("wiki-first", "[[a]](b.md)\n", [("wiki", "a", None, False, 4, 1)]),
    ("schemes-are-no-paths", "[m](mailto:a@b.c) [t](tel:123) [f](ftp://x) [p](//h/x)\n", []),
    ("empty", "[x]() [y](<>) [z](#)\n", []),
    ("nested-link-is-text", "[a [b](c.md)](d.md)\n", [(M, "c.md", None, False, 4, 4)]),
    (
        "wiki-and-markdown-in-order",
        "[[w1]] [m](m.md) [[w2]]\n",
        [
            ("wiki", "w1", None, False, 4, 1),
            (M, "m.md", None, False, 4, 8),
            ("wiki", "w2", None, False, 4, 18),
        ],
    ),
]


@pytest.mark.parametrize("body, expected", [c[1:] for c in SCAN], ids=[c[0] for c in SCAN])
def test_what_the_scan_reads_as_a_markdown_link(body: str, expected: list[Any]) -> None:
    assert _links(body) == expected


def test_destinations_are_kept_as_written_with_their_offset() -> None:
    text = FM + "[a](<x y.md#h>) [b][r]\n\n> [r]:\n>   ../r%20s.md 'title'\n"
    parsed = parse_page(text.encode(), SecurityConfig(), SecretScanner())
    written = [
        (link.destination, text[link.at : link.at + len(link.destination)], link.text)
        for link in parsed.links
    ]
    assert written == [("<x y.md#h>", "<x y.md#h>", "a"), ("../r%20s.md", "../r%20s.md", "b")]


def test_http_targets_are_urls_with_their_positions() -> None:
    body = "[w](https://a.b/c?d) <https://x.y/z> ![i](HTTP://i.png) [m](mailto:a@b)\n[n](x.md)\n"
    assert _urls(body) == [
        ("https://a.b/c?d", 4, 1),
        ("https://x.y/z", 4, 22),
        ("HTTP://i.png", 4, 38),
    ]
    assert _links(body) == [(M, "x.md", None, False, 5, 1)]


def test_brackets_without_end_are_scanned_in_linear_time_with_the_one_link() -> None:
    # The shapes that make a link parser quadratic; their speed is in bench/body_bench.py.
    assert _links("[" * 20_000 + "](x.md)\n") == [(M, "x.md", None, False, 4, 20_000)]
    assert _links("![" * 10_000 + "](x.png)\n") == [(M, "x.png", None, True, 4, 19_999)]


# --- findings, each at its position --------------------------------------------------------


def _check(
    tmp_path: Path, files: dict[str, str | bytes], config: dict[str, Any] | None = None
) -> list[tuple[str, str, int, int]]:
    project = Project(tmp_path / "p", git=False).write(files)
    cfg = config_from_mapping({**OFF_STALE, **(config or {})}, "test")
    analysis = analyse(project.root, cfg, use_cache=False, today=dt.date(2026, 5, 28))
    return [(d.path, d.code, d.line, d.column) for d in analysis.diagnostics if d.code != "KB009"]


def page(body: str) -> str:
    return FM + body


GUIDE = page("# Guide\n\n## The Section\n\n## FAQ\n\n## FAQ\n\nText ^block-1\n")
BASE: dict[str, str | bytes] = {
    f"{G}/guide/setup.md": GUIDE,
    f"{G}/guide/index.md": page("# Guides\n"),
    f"{G}/img/a b.png": b"\x89PNG",
    "assets/logo.svg": "<svg/>",
    "README.md": "# Readme\n",
    "knowledge/user/ann/notes.md": page("# Notes\n"),
}
OBSIDIAN = {"links": {"resolution": "obsidian"}}

FINDINGS: list[tuple[str, str, dict[str, Any] | None, list[tuple[str, str, int, int]]]] = [
    (
        "pages-files-folders-that-exist",
        "[a](guide/setup.md) [b](./guide/setup.md#the-section) ![c](img/a%20b.png)\n"
        "[d](../../assets/logo.svg) [e](../../README.md) [f](guide/) [g](img/) [h](guide/setup)\n",
        None,
        [],
    ),
    (
        "kb103-missing-page-and-file",
        "[a](nope.md) and ![b](img/gone.png)\n[c](../../assets/gone.svg)\n",
        None,
        [(P, "KB103", 4, 1), (P, "KB103", 4, 18), (P, "KB103", 5, 1)],
    ),
    ("kb103-reference-at-its-use", "x [a][r]\n\n[r]: nope.md\n", None, [(P, "KB103", 4, 3)]),
    ("kb008-outside", "x [a](../../../etc/passwd)\n", None, [(P, "KB008", 4, 3)]),
    (
        "nul-and-long-names",
        f"[a](../../a%00b) [b](../../{'x' * 5000}.md)\n",
        None,
        [(P, "KB103", 4, 1), (P, "KB103", 4, 18)],
    ),
    ("kb104-user-page", "[n](../user/ann/notes.md)\n", None, [(P, "KB104", 4, 1)]),
    (
        "kb105-slugs",
        "[a](guide/setup.md#the-section) [b](guide/setup.md#faq-1) [c](guide/setup.md#FAQ)\n"
        "[d](guide/setup.md#faq-2) [e](guide/setup.md#The%20Section)\n",
        None,
        [(P, "KB105", 5, 1), (P, "KB105", 5, 27)],
    ),
    ("kb105-self", "# Top\n[a](#top) [b](#bottom)\n", None, [(P, "KB105", 5, 11)]),
    ("file-fragment-unchecked", "![a](img/a%20b.png#page=3)\n", None, []),
    ("site-absolute-unchecked", "[a](/docs/nope/) [b](/x.md)\n", None, []),
    (
        "site-root-pretty-urls",
        "[a](/guide/setup/) [b](/guide/) [c](/guide/setup) [d](/guide/nope/) [e](/img/a%20b.png)\n",
        {"links": {"site_root": G}},
        [(P, "KB103", 4, 51)],
    ),
    (
        "exclude",
        "[a](nope.md) [b](/api/x.md) [c](gone.pdf)\n",
        {"links": {"exclude": ["^nope", "\\.pdf$"], "site_root": "."}},
        [(P, "KB103", 4, 14)],
    ),
    (
        "exact-mode-has-no-fallback",
        "[a](setup.md) [b](Guide/Setup.md)\n",
        None,
        [(P, "KB103", 4, 1), (P, "KB103", 4, 15)],
    ),
    (
        "obsidian-vault-root-file-name-case-and-blocks",
        "[a](setup.md) [b](guide/Setup.md) [c](Setup.md#^block-1) [d](setup.md#^nope)\n"
        "[e](setup.md#The%20Section) [f](a%20b.png) [g](missing.md)\n",
        OBSIDIAN,
        [(P, "KB105", 4, 58), (P, "KB103", 5, 44)],
    ),
]


@pytest.mark.parametrize(
    "body, config, expected", [c[1:] for c in FINDINGS], ids=[c[0] for c in FINDINGS]
)
def test_findings_at_their_positions(
    tmp_path: Path, body: str, config: dict[str, Any] | None, expected: list[Any]
) -> None:
    assert _check(tmp_path, {**BASE, P: page(body)}, config) == expected


def test_messages_quote_the_link_as_written(tmp_path: Path) -> None:
    project = Project(tmp_path / "p", git=False).write(
        {**BASE, P: page("[a](nope.md) [b](guide/setup.md#gone) [c](../../../x)\n")}
    )
    analysis = analyse(project.root, config_from_mapping(OFF_STALE, "t"), use_cache=False)
    shown = [(d.code, d.message, d.hint) for d in analysis.diagnostics if d.code != "KB009"]
    assert shown == [
        (
            "KB103",
            "[a](nope.md) points at no page or file: knowledge/global/nope.md does not exist",
            None,
        ),
        ("KB105", "[b](guide/setup.md#gone): page 'setup.md' has no heading '#gone'", None),
        (
            "KB008",
            "[c](../../../x) points outside the project",
            "knowl reads nothing outside the project root: link to a copy inside it, or to its URL",
        ),
    ]


def test_a_moved_page_is_the_hint(tmp_path: Path) -> None:
    project = Project(tmp_path / "p", git=False).write({**BASE, P: page("[a](setup.md)\n")})
    analysis = analyse(project.root, config_from_mapping(OFF_STALE, "t"), use_cache=False)
    assert [d.hint for d in analysis.diagnostics if d.code == "KB103"] == [
        "did you mean 'guide/setup.md'?"
    ]


@pytest.mark.parametrize(
    "pattern, problem",
    [
        ("(a+)+$", "repeats a repetition"),
        ("(.*a){20}", "repeats a repetition"),
        ("[", "is not a regular expression"),
        ("", "must not be empty"),
        ("x" * 1001, "is longer than 1000 characters"),
        ("^/api/", None),
        ("(ab)+", None),
    ],
)
def test_exclude_patterns_are_checked(pattern: str, problem: str | None) -> None:
    found = exclude_problem(pattern)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_a_bad_exclude_pattern_is_a_one_line_config_error(tmp_path: Path) -> None:
    project = Project(tmp_path / "p", git=False).write(
        {P: page("x\n"), "knowl.toml": "[links]\nexclude = ['(a+)+']\n"}
    )
    result = invoke(["check", "--repo", str(project.root)], code=2)
    assert result.stderr.strip().splitlines() == [
        "knowl: error: knowl.toml: 'links.exclude': pattern '(a+)+' repeats a repetition (such as "
        "`(a+)+`), which can take exponential time; write it without the nested quantifier"
    ]


def test_github_slugs() -> None:
    slugs = github_slugs(["The Section", "FAQ", "FAQ", "A & B: c_d", "Ünïcode"])
    assert {"the-section", "faq", "faq-1", "a--b-c_d", "a-b-c_d", "ünïcode", "faq_1"} <= slugs


def test_the_memo_sees_a_linked_file_appear(tmp_path: Path) -> None:
    project = Project(tmp_path / "p").write({P: page("![l](../../assets/logo.svg)\n")})
    project.commit()
    args = ["check", "--repo", str(project.root), "--format", "json"]
    first = json.loads(invoke(args, code=1).stdout)["diagnostics"]
    assert [(d["code"], d["line"], d["column"]) for d in first if d["code"] != "KB202"] == [
        ("KB103", 4, 1)
    ]
    project.write({"assets/logo.svg": "<svg/>"})  # no input of the check changes
    second = json.loads(invoke(args).stdout)["diagnostics"]
    assert [d["code"] for d in second if d["code"] != "KB202"] == []


# --- the graph, backlinks, traverse, records, the site ----------------------------------------

SITE: dict[str, str | bytes] = {
    f"{G}/home.md": page(
        "# Home\n\nSee [the revenue](finance/revenue.md#definition) first.\n"
        "Also ![chart](finance/chart.png) and [[glossary]].\n"
    ),
    f"{G}/finance/revenue.md": page(
        "# Revenue\n\n## Definition\n\nBack to [home][h].\n\n[h]: ../home.md\n"
    ),
    f"{G}/finance/chart.png": b"\x89PNG",
    f"{G}/glossary.md": page("# Glossary\n\nNo links: [broken](nowhere.md).\n"),
    "knowl.toml": '[rules]\nKB202 = "off"\nKB103 = "warning"\n',
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = Project(tmp_path_factory.mktemp("md") / "p").write(SITE)
    project.commit()
    invoke(["build", "--repo", str(project.root), "-q"])
    return project.root


def test_graph_edges_and_records_follow_markdown_links(built: Path) -> None:
    folder = current_build(built)
    graph = json.loads((folder / "graph.json").read_text())
    edges = sorted((e["source"], e["target"], e["kind"]) for e in graph["edges"])
    assert edges == [
        ("page:global:home", "page:global:glossary", "link"),
        ("page:global:home", "page:global:revenue", "link"),
        ("page:global:revenue", "page:global:home", "link"),
    ]
    links = {
        r["path"]: [
            (
                link["target"],
                link["heading"],
                link["kind"],
                link.get("to"),
                link.get("form"),
                link["line"],
                link["column"],
            )
            for link in r["links"]
        ]
        for r in records(folder)
    }
    assert links[f"{G}/home.md"] == [
        ("finance/revenue.md", "definition", "link", f"{G}/finance/revenue.md", M, 6, 5),
        ("finance/chart.png", None, "embed", None, M, 7, 6),
        ("glossary", None, "link", f"{G}/glossary.md", None, 7, 38),
    ]
    assert links[f"{G}/finance/revenue.md"] == [
        ("../home.md", None, "link", f"{G}/home.md", M, 8, 9)
    ]
    assert links[f"{G}/glossary.md"] == [("nowhere.md", None, "link", None, M, 6, 11)]


def test_backlinks_and_traverse_follow_markdown_links(built: Path) -> None:
    show = json.loads(invoke(["show", "revenue", "--repo", str(built), "--json"]).stdout)
    assert [(b["page"], b["kind"]) for b in show["backlinks"]] == [("home", "link")]
    walk = json.loads(
        invoke(["traverse", "glossary", "--repo", str(built), "--json", "--depth", "3"]).stdout
    )
    assert [(p["page"], p["depth"]) for p in walk["pages"]] == [("glossary", 0)]
    walk = json.loads(invoke(["traverse", "revenue", "--repo", str(built), "--json"]).stdout)
    assert [(p["page"], p["depth"], p["via"]) for p in walk["pages"]] == [
        ("revenue", 0, None),
        ("home", 1, {"from": "revenue", "kind": "link"}),
        ("glossary", 2, {"from": "home", "kind": "link"}),
    ]


def test_the_site_links_markdown_links_to_pages(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    invoke(["site", "--repo", str(built), "--out", str(out), "-q"])
    home = (out / "pages" / "home.html").read_text()
    assert '<a href="../pages/revenue.html#definition" class="mdlink">the revenue</a>' in home
    glossary = (out / "pages" / "glossary.html").read_text()
    assert '<span class="link-omitted" title="nowhere.md">broken</span>' in glossary
    revenue = (out / "pages" / "revenue.html").read_text()
    backlinks = revenue.split('id="backlinks-heading"', 1)[1].split("</section>", 1)[0]
    assert "See <mark>the revenue</mark> first." in backlinks
    assert '<a href="../pages/home.html" class="mdlink">home</a>' in revenue


# --- knowl fix: links to moved pages keep their form --------------------------------------------


def test_fix_rewrites_links_to_moved_pages_in_their_form(tmp_path: Path) -> None:
    project = Project(tmp_path / "p").write(
        {
            f"{G}/home.md": page(
                "Read [setup](guide/setup.md#install), [again](<guide/setup.md>), [ref][s], "
                "[[setup#Install|wiki]] and ![pic](img/a%20b.png).\n\n[s]: ./guide/setup.md\n"
            ),
            f"{G}/guide/setup.md": page("# Setup\n\n## Install\n\nBack [home](../home.md).\n"),
            f"{G}/img/a b.png": b"\x89PNG",
            "knowl.toml": '[rules]\nKB202 = "off"\n',
        }
    )
    project.commit()
    project.run_git("mv", f"{G}/guide/setup.md", f"{G}/guide/getting started.md")
    project.run_git("mv", f"{G}/img/a b.png", f"{G}/a b.png")
    project.commit("move")
    (project.root / G / "archive").mkdir()
    (project.root / G / "home.md").rename(project.root / G / "archive" / "home.md")
    out = invoke(["fix", "--repo", str(project.root)], code=1).stdout
    assert (
        "+Read [setup](../guide/getting%20started.md#install), "
        "[again](<../guide/getting started.md>), [ref][s], [[getting started#Install|wiki]] "
        "and ![pic](../a%20b.png).\n"
    ) in out
    assert "+[s]: ./../guide/getting%20started.md\n" in out
    assert "+Back [home](../archive/home.md).\n" in out
    invoke(["fix", "--repo", str(project.root), "--apply"])
    check = json.loads(invoke(["check", "--repo", str(project.root), "--format", "json"]).stdout)
    assert check["diagnostics"] == []


# --- the property: Markdown links and wiki-links give the same graph, backlinks, traverse ----

FOLDERS = ["", "a", "a/b", "c"]
HEADINGS = ["Intro", "Details"]


@st.composite
def vaults(draw: st.DrawFn) -> tuple[list[str], list[list[tuple[int, str | None]]]]:
    count = draw(st.integers(2, 5))
    folders = [draw(st.sampled_from(FOLDERS)) for _ in range(count)]
    links = [
        draw(
            st.lists(
                st.tuples(st.integers(0, count - 1), st.sampled_from([None, *HEADINGS])),
                max_size=4,
            )
        )
        for _ in range(count)
    ]
    return folders, links


def _vault(
    folders: list[str], links: list[list[tuple[int, str | None]]], form: str
) -> dict[str, str]:
    paths = [posixpath.join(G, folder, f"p{i}.md") for i, folder in enumerate(folders)]
    files: dict[str, str] = {"knowl.toml": '[rules]\nKB202 = "off"\n'}
    for i, path in enumerate(paths):
        written = []
        for target, heading in links[i]:
            if form == "wiki":
                name = "" if target == i else f"p{target}"
                written.append(f"[[{name}{'#' + heading if heading else ''}]]")
            else:
                where = (
                    "" if target == i else posixpath.relpath(paths[target], posixpath.dirname(path))
                )
                written.append(f"[p{target}]({where}{'#' + heading.lower() if heading else ''})")
        body = f"# P{i}\n\n## Intro\n\nText {' '.join(written)} end.\n\n## Details\n"
        files[path] = page(body)
    return files


def _answers(root: Path, count: int) -> dict[str, Any]:
    folder = current_build(root)
    graph = json.loads((folder / "graph.json").read_text())
    found: dict[str, Any] = {"graph": graph}
    for i in range(count):
        show = json.loads(invoke(["show", f"p{i}", "--repo", str(root), "--json"]).stdout)
        walk = json.loads(invoke(["traverse", f"p{i}", "--repo", str(root), "--json"]).stdout)
        found[f"p{i}"] = (show["backlinks"], walk["pages"])
    return found


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(vault=vaults())
def test_markdown_and_wiki_links_give_the_same_graph_backlinks_and_traverse(
    tmp_path_factory: pytest.TempPathFactory, vault: tuple[list[str], list[list[Any]]]
) -> None:
    folders, links = vault
    answers = []
    for form in ("wiki", "markdown"):
        project = Project(tmp_path_factory.mktemp(form) / "p").write(_vault(folders, links, form))
        project.commit()
        invoke(["build", "--repo", str(project.root), "-q"])
        answers.append(_answers(project.root, len(folders)))
    assert answers[0] == answers[1]


# --- the scan's faster parse is markdown-it's ------------------------------------------------

INLINE = st.text(alphabet="ab[]()<>!\\`&;:/ \n\"'*#^", max_size=60)


def _tokens(md: Any, text: str) -> list[tuple[str, str, str, str]]:
    out: list[tuple[str, str, str, str]] = []
    stack = list(md.parseInline(text, {"references": {"r": {"href": "r.md", "title": ""}}}))
    while stack:
        token = stack.pop(0)
        out.append(
            (
                token.type,
                str(token.attrs.get("href", token.attrs.get("src", ""))),
                token.content,
                token.markup,
            )
        )
        stack[:0] = list(token.children or [])
    return out


@settings(max_examples=400, deadline=None)
@given(text=INLINE)
def test_the_scans_inline_parser_reads_what_markdown_it_reads(text: str) -> None:
    from knowl_build.parse.mdlinks import _inline_parser

    assert _tokens(_inline_parser(), text) == _tokens(_inline_parser(fast=False), text)


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet="a ()\\<>\t\n\x00\x7f&;", max_size=40), data=st.data())
def test_the_fast_destination_parse_is_markdown_its(text: str, data: st.DataObject) -> None:
    from markdown_it.helpers import parseLinkDestination

    from knowl_build.parse.mdlinks import link_destination

    pos = data.draw(st.integers(0, len(text)))
    maximum = data.draw(st.integers(pos, len(text)))
    ours, theirs = link_destination(text, pos, maximum), parseLinkDestination(text, pos, maximum)
    assert (ours.ok, ours.pos, ours.str) == (theirs.ok, theirs.pos, theirs.str)


# Pieces that make plain regions (links, images, wiki-links, stray brackets and parentheses)
# and a few that make a region markdown-it's alone (`\\`, a backtick, `<`, `&`).
PIECES = st.lists(
    st.sampled_from(
        [
            "[a](b.md)",
            "![x](y.png)",
            "[t\n  u](d#h)",
            "[](c)",
            "[[w]]",
            "![[e|f]]",
            "[a]",
            "(b)",
            "[",
            "]",
            "(",
            ")",
            "!",
            " ",
            "\n",
            "a",
            "\u00a0",
            '"',
            "*",
            "\\",
            "`",
            "<",
            "&",
        ]
    ),
    max_size=14,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=st.one_of(PIECES, INLINE))
def test_plain_regions_read_as_markdown_it_reads_them(text: str) -> None:
    from knowl_build.parse.mdlinks import parsed_links, plain_links

    plain = plain_links(text, {})
    if plain is not None:
        assert plain == parsed_links(text, {})


def test_plain_regions_are_read_without_the_inline_parser() -> None:
    from knowl_build.parse.mdlinks import plain_links

    text = "See [[a]] [page b](../x/b.md#h) and ![c](c.png) (d)."
    found = plain_links(text, {})
    assert found is not None
    assert [(s.start, s.end, s.embed, s.destination, s.text) for s in found] == [
        (10, 31, False, (19, 30, True, "../x/b.md#h"), "page b"),
        (36, 47, True, (41, 46, True, "c.png"), "c"),
    ]
    # Not plain: markdown-it reads these.
    assert plain_links("[a](b) `c`", {}) is None
    assert plain_links("[a][r]", {"references": {"R": {}}}) is None
    assert plain_links("[a [b](c)](d)", {}) is None
