"""The review of link checking (issue 22): explicit heading ids, Dendron's label-first links
on the site, Hugo code shortcodes and TOML front matter on the site, aliases that are no
paths, links that leave the project or enter `.git`, users' files from other scopes, and
hints that say only what is true. Each on a real project in a temp folder, each finding at
its exact position."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from knowl_build.core.config import SecurityConfig
from knowl_build.core.config_loader import config_from_mapping
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner
from tests.helpers import Project, invoke

G = "knowledge/global"
P = f"{G}/page.md"
FM = "---\nsummary: s\n---\n"  # a body starts on line 4
OBSIDIAN = {"links": {"resolution": "obsidian"}}
DENDRON = {"links": {"resolution": "dendron"}}


def _findings(
    tmp_path: Path, files: dict[str, str | bytes], config: dict[str, Any] | None = None
) -> list[tuple[str, str, int, int, str, str | None]]:
    project = Project(tmp_path / "p", git=False).write(files)
    cfg = config_from_mapping({"rules": {"KB202": "off"}, **(config or {})}, "test")
    analysis = analyse(project.root, cfg, use_cache=False, today=dt.date(2026, 5, 28))
    return [
        (d.path, d.code, d.line, d.column, d.message, d.hint)
        for d in analysis.diagnostics
        if d.code != "KB009"
    ]


def _codes(
    found: list[tuple[str, str, int, int, str, str | None]],
) -> list[tuple[str, str, int, int]]:
    return [(path, code, line, column) for path, code, line, column, _, _ in found]


# --- 7. hints say only what is true ---------------------------------------------------------

CASE_ONLY = "it differs only in case, and links match case exactly"


def test_a_dendron_link_in_exact_mode_is_not_said_to_differ_only_in_case(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        P: FM + "[[dendron://vault/note]] [[Note]]\n",
        f"{G}/note.md": FM + "# N\n",
    }
    found = _findings(tmp_path, files)
    assert _codes(found) == [(P, "KB103", 4, 1), (P, "KB103", 4, 26)]
    assert [hint for *_, hint in found] == [
        "did you mean 'note'?",
        f"did you mean 'note'? {CASE_ONLY}",
    ]


def test_hints_in_modes_that_ignore_case_never_say_links_match_case(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {P: FM + "[[dendron://v/Note]]\n", f"{G}/note.md": FM + "# N\n"}
    found = _findings(tmp_path / "o", files, OBSIDIAN)
    assert _codes(found) == [(P, "KB103", 4, 1)]
    assert found[0][5] == "did you mean 'note'?"
    files = {P: FM + "[[sub/guide/]]\n", f"{G}/sub/guide/index.md": FM + "# N\n"}
    found = _findings(tmp_path / "d", files, DENDRON)
    assert _codes(found) == [(P, "KB103", 4, 1)]
    assert found[0][5] == "did you mean 'sub/guide'?"


# --- 4. an alias is no file path ------------------------------------------------------------


def test_an_obsidian_alias_never_resolves_a_markdown_path(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        P: FM + "[alias](Nota.md) [name](Note.md) [[Nota]]\n",
        f"{G}/Folder/Note.md": "---\nsummary: s\naliases: [Nota]\n---\n# Note\n",
    }
    found = _findings(tmp_path, files, OBSIDIAN)
    assert _codes(found) == [(P, "KB103", 4, 1)]
    assert found[0][4].startswith("[alias](Nota.md) points at no page or file")


# --- 6. a file under a user's folder is that user's ----------------------------------------

USER_FILES: dict[str, str | bytes] = {
    P: FM + "[userfile](../user/alice/priv.txt) ![[priv.png]] [own](../global/pub.txt)\n",
    f"{G}/pub.txt": "public",
    "knowledge/user/alice/priv.txt": "mine",
    "knowledge/user/alice/img/priv.png": b"\x89PNG",
    "knowledge/user/alice/a.md": FM + "[f](priv.txt) ![[priv.png]]\n",
    "knowledge/user/bob/b.md": FM + "[f](../alice/priv.txt) [g](../../global/pub.txt)\n",
}


def test_a_users_file_is_kb104_from_a_global_page_or_another_users(tmp_path: Path) -> None:
    found = _findings(tmp_path, USER_FILES)
    assert _codes(found) == [
        (P, "KB104", 4, 1),
        (P, "KB104", 4, 36),
        ("knowledge/user/bob/b.md", "KB104", 4, 1),
    ]
    assert found[0][4] == (
        "[userfile](../user/alice/priv.txt) names a file that is not visible from global "
        "scope (knowledge/user/alice/priv.txt)"
    )
    assert found[1][4] == (
        "![[priv.png]] names a file that is not visible from global scope "
        "(knowledge/user/alice/img/priv.png)"
    )


def test_a_users_file_by_its_name_in_obsidian_mode_is_kb104_from_a_global_page(
    tmp_path: Path,
) -> None:
    files = {**USER_FILES, P: FM + "[x](priv.txt)\n"}
    assert _codes(_findings(tmp_path, files, OBSIDIAN)) == [
        (P, "KB104", 4, 1),
        ("knowledge/user/bob/b.md", "KB104", 4, 1),
    ]


# --- 5. a link through a symlink out of the project, a link into .git ------------------------


def test_a_link_through_a_symlink_out_of_the_project_is_kb008(tmp_path: Path) -> None:
    project = Project(tmp_path / "p").write({P: FM + "[sym](etclink/passwd) [r](../../up/x)\n"})
    (project.root / G / "etclink").symlink_to("/etc")
    (project.root / "up").symlink_to("/etc")
    cfg = config_from_mapping({"rules": {"KB202": "off"}}, "test")
    analysis = analyse(project.root, cfg, use_cache=False, today=dt.date(2026, 5, 28))
    found = [(d.path, d.code, d.line, d.column, d.message) for d in analysis.diagnostics]
    assert found == [
        (
            f"{G}/etclink",
            "KB008",
            1,
            1,
            f"symlink '{G}/etclink' points outside the project and is skipped",
        ),
        (P, "KB008", 4, 1, "[sym](etclink/passwd) points outside the project"),
        (P, "KB008", 4, 23, "[r](../../up/x) points outside the project"),
    ]


def test_a_link_into_git_or_knowls_folder_is_kb008_saying_so(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        P: FM + "[git](../../.git/config) [k](../../.knowl/cache/x) [m](../../.git/nothing)\n"
    }
    project = Project(tmp_path / "p").write(files)
    project.commit()
    cfg = config_from_mapping({"rules": {"KB202": "off"}}, "test")
    analysis = analyse(project.root, cfg, use_cache=False, today=dt.date(2026, 5, 28))
    found = [(d.path, d.code, d.line, d.column, d.message) for d in analysis.diagnostics]
    assert found == [
        (
            P,
            "KB008",
            4,
            1,
            "[git](../../.git/config) points into .git/, which is no part of the project's files",
        ),
        (
            P,
            "KB008",
            4,
            26,
            "[k](../../.knowl/cache/x) points into .knowl/, which is no part of the project's "
            "files",
        ),
        (
            P,
            "KB008",
            4,
            52,
            "[m](../../.git/nothing) points into .git/, which is no part of the project's files",
        ),
    ]


# --- 1. explicit heading ids -------------------------------------------------------------


def _site(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    """`knowl build` then `knowl site` on a committed project; the site's folder."""
    project = Project(tmp_path / "p").write(files)
    project.commit()
    invoke(["build", "--repo", str(project.root), "-q", "--allow-errors"])
    out = tmp_path / "site"
    invoke(["site", "--repo", str(project.root), "--out", str(out), "-q"])
    return out


IDS: dict[str, str | bytes] = {
    f"{G}/t.md": FM + "# T\n\n## Links { #custom-links }\n\n## Other {: #o .wide }\n\n"
    "## Set {a, b}\n",
    P: FM + "[a](t.md#custom-links) [k](t.md#links) [[t#Links]] [o](t.md#o) [[t#Other]]\n"
    "[s](t.md#set-a-b)\n",
}


def test_an_explicit_heading_id_replaces_its_slug(tmp_path: Path) -> None:
    found = _findings(tmp_path, IDS)
    assert _codes(found) == [(P, "KB105", 4, 24)]
    assert found[0][4] == "[k](t.md#links): page 't.md' has no heading '#links'"


def test_an_explicit_heading_id_is_no_part_of_its_text(tmp_path: Path) -> None:
    text = IDS[f"{G}/t.md"]
    assert isinstance(text, str)
    parsed = parse_page(text.encode(), SecurityConfig(), SecretScanner())
    assert [(h.text, h.anchor) for h in parsed.headings] == [
        ("T", None),
        ("Links", "custom-links"),
        ("Other", "o"),
        ("Set {a, b}", None),
    ]


def test_the_site_anchors_a_heading_by_its_explicit_id_and_shows_its_text(tmp_path: Path) -> None:
    out = _site(tmp_path, IDS)
    html = (out / "pages" / "t.html").read_text()
    assert '<h3 id="o"><span id="other"></span>Other</h3>' in html
    assert "#custom-links }" not in html and "{: #o" not in html
    page_html = (out / "pages" / "page.html").read_text()
    assert 'href="../pages/t.html#custom-links"' in page_html
    # `[[t#Links]]` names the heading by its text: the heading has that anchor too.
    assert 'href="../pages/t.html#links"' in page_html
    assert '<h3 id="custom-links"><span id="links"></span>Links</h3>' in html


# --- 2. Dendron's [[label|note]] on the site ------------------------------------------------


def test_the_site_reads_dendrons_links_label_first(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "knowl.toml": '[links]\nresolution = "dendron"\n',
        f"{G}/a.b.md": FM + "# A B\n\nThe note.\n",
        P: FM + "# Page\n\nSee [[the label|a.b]] and [[a.b]] here.\n",
    }
    out = _site(tmp_path, files)
    html = (out / "pages" / "page.html").read_text()
    assert '<a class="wikilink" href="../pages/a.b.html">the label</a>' in html
    assert '<a class="wikilink" href="../pages/a.b.html">a.b</a>' in html
    assert "unresolved" not in html
    target = (out / "pages" / "a.b.html").read_text()
    # The backlinks' mentions show the label, for the link and the links around it.
    assert "<p>See <mark>the label</mark> and a.b here.</p>" in target
    assert "<p>See the label and <mark>a.b</mark> here.</p>" in target


def test_outside_dendron_mode_the_site_reads_links_target_first(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        f"{G}/a.b.md": FM + "# A B\n",
        P: FM + "# Page\n\nSee [[a.b|the label]].\n",
    }
    html = (_site(tmp_path, files) / "pages" / "page.html").read_text()
    assert '<a class="wikilink" href="../pages/a.b.html">the label</a>' in html


# --- 3. Hugo's code shortcodes and TOML front matter on the site ----------------------------

HUGO: dict[str, str | bytes] = {
    f"{G}/guide/_index.md": '+++\ntitle = "Guide"\n# comment heading?\n[[cascade]]\n+++\n'
    "# Guide\n\nIntro.\n\n## Setup\n\nText.\n",
    P: FM + '# Page\n\n{{< code-toggle file="hugo" >}}\n# not a heading\n[[menus.main]]\n'
    "[link](nothing.md)\n{{< /code-toggle >}}\n\n"
    'See {{< ref "[x](gone.md)" >}} and [setup](guide/_index.md#setup).\n\n## After\n',
}


def test_the_checker_reads_no_link_or_heading_in_hugos_regions(tmp_path: Path) -> None:
    found = _findings(tmp_path, HUGO)
    assert [f for f in _codes(found) if f[1] in ("KB103", "KB105")] == []


def test_the_site_renders_hugos_regions_as_the_checker_reads_them(tmp_path: Path) -> None:
    out = _site(tmp_path, HUGO)
    html = (out / "pages" / "page.html").read_text()
    assert "<pre><code># not a heading\n[[menus.main]]\n[link](nothing.md)\n</code></pre>" in html
    assert "not a heading</h" not in html
    assert "menus.main</span>" not in html and "link-omitted" not in html
    assert "{{&lt; code-toggle file=&quot;hugo&quot; &gt;}}" in html
    assert "{{&lt; /code-toggle &gt;}}" in html
    assert "See {{&lt; ref &quot;[x](gone.md)&quot; &gt;}} and" in html
    assert '<h3 id="after">After</h3>' in html
    assert 'href="../pages/guide.html#setup"' in html
    guide = (out / "pages" / "guide.html").read_text()
    assert "comment heading" not in guide and "cascade" not in guide
    assert '<h3 id="setup">Setup</h3>' in guide
    assert 'id="guide-1"' not in guide
