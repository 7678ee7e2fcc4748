"""`knowl fix` rewrites links to moved pages and files so that they still parse, in their own
form (issue 22, item 1): on real git repositories, a `git mv` and a commit, then
`knowl fix --apply`, the exact bytes written, and `knowl check` finding every link resolved.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from knowl_build.core.config_loader import config_from_mapping
from knowl_build.pipeline.analysis import analyse
from knowl_build.writes.relink import destination
from tests.helpers import Project, invoke

G = "knowledge/global"
FM = "---\nsummary: s\n---\n"
OBSIDIAN = '[links]\nresolution = "obsidian"\n'
DENDRON = '[links]\nresolution = "dendron"\n'


def moved(
    tmp_path: Path, files: dict[str, str | bytes], moves: list[tuple[str, str]], config: str = ""
) -> Project:
    """A project with `files` committed, then each move made with `git mv` and committed."""
    project = Project(tmp_path / "p").write(
        {**files, "knowl.toml": '[rules]\nKB202 = "off"\n' + config}
    )
    project.commit()
    for old, new in moves:
        (project.root / new).parent.mkdir(parents=True, exist_ok=True)
        project.run_git("mv", old, new)
    project.commit("move")
    return project


def fixed(project: Project, path: str) -> str:
    """The page at `path` after `knowl fix --apply`, and `knowl check` clean."""
    invoke(["fix", "--repo", str(project.root), "--apply"])
    check = json.loads(invoke(["check", "--repo", str(project.root), "--format", "json"]).stdout)
    assert check["diagnostics"] == []
    return (project.root / path).read_text()


def resolved(project: Project, path: str) -> list[str]:
    """Where each link of the page at `path` leads: a page's path, or `file`."""
    data = tomllib.loads((project.root / "knowl.toml").read_text())
    analysis = analyse(project.root, config_from_mapping(data, "knowl.toml"), use_cache=False)
    page = next(p for p in analysis.pages if p.path == path)
    found = []
    for link in page.parsed.links:
        resolution = analysis.index.resolve_link(page, link)
        found.append("file" if resolution.file else ",".join(p.path for p in resolution.pages))
    return found


# --- defect 1: the new path parses in the link's form -----------------------------------------


def test_a_plain_destination_is_encoded_where_the_name_would_break_it(tmp_path: Path) -> None:
    body = (
        '[t](../a/t.md "title") and [multi\nline](../a/t.md)\n\n'
        "| a | b |\n|---|---|\n| [c](../a/t.md) | x |\n\n"
        "[dup](../a/t.md)[dup2](../a/t.md) and [angle](<../a/t.md>)\n"
    )
    project = moved(
        tmp_path,
        {f"{G}/b/src.md": FM + body, f"{G}/a/t.md": FM + "# T\n"},
        [(f"{G}/a/t.md", f"{G}/a/t (new.md")],
    )
    assert fixed(project, f"{G}/b/src.md") == FM + (
        '[t](../a/t%20%28new.md "title") and [multi\nline](../a/t%20%28new.md)\n\n'
        "| a | b |\n|---|---|\n| [c](../a/t%20%28new.md) | x |\n\n"
        "[dup](../a/t%20%28new.md)[dup2](../a/t%20%28new.md) and [angle](<../a/t (new.md>)\n"
    )
    assert resolved(project, f"{G}/b/src.md") == [f"{G}/a/t (new.md"] * 6


def test_a_name_of_every_special_character_parses_in_both_forms(tmp_path: Path) -> None:
    name = "t <x> #1 &amp; %41 |?\\ (y).md"
    project = moved(
        tmp_path,
        {
            f"{G}/src.md": FM + "[p](a/t.md#top) [a](<a/t.md>) [r][d]\n\n[d]: a/t.md\n",
            f"{G}/a/t.md": FM + "# Top\n",
        },
        [(f"{G}/a/t.md", f"{G}/a/{name}")],
    )
    plain = "a/t%20%3Cx%3E%20%231%20%26amp;%20%2541%20%7C%3F%5C%20%28y%29.md"
    assert fixed(project, f"{G}/src.md") == FM + (
        f"[p]({plain}#top) [a](<a/t \\<x\\> %231 %26amp; %2541 %7C%3F\\\\ (y).md>) [r][d]\n\n"
        f"[d]: {plain}\n"
    )
    assert resolved(project, f"{G}/src.md") == [f"{G}/a/{name}"] * 3


@pytest.mark.parametrize(
    "written, path, expected",
    [
        ("t.md", "t (new.md", "t%20%28new.md"),
        ("<t.md>", "t <new>.md", "<t \\<new\\>.md>"),
        ("t.md#a&#32;b", "u\nv.md", "u%0Av.md#a&#32;b"),
        ("<t.md>", "u\nv.md", "<u%0Av.md>"),
        ("my&#32;page.md#x", "new page.md", "new%20page.md#x"),
        ("a\\#b.md#c", "d.md", "d.md\\#b.md#c"),  # `\#` is where the fragment starts
        ("t.md?v=1#x", "u.md", "u.md?v=1#x"),
        ("caf%C3%A9.md", "thé.md", "th%C3%A9.md"),
        ("p%281%29.md", "p(2).md", "p%282%29.md"),
        ("./t.md", "../u.md", "./../u.md"),
    ],
)
def test_a_destination_is_rewritten_to_read_back_as_the_path(
    written: str, path: str, expected: str
) -> None:
    assert destination(written, path)[0] == expected


# --- defect 2: the destination's span as written ------------------------------------------------


def test_a_character_reference_is_replaced_with_the_path(tmp_path: Path) -> None:
    project = moved(
        tmp_path,
        {
            f"{G}/src.md": FM + "[ampersand](guide/my&#32;page.md) [h](guide/my&#32;page.md#top)\n",
            f"{G}/guide/my page.md": FM + "# Top\n",
        },
        [(f"{G}/guide/my page.md", f"{G}/ref/new page.md")],
    )
    assert fixed(project, f"{G}/src.md") == FM + (
        "[ampersand](ref/new%20page.md) [h](ref/new%20page.md#top)\n"
    )
    assert resolved(project, f"{G}/src.md") == [f"{G}/ref/new page.md"] * 2


# --- defect 3: Obsidian's links by file name, Dendron's forms ---------------------------------

NOTE = FM + "# Note\n\n## Some Heading\n\nA block ^blk1\n"
VAULT_LINKS = (
    "[n](Note.md) [n2](Folder/Note.md) [n3](Note.md#Some%20Heading) [blk](Note.md#^blk1) "
    "[x](Note) [[Note]] [pdf](My%20File.pdf)\n"
)


def test_obsidian_links_by_file_name_stay_by_file_name(tmp_path: Path) -> None:
    project = moved(
        tmp_path,
        {
            f"{G}/Sub/Home.md": FM + VAULT_LINKS,
            f"{G}/Folder/Note.md": NOTE,
            f"{G}/Files/My File.pdf": b"%PDF-1.4",
        },
        [
            (f"{G}/Folder/Note.md", f"{G}/Folder/Renamed.md"),
            (f"{G}/Files/My File.pdf", f"{G}/Attachments/Our File.pdf"),
        ],
        OBSIDIAN,
    )
    assert fixed(project, f"{G}/Sub/Home.md") == FM + (
        "[n](Renamed.md) [n2](Folder/Renamed.md) [n3](Renamed.md#Some%20Heading) "
        "[blk](Renamed.md#^blk1) [x](Renamed) [[Renamed]] [pdf](Our%20File.pdf)\n"
    )
    assert resolved(project, f"{G}/Sub/Home.md") == [f"{G}/Folder/Renamed.md"] * 6 + ["file"]


def test_obsidian_a_shared_new_name_takes_the_shortest_path_that_names_it(
    tmp_path: Path,
) -> None:
    project = moved(
        tmp_path,
        {
            f"{G}/Sub/Home.md": FM + VAULT_LINKS.replace(" [pdf](My%20File.pdf)", ""),
            f"{G}/Folder/Note.md": NOTE,
            f"{G}/Other/Renamed.md": FM + "# Other\n",
        },
        [(f"{G}/Folder/Note.md", f"{G}/Folder/Renamed.md")],
        OBSIDIAN,
    )
    assert fixed(project, f"{G}/Sub/Home.md") == FM + (
        "[n](Folder/Renamed.md) [n2](Folder/Renamed.md) [n3](Folder/Renamed.md#Some%20Heading) "
        "[blk](Folder/Renamed.md#^blk1) [x](Folder/Renamed) [[Folder/Renamed]]\n"
    )
    assert resolved(project, f"{G}/Sub/Home.md") == [f"{G}/Folder/Renamed.md"] * 6


def test_dendron_links_keep_their_vault_and_their_label(tmp_path: Path) -> None:
    project = moved(
        tmp_path,
        {
            f"{G}/root.md": "---\nid: root\ntitle: root\n---\n"
            "[[dendron://vault/a.b]] [[dendron://vault/a.b#header-22]] [[a.b|a.b]] [[label|a.b]] [[a.b]]\n",
            f"{G}/a.b.md": "---\nid: ab\ntitle: a.b\n---\n# A\n\n## Header 2.2\n",
        },
        [(f"{G}/a.b.md", f"{G}/a.c.md")],
        DENDRON,
    )
    assert fixed(project, f"{G}/root.md") == (
        "---\nid: root\ntitle: root\n---\n"
        "[[dendron://vault/a.c]] [[dendron://vault/a.c#header-22]] [[a.b|a.c]] [[label|a.c]] [[a.c]]\n"
    )
    assert resolved(project, f"{G}/root.md") == [f"{G}/a.c.md"] * 5


# --- defect 4: the style of the destination -----------------------------------------------------


def test_a_leading_dot_slash_and_the_encoding_stay(tmp_path: Path) -> None:
    project = moved(
        tmp_path,
        {
            f"{G}/b/src.md": FM + "[h](./../a/t.md#head) [p](p%281%29.md) [c](caf%C3%A9.md)\n",
            f"{G}/a/t.md": FM + "# T\n\n## Head\n",
            f"{G}/b/p(1).md": FM + "# P\n",
            f"{G}/b/café.md": FM + "# C\n",
        },
        [
            (f"{G}/a/t.md", f"{G}/a/t2.md"),
            (f"{G}/b/p(1).md", f"{G}/b/p(2).md"),
            (f"{G}/b/café.md", f"{G}/b/thé.md"),
        ],
    )
    assert fixed(project, f"{G}/b/src.md") == FM + (
        "[h](./../a/t2.md#head) [p](p%282%29.md) [c](th%C3%A9.md)\n"
    )
    assert resolved(project, f"{G}/b/src.md") == [f"{G}/a/t2.md", f"{G}/b/p(2).md", f"{G}/b/thé.md"]


# --- what no form can say is refused, never written broken ---------------------------------------


def test_a_rewrite_that_would_not_parse_is_refused_with_a_reason(tmp_path: Path) -> None:
    project = moved(
        tmp_path,
        {f"{G}/src.md": FM + "[m](t.md) and [[t]]\n", f"{G}/t.md": FM + "# T\n"},
        [(f"{G}/t.md", f"{G}/t#2.md")],
    )
    result = invoke(["fix", "--repo", str(project.root), "--apply"])
    assert (
        f"knowl: notice: {G}/src.md:4:15: not relinked: t to t#2 would not read as a link "
        "to t#2; edit it by hand"
    ) in result.stderr
    assert (project.root / G / "src.md").read_text() == FM + "[m](t%232.md) and [[t]]\n"
    check = json.loads(
        invoke(["check", "--repo", str(project.root), "--format", "json"], code=1).stdout
    )
    assert [(d["code"], d["line"], d["column"]) for d in check["diagnostics"]] == [("KB103", 4, 19)]
