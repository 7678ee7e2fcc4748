"""An Obsidian vault in both link resolution modes (issue 13).

One vault, built in a real git repository, exercises every rule of Obsidian's resolution:
case, names shared by pages in different folders (with and without a tie), path-qualified
names, nested heading links, block references, aliases, `\\|` in tables, and the frontmatter
keys Obsidian owns. Each mode's findings are asserted exactly, and the graph, backlinks,
`traverse` and each record's `to` are compared with what the checker resolved.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knowl_build.artifacts.publication import current_folder
from tests.helpers import Project, invoke, records

G = "knowledge/global"

VAULT = {
    f"{G}/Home.md": """\
---
summary: Start here
aliases: [Start]
cssclasses: [wide]
permalink: home
---
# Home

Revenue, in any case: [[revenue]] and [[REVENUE|the total]].
By alias: [[RevRec]].
Qualified: [[Obsidian Sync/Security and privacy]] and [[publish/security and privacy]].
Shortest path wins: [[Security and privacy]].
A tie: [[Setup]].
Nested: [[Guide#Install#Linux]] and [[Guide#Usage#Linux]].
Blocks: [[Guide#^step-one]] and [[Guide#^missing]].

| page | why |
|---|---|
| [[revenue\\|Rev]] | the table form |
""",
    f"{G}/Finance/Revenue.md": """\
---
summary: What revenue means
aliases: RevRec
---
# Revenue

See [[Home]].
""",
    f"{G}/Guide.md": """\
---
summary: The guide
---
# Guide

## Install

### Linux

Run the installer. ^step-one

## Usage

Use it.
""",
    f"{G}/Obsidian Sync/Security and privacy.md": "---\nsummary: Sync security\n---\n# Sync\n",
    f"{G}/Publish/Security and privacy.md": "---\nsummary: Publish security\n---\n# Publish\n",
    f"{G}/Alpha/Setup.md": "---\nsummary: Alpha setup\n---\n# Alpha setup\n",
    f"{G}/Bravo/Setup.md": "---\nsummary: Bravo setup\n---\n# Bravo setup\n",
}

# Findings may not be errors for the exact-mode build to publish; the counts are asserted
# from `knowl check` before.
PUBLISH_ANYWAY = '[rules]\nKB005 = "warning"\nKB103 = "warning"\n'


def _vault(root: Path, config: str) -> Project:
    proj = Project(root).write({**VAULT, "knowl.toml": config})
    proj.commit("vault")
    return proj


def _check(proj: Project, code: int) -> list[tuple[str, str, int, int, str]]:
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=code)
    rows = json.loads(result.stdout)["diagnostics"]
    return sorted(
        (d["code"], d["path"].rsplit("/", 1)[-1], d["line"], d["column"], d["message"])
        for d in rows
        if d["code"] != "KB202"
    )


def _artifact(proj: Project) -> Path:
    invoke(["build", "--repo", str(proj.root)])
    folder = current_folder(proj.root / ".knowl" / "build")
    assert folder is not None
    return folder


def _records(folder: Path) -> Iterator[dict[str, Any]]:
    yield from records(folder)


def _edges(folder: Path) -> set[tuple[str, str, str]]:
    """(source path, target path, kind) of every page-to-page edge of graph.json."""
    graph = json.loads((folder / "graph.json").read_text(encoding="utf-8"))
    paths = {n["id"]: n["path"] for n in graph["nodes"] if n["type"] == "page"}
    return {
        (paths[e["source"]], paths[e["target"]], kind)
        for e in graph["edges"]
        if e["source"] in paths and e["target"] in paths
        for kind in e["kinds"]
    }


def _resolved(folder: Path) -> set[tuple[str, str, str]]:
    """The same, from the records: each ref and link's `to`, as the checker resolved it."""
    out = set()
    for record in _records(folder):
        for link in record["links"]:
            to = link.get("to")
            if to is not None and to != record["path"]:
                kind = "ref" if link["kind"] == "ref" else "link"
                out.add((record["path"], to, kind))
    return out


# --- obsidian ----------------------------------------------------------------------------


def test_obsidian_mode_resolves_as_obsidian_does(tmp_path: Path) -> None:
    proj = _vault(tmp_path / "vault", '[links]\nresolution = "obsidian"\n')
    assert _check(proj, 0) == [
        (
            "KB105",
            "Home.md",
            14,
            37,
            "[[Guide#Usage#Linux]]: page 'Guide' has no heading 'Usage#Linux'",
        ),
        ("KB105", "Home.md", 15, 33, "[[Guide#^missing]]: page 'Guide' has no block '^missing'"),
        (
            "KB108",
            "Home.md",
            13,
            8,
            "[[Setup]] fits several pages: it resolves to knowledge/global/Alpha/Setup.md, "
            "not knowledge/global/Bravo/Setup.md",
        ),
    ]
    folder = _artifact(proj)
    home = f"{G}/Home.md"
    revenue = f"{G}/Finance/Revenue.md"
    links = {
        (link["target"], link["heading"]): link.get("to")
        for record in _records(folder)
        if record["path"] == home
        for link in record["links"]
    }
    assert links == {
        ("revenue", None): revenue,
        ("REVENUE", None): revenue,
        ("RevRec", None): revenue,
        ("Obsidian Sync/Security and privacy", None): f"{G}/Obsidian Sync/Security and privacy.md",
        ("publish/security and privacy", None): f"{G}/Publish/Security and privacy.md",
        # "Publish/…" is shorter than "Obsidian Sync/…": no tie, no warning.
        ("Security and privacy", None): f"{G}/Publish/Security and privacy.md",
        ("Setup", None): f"{G}/Alpha/Setup.md",
        ("Guide", "Install#Linux"): f"{G}/Guide.md",
        ("Guide", "Usage#Linux"): f"{G}/Guide.md",
        ("Guide", "^step-one"): f"{G}/Guide.md",
        ("Guide", "^missing"): f"{G}/Guide.md",
    }
    # The graph holds exactly the edges the checker resolved, and nothing else.
    assert _edges(folder) == _resolved(folder)
    assert (home, f"{G}/Bravo/Setup.md", "link") not in _edges(folder)


def test_pages_sharing_a_name_are_told_apart_by_path(tmp_path: Path) -> None:
    proj = _vault(tmp_path / "vault", '[links]\nresolution = "obsidian"\n')
    folder = _artifact(proj)
    graph = json.loads((folder / "graph.json").read_text(encoding="utf-8"))
    nodes = {n["id"] for n in graph["nodes"] if n["type"] == "page"}
    # Two pages named Setup: each a node of its own, named by its path; unique ids keep theirs.
    assert {"page:global:Alpha/Setup", "page:global:Bravo/Setup", "page:global:Home"} <= nodes
    assert "page:global:Setup" not in nodes
    # Backlinks and traverse follow the resolved link: Home links Alpha/Setup, not Bravo/Setup.
    show = json.loads(invoke(["show", "Alpha/Setup", "--repo", str(proj.root), "--json"]).stdout)
    assert [(b["path"], b["kind"]) for b in show["backlinks"]] == [(f"{G}/Home.md", "link")]
    other = json.loads(invoke(["show", "Bravo/Setup", "--repo", str(proj.root), "--json"]).stdout)
    assert other["backlinks"] == []
    show = json.loads(invoke(["show", "Guide", "--repo", str(proj.root), "--json"]).stdout)
    assert [b["path"] for b in show["backlinks"]] == [f"{G}/Home.md"]
    walk = json.loads(
        invoke(["traverse", "Home", "--repo", str(proj.root), "--depth", "1", "--json"]).stdout
    )
    reached = {p["page"] for p in walk["pages"]}
    assert {"Revenue", "Guide", "Setup", "Security and privacy"} <= reached


def test_obsidian_keys_and_allowed_keys_are_not_kb006(tmp_path: Path) -> None:
    exact = _vault(tmp_path / "exact", PUBLISH_ANYWAY)
    kb006 = [f for f in _check(exact, 0) if f[0] == "KB006"]
    assert [(f[1], f[4]) for f in kb006] == [
        ("Home.md", "'aliases' is not a known frontmatter key"),
        ("Home.md", "'cssclasses' is not a known frontmatter key"),
        ("Home.md", "'permalink' is not a known frontmatter key"),
        ("Revenue.md", "'aliases' is not a known frontmatter key"),
    ]
    allowed = _vault(
        tmp_path / "allowed", PUBLISH_ANYWAY + '[frontmatter]\nallow = ["cssclasses", "aliases"]\n'
    )
    kb006 = [f for f in _check(allowed, 0) if f[0] == "KB006"]
    assert [f[4] for f in kb006] == ["'permalink' is not a known frontmatter key"]
    # The keys are kept in the artifact all the same.
    folder = _artifact(allowed)
    home = next(r for r in _records(folder) if r["path"] == f"{G}/Home.md")
    assert home["frontmatter"]["cssclasses"] == ["wide"]


# --- exact ---------------------------------------------------------------------------------


def test_exact_mode_keeps_todays_rules(tmp_path: Path) -> None:
    proj = _vault(tmp_path / "vault", "")
    found = _check(proj, 1)
    codes = [(f[0], f[1]) for f in found if f[0] not in ("KB006",)]
    assert codes == [
        ("KB005", "Security and privacy.md"),
        ("KB005", "Security and privacy.md"),
        ("KB005", "Setup.md"),
        ("KB005", "Setup.md"),
        ("KB103", "Home.md"),  # [[revenue]]: no case folding
        ("KB103", "Home.md"),  # [[REVENUE|the total]]
        ("KB103", "Home.md"),  # [[RevRec]]: aliases name nothing
        ("KB103", "Home.md"),  # [[publish/security and privacy]]
        ("KB103", "Home.md"),  # [[revenue\|Rev]] in the table
        # Nested headings resolve heading by heading in every mode.
        ("KB105", "Home.md"),  # [[Guide#Usage#Linux]]
    ]
    messages = {f[4] for f in found if f[0] == "KB103"}
    assert "[[revenue]] points at no page visible from global scope" in messages
    # `#^block` references are Obsidian's: not checked in exact mode.
    assert not any("^missing" in f[4] for f in found)


def test_exact_mode_graph_follows_the_checker(tmp_path: Path) -> None:
    proj = _vault(tmp_path / "vault", PUBLISH_ANYWAY)
    folder = _artifact(proj)
    edges = _edges(folder)
    assert edges == _resolved(folder) | {
        # A name two pages share (KB005) resolves to both, in the graph as in the checker.
        (f"{G}/Home.md", f"{G}/Bravo/Setup.md", "link"),
        (f"{G}/Home.md", f"{G}/Publish/Security and privacy.md", "link"),
    }
    targets = {e[1] for e in edges if e[0] == f"{G}/Home.md"}
    assert f"{G}/Finance/Revenue.md" not in targets  # [[revenue]] was KB103: no edge
    # Unresolved links carry no `to`.
    home = next(r for r in _records(folder) if r["path"] == f"{G}/Home.md")
    assert {link["target"] for link in home["links"] if "to" not in link} == {
        "revenue",
        "REVENUE",
        "RevRec",
        "publish/security and privacy",
    }


def test_switching_modes_rebuilds_the_graph(tmp_path: Path) -> None:
    """The reuse of the previous graph and records keys on the resolution's outcome, so a
    change of mode (or of another page's aliases) is not served from the previous build."""
    proj = _vault(tmp_path / "vault", PUBLISH_ANYWAY)
    exact = _edges(_artifact(proj))
    proj.write({"knowl.toml": '[links]\nresolution = "obsidian"\n'})
    obsidian_folder = _artifact(proj)
    assert _edges(obsidian_folder) == _resolved(obsidian_folder) != exact
    proj.write(
        {
            f"{G}/Guide.md": VAULT[f"{G}/Guide.md"].replace(
                "summary: The guide", "summary: The guide\naliases: [RevRec]"
            )
        }
    )
    folder = _artifact(proj)
    assert _edges(folder) == _resolved(folder)


@pytest.mark.parametrize("value", ['"Obsidian"', "1", '["exact"]'])
def test_a_bad_resolution_is_a_config_error(tmp_path: Path, value: str) -> None:
    proj = _vault(tmp_path / "vault", f"[links]\nresolution = {value}\n")
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert "links.resolution" in result.stderr


def test_an_alias_never_outranks_a_name_and_scopes_still_hold(tmp_path: Path) -> None:
    proj = Project(tmp_path / "vault").write(
        {
            "knowl.toml": '[links]\nresolution = "obsidian"\n',
            f"{G}/Glossary.md": "---\nsummary: Terms\naliases: [Churn]\n---\n# Glossary\n",
            f"{G}/Metrics/churn.md": "---\nsummary: Churn\n---\n# Churn\n\n[[CHURN]] [[notes]]\n",
            "knowledge/user/ann/Notes.md": "---\nsummary: Mine\n---\n# Notes\n\n[[glossary]]\n",
        }
    )
    proj.commit("vault")
    found = _check(proj, 1)
    # A global page may not see a user's page, however its name is written (KB104).
    assert [(f[0], f[1]) for f in found] == [("KB104", "churn.md")]
    proj.write({f"{G}/Metrics/churn.md": "---\nsummary: Churn\n---\n# Churn\n\n[[CHURN]]\n"})
    folder = _artifact(proj)
    churn = next(r for r in _records(folder) if r["path"].endswith("churn.md"))
    # `churn` is a page's own name: the Glossary's alias does not take it.
    assert [link["to"] for link in churn["links"]] == [f"{G}/Metrics/churn.md"]
    notes = next(r for r in _records(folder) if r["scope"] == "user:ann")
    assert [link["to"] for link in notes["links"]] == [f"{G}/Glossary.md"]


def test_hostile_aliases_name_nothing_they_should_not(tmp_path: Path) -> None:
    """Aliases come from pages anyone writes: odd types are ignored, a `/` never makes a path,
    a user's alias is never a global page's target, and thousands of them stay cheap."""
    many = ", ".join(f"a{i}" for i in range(5000))
    proj = Project(tmp_path / "vault").write(
        {
            "knowl.toml": '[links]\nresolution = "obsidian"\n',
            f"{G}/Home.md": "---\nsummary: Home\n---\n[[Budget]] [[x/Budget]] [[a4999]] [[42]]\n",
            f"{G}/Odd.md": "---\nsummary: Odd\naliases: {x: 1}\n---\nx\n",
            f"{G}/Numbers.md": "---\nsummary: Numbers\naliases: [42, null, '']\n---\nx\n",
            f"{G}/Slash.md": "---\nsummary: Slash\naliases: [x/Budget]\n---\nx\n",
            f"{G}/Many.md": f"---\nsummary: Many\naliases: [{many}]\n---\nx\n",
            "knowledge/user/mallory/Trap.md": "---\nsummary: Trap\naliases: [Budget]\n---\nx\n",
        }
    )
    proj.commit("vault")
    found = _check(proj, 1)
    broken = sorted(f[4].split(" ")[0] for f in found if f[0] == "KB103")
    assert broken == ["[[42]]", "[[x/Budget]]"]
    # The user's alias is a page the global one may not see, as with an id (KB104): never the
    # link's target.
    hidden = [f[4].split(" ")[0] for f in found if f[0] == "KB104"]
    assert hidden == ["[[Budget]]"]
    assert not [f for f in found if f[0] == "KB108"]
