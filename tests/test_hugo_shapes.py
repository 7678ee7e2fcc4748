"""Hugo and MkDocs shapes (issue 22, item 6): shortcodes hold no links, code shortcodes are
code, TOML front matter is no prose, and a page bundle is named by its folder.

The tables parse one page and list what the body scan found, with exact positions; the
fixtures are a Hugo documentation site and an MkDocs site in real git repositories, checked
with `knowl check`, which reports the errors planted in them and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config import RESOLUTIONS, SecurityConfig
from knowl_build.core.model import ParsedPage
from knowl_build.parse.body import CODE_SHORTCODES
from knowl_build.parse.shortcodes import front_matter, regions
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner
from tests.helpers import Project, current_build, invoke, records

FM = "---\nsummary: s\n---\n"  # a body starts on line 4
G = "knowledge/global"


def _parse(body: str, code: frozenset[str] = CODE_SHORTCODES, fm: str = FM) -> ParsedPage:
    return parse_page((fm + body).encode(), SecurityConfig(), SecretScanner(), code)


def _links(parsed: ParsedPage) -> list[tuple[str, int, int]]:
    return [(link.target, link.span.line, link.span.column) for link in parsed.links]


# --- what the body scan reads -------------------------------------------------------------

# name: (body, the links found as (target, line, column))
LINKS: dict[str, tuple[str, list[tuple[str, int, int]]]] = {
    "a shortcode's parameters": ('{{< ref "[[a]]" >}} [[b]]\n', [("b", 4, 21)]),
    "the Markdown-notation form": ("{{% note [[a]] %}}[[b]]{{% /note %}}\n", [("b", 4, 19)]),
    "parameters over lines": (
        '{{< figure\n  src="a.png"\n  caption="[[x]]"\n>}}\n[[y]]\n',
        [("y", 8, 1)],
    ),
    "a code-toggle body": (
        '{{< code-toggle file="hugo" >}}\n[[menus.main]]\n  name = "x"\n'
        "{{< /code-toggle >}}\n[[after]]\n",
        [("after", 8, 1)],
    ),
    "a highlight body, closed by the other delimiter": (
        "{{< highlight toml >}}\n[[a]]\n{{% /highlight %}} [[b]]\n",
        [("b", 6, 20)],
    ),
    "a code body on one line": ("x {{< code >}}[[a]]{{< /code >}} [[b]]\n", [("b", 4, 34)]),
    "a shortcode that is not code keeps its body": (
        "{{< tabs >}}\n[[a]]\n{{< /tabs >}}\n",
        [("a", 5, 1)],
    ),
    "a closer of another name closes nothing": (
        "{{< code >}}\n[[a]]\n{{< /code-toggle >}}\n[[b]]\n{{< /code >}}\n[[c]]\n",
        [("c", 9, 1)],
    ),
    "a code shortcode closed by itself has no body": (
        '{{< code file="x.toml" />}}\n[[a]]\n',
        [("a", 5, 1)],
    ),
    "a code shortcode never closed has no body": (
        "{{< highlight go >}}\n[[a]]\n",
        [("a", 5, 1)],
    ),
    "an opening never closed is text": ('{{< ref "x" [[a]]\n', [("a", 4, 13)]),
    "Hugo's escaped form is skipped and opens nothing": (
        '{{</* ref "[[a]]" */>}}\n{{</* highlight */>}}\n[[b]]\n{{</* /highlight */>}}\n',
        [("b", 6, 1)],
    ),
    "an escaped closer does not close a code body": (
        "{{< highlight >}}\n{{</* /highlight */>}} [[a]]\n{{< /highlight >}} [[b]]\n",
        [("b", 6, 20)],
    ),
    "knowl's directives and Go templates are no shortcodes": (
        "{{ sl:shop_pg.orders.total_revenue.expr }} {{ [[a]] }} {{- [[b]] -}}\n",
        [("a", 4, 47), ("b", 4, 60)],
    ),
    "a shortcode in a fenced block, and a link after it": (
        "```\n{{< ref [[a]] >}}\n```\n[[b]]\n",
        [("b", 7, 1)],
    ),
}


@pytest.mark.parametrize("name", list(LINKS))
def test_links_outside_shortcodes(name: str) -> None:
    body, expected = LINKS[name]
    assert _links(_parse(body)) == expected


def test_the_bodies_of_code_shortcodes_hold_no_heading_suppression_or_block() -> None:
    body = (
        "{{< code-toggle >}}\n"
        "# a TOML comment\n"
        "<!-- knowl: disable-next-line KB103 -->\n"
        "key = 1 ^not-a-block\n"
        "{{< /code-toggle >}}\n"
        "# Title\n"
        "<!-- knowl: disable-next-line KB103 -->\n"
        "[[x]] ^block\n"
    )
    parsed = _parse(body)
    assert [(h.text, h.line) for h in parsed.headings] == [("Title", 9)]
    assert parsed.h1 == "Title"
    assert [(s.codes, s.span.line, s.span.column) for s in parsed.suppressions] == [
        (("KB103",), 10, 1)
    ]
    assert parsed.blocks == ("block",)
    assert _links(parsed) == [("x", 11, 1)]


def test_more_code_shortcodes_by_name() -> None:
    body = "{{< tabs >}}\n[[a]]\n{{< /tabs >}}\n[[b]]\n"
    assert _links(_parse(body)) == [("a", 5, 1), ("b", 7, 1)]
    assert _links(_parse(body, CODE_SHORTCODES | {"tabs"})) == [("b", 7, 1)]


# name: (text, the front matter region)
FRONT_MATTER: dict[str, tuple[str, list[tuple[int, int]]]] = {
    "closed": ("+++\ntitle = 'x'\n+++\nbody\n", [(0, 20)]),
    "trailing spaces and CRLF": ("+++ \r\na = 1\r\n+++\t\r\nbody", [(0, 19)]),
    "at the end of the file": ("+++\na = 1\n+++", [(0, 13)]),
    "never closed": ("+++\na = 1\n", []),
    "not on the first line": ("\n+++\na = 1\n+++\n", []),
    "not three plus signs": ("++++\na = 1\n++++\n", []),
}


@pytest.mark.parametrize("name", list(FRONT_MATTER))
def test_toml_front_matter_region(name: str) -> None:
    text, expected = FRONT_MATTER[name]
    assert front_matter(text) == expected


def test_toml_front_matter_is_no_prose() -> None:
    page = '+++\ntitle = "Trip"\n[[cascade]]\n  banner = "b.png"\n# comment\n+++\n# Trip\n[[x]]\n'
    parsed = _parse(page, fm="")
    assert _links(parsed) == [("x", 8, 1)]
    assert parsed.h1 == "Trip"
    assert parsed.frontmatter == {}  # not read: knowl reads YAML frontmatter only
    # After a YAML block, a `+++` block is text like any other.
    assert _links(_parse("+++\n[[a]]\n+++\n")) == [("a", 5, 1)]


# --- linear time on adversarial input (speed: bench/body_bench.py) ---------------------------

N = 199_000


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{{<" * (N // 3), 0),
        ("{{%" * (N // 3), 0),
        ("{{</*" * (N // 5), 0),
        ("{{<{{%" * (N // 6), 0),
        ("{{</*" * (N // 5) + ">}}", 0),
        ("{{< x " + ">}}" * (N // 3), 1),
        ("{{< highlight >}}[[a]]" * (N // 22), N // 22),
        ("{{< highlight >}}" + "{{</* /highlight */>}}" * (N // 22), N // 22 + 1),
        ("{{< code >}}[[x]]{{< /code >}}" * (N // 30), N // 30),
    ],
    ids=[
        "{{<",
        "{{%",
        "{{</*",
        "both",
        "escaped, then a plain closer",
        "one opening, many closers",
        "unclosed",
        "escaped",
        "closed",
    ],
)
def test_adversarial_shortcodes(body: str, expected: int) -> None:
    assert len(regions(body, CODE_SHORTCODES)) == expected


def test_a_page_of_unclosed_code_shortcodes_keeps_every_link() -> None:
    count = N // 22
    parsed = _parse("{{< highlight >}}[[a]]" * count + "\n")
    assert _links(parsed) == [("a", 4, 18 + 22 * i) for i in range(count)]


# --- in a project --------------------------------------------------------------------------


def _check(root: Path, code: int) -> list[tuple[str, str, int, int]]:
    result = invoke(["check", "--repo", str(root), "--format", "json"], code=code)
    rows = json.loads(result.stdout)["diagnostics"]
    return [(d["code"], d["path"], d["line"], d["column"]) for d in rows]


NO_STALENESS = '[rules]\nKB202 = "off"\n'


def test_code_shortcodes_setting_reparses_cached_pages(project: Callable[..., Project]) -> None:
    page = f"{FM}{{{{< tabs >}}}}\n[[nope]]\n{{{{< /tabs >}}}}\n"
    proj = project({f"{G}/p.md": page, "knowl.toml": NO_STALENESS})
    assert _check(proj.root, 1) == [("KB103", f"{G}/p.md", 5, 1)]
    proj.write({"knowl.toml": NO_STALENESS + '[links]\ncode_shortcodes = ["tabs"]\n'})
    assert _check(proj.root, 0) == []
    proj.write({"knowl.toml": NO_STALENESS})
    assert _check(proj.root, 1) == [("KB103", f"{G}/p.md", 5, 1)]


@pytest.mark.parametrize("value", ['["a b"]', '[""]', "[1]", '"tabs"'])
def test_a_bad_code_shortcodes_is_a_config_error(
    project: Callable[..., Project], value: str
) -> None:
    proj = project({"knowl.toml": f"[links]\ncode_shortcodes = {value}\n"})
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert "links.code_shortcodes" in result.stderr


# --- page bundles --------------------------------------------------------------------------

BUNDLES = {
    f"{G}/index.md": f"{FM}# Home\n\n[[my-trip]] [[posts]] [[index]]\n",
    f"{G}/posts/_index.md": f"{FM}# Posts\n\n[[posts/my-trip]] [[posts/my-trip/index]]\n",
    f"{G}/posts/my-trip/index.md": f"{FM}# My trip\n\n![[photo.png]] [[guide]]\n",
    f"{G}/posts/my-trip/photo.png": "PNG",
    f"{G}/docs/guide/_index.md": f"{FM}# Guide\n\n[[my-trip#My trip]]\n",
    f"{G}/docs/_index.md": f"{FM}# Docs\n",
    "knowl.toml": NO_STALENESS,
}


def _ids(folder: Path) -> dict[str, str]:
    return {r["path"]: r["id"] for r in records(folder)}


def _record_links(folder: Path) -> set[tuple[str, str, Any]]:
    return {
        (r["path"], link["target"], link.get("to")) for r in records(folder) for link in r["links"]
    }


@pytest.mark.parametrize("mode", RESOLUTIONS)
def test_a_bundle_is_named_by_its_folder(project: Callable[..., Project], mode: str) -> None:
    config = NO_STALENESS + f'[links]\nresolution = "{mode}"\n'
    proj = project({**BUNDLES, "knowl.toml": config})
    assert _check(proj.root, 0) == []  # no KB005 for the index pages of different folders
    invoke(["build", "--repo", str(proj.root)])
    folder = current_build(proj.root)
    assert _ids(folder) == {
        f"{G}/index.md": "index",
        f"{G}/posts/_index.md": "posts",
        f"{G}/posts/my-trip/index.md": "my-trip",
        f"{G}/docs/guide/_index.md": "guide",
        f"{G}/docs/_index.md": "docs",
    }
    trip = f"{G}/posts/my-trip/index.md"
    for name in ("my-trip", "posts/my-trip", "posts/my-trip/index", "global:my-trip"):
        shown = json.loads(invoke(["show", name, "--repo", str(proj.root), "--json"]).stdout)
        assert shown["path"] == trip, name
    backlinks = json.loads(invoke(["show", "my-trip", "--repo", str(proj.root), "--json"]).stdout)
    assert sorted(b["path"] for b in backlinks["backlinks"]) == [
        f"{G}/docs/guide/_index.md",
        f"{G}/index.md",
        f"{G}/posts/_index.md",
    ]
    assert {(src, to) for src, _, to in _record_links(folder) if to == trip} == {
        (f"{G}/index.md", trip),
        (f"{G}/posts/_index.md", trip),
        (f"{G}/docs/guide/_index.md", trip),
    }


def test_bundles_of_one_name_in_two_sections_are_kb005(project: Callable[..., Project]) -> None:
    proj = project(
        {
            f"{G}/posts/setup/index.md": f"{FM}# A\n",
            f"{G}/docs/setup/_index.md": f"{FM}# B\n",
            "knowl.toml": NO_STALENESS,
        }
    )
    assert _check(proj.root, 1) == [
        ("KB005", f"{G}/docs/setup/_index.md", 1, 1),
        ("KB005", f"{G}/posts/setup/index.md", 1, 1),
    ]


def test_a_user_bundle_and_the_user_folders_own_index(project: Callable[..., Project]) -> None:
    proj = project(
        {
            "knowledge/user/alice/index.md": f"{FM}# Alice\n\n[[notes]]\n",
            "knowledge/user/alice/notes/index.md": f"{FM}# Notes\n\n[[index]]\n",
            "knowl.toml": NO_STALENESS,
        }
    )
    assert _check(proj.root, 0) == []
    invoke(["build", "--repo", str(proj.root)])
    root = str(proj.root)
    for name, path in (("index", "index.md"), ("notes", "notes/index.md")):
        shown = json.loads(
            invoke(["show", name, "--user", "alice", "--repo", root, "--json"]).stdout
        )
        assert shown["path"] == f"knowledge/user/alice/{path}"


# --- a Hugo documentation site and an MkDocs site ------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures"


def _site(name: str, root: Path) -> Project:
    """The fixture folder `name` as a project in a real git repository."""
    folder = FIXTURES / name
    files: dict[str, str | bytes] = {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
    proj = Project(root).write(files)
    proj.commit(name)
    return proj


PUBLISH_ANYWAY = '[rules.per-path."**"]\nKB001 = "warning"\nKB103 = "warning"\nKB401 = "warning"\n'
HUGO_PAGES = [
    "_index.md",
    "getting-started/_index.md",
    "getting-started/quick-start/index.md",
    "content-management/page-bundles/index.md",
    "content-management/organization/index.md",
    "methods/page/Title.md",
    "methods/site/Title.md",
]
BUNDLE_TARGETS = {
    f"{G}/getting-started/quick-start/index.md",
    f"{G}/content-management/page-bundles/index.md",
    f"{G}/content-management/organization/index.md",
    f"{G}/content-management/_index.md",
}


def test_a_hugo_docs_site_reports_only_its_planted_errors(tmp_path: Path) -> None:
    """Sections with `_index.md`, leaf bundles with their images, TOML, YAML and JSON in
    `code-toggle`, `{{< ref >}}` in Markdown links, escaped shortcodes, Go templates in code,
    a page with TOML front matter, and two `Title.md` of different sections: none is a
    finding. The planted errors are."""
    proj = _site("hugo_docs", tmp_path / "hugo")
    assert _check(proj.root, 1) == [
        ("KB103", f"{G}/_index.md", 7, 1),  # ![Hugo](hugo-logo.png): no such image
        ("KB103", f"{G}/_index.md", 11, 1),  # [..](/installation/linux/): no such page
        ("KB103", f"{G}/about/_index.md", 6, 8),  # [features](features.md)
        ("KB001", f"{G}/about/license.md", 2, 15),  # title: License: Apache 2.0
        ("KB105", f"{G}/content-management/page-bundles/index.md", 24, 12),  # #cascades
        ("KB401", f"{G}/getting-started/configuration.md", 43, 17),  # a token in code-toggle
    ]
    # Published anyway, its bundles are named by their folders and its links lead to them.
    config = (proj.root / "knowl.toml").read_text(encoding="utf-8")
    proj.write({"knowl.toml": config + PUBLISH_ANYWAY})
    invoke(["build", "--repo", str(proj.root)])
    folder = current_build(proj.root)
    ids = _ids(folder)
    assert [ids[f"{G}/{path}"] for path in HUGO_PAGES] == [
        "_index",
        "getting-started",
        "quick-start",
        "page-bundles",
        "organization",
        "Title",
        "Title",
    ]
    assert {(src, to) for src, _, to in _record_links(folder) if to in BUNDLE_TARGETS} == {
        (f"{G}/_index.md", f"{G}/getting-started/quick-start/index.md"),
        (f"{G}/_index.md", f"{G}/content-management/page-bundles/index.md"),
        (f"{G}/getting-started/_index.md", f"{G}/getting-started/quick-start/index.md"),
        (f"{G}/content-management/_index.md", f"{G}/content-management/organization/index.md"),
        (
            f"{G}/content-management/front-matter.md",
            f"{G}/content-management/page-bundles/index.md",
        ),
        (
            f"{G}/content-management/front-matter.md",
            f"{G}/content-management/organization/index.md",
        ),
        (f"{G}/content-management/organization/index.md", f"{G}/content-management/_index.md"),
        (f"{G}/news/_index.md", f"{G}/getting-started/quick-start/index.md"),
    }


def test_an_mkdocs_site_reports_only_its_planted_errors(tmp_path: Path) -> None:
    """An `index.md` per folder (no KB005), admonitions, content tabs, snippets, macros and
    `[x](../other.md#anchor)` links with MkDocs' slugs: the planted errors and nothing else."""
    proj = _site("mkdocs_site", tmp_path / "mkdocs")
    assert _check(proj.root, 1) == [
        ("KB105", f"{G}/user-guide/configuration.md", 11, 9),  # #linking-to-pages
        ("KB103", f"{G}/user-guide/index.md", 11, 3),  # deploying-your-docs.md
        ("KB103", f"{G}/user-guide/writing-your-docs.md", 11, 1),  # ../img/mkdocs.png
    ]
