"""Heading links as Obsidian matches them (issue 22, item 4).

In Obsidian mode the link's heading and the target's headings are both normalised as Obsidian
does (each of ``!"#$%&()*+,.:;<=>?@^`{|}~/[]\\`` a space, runs of spaces one, trimmed) and
compared case-insensitively; exact mode keeps comparing them as written. One page of headings,
one page of links, each link on its own line: the table gives, per mode, the link's KB105 or
none, so every finding's position is asserted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import Project, invoke

G = "knowledge/global"

FUNCTIONS = """\
---
summary: The functions
---
# Functions

## `hasTag()`

## What is a vault?

## Links: [[Home]] and more

## a/b [c] \\\\ d

## Tags & #tags

## Many, spaces

## Setup

### `run()`

A paragraph. ^a_b
A paragraph. ^step-1
"""

# (link, KB105 in obsidian mode, KB105 in exact mode)
TABLE: list[tuple[str, bool, bool]] = [
    ("[[Functions#hasTag]]", False, True),  # the code span's `()` are spaces
    ("[[Functions#hasTag()]]", False, False),
    ("[[Functions#HASTAG]]", False, True),
    ("[[Functions#What is a vault]]", False, True),  # no final `?`
    ("[[Functions#What is a vault?]]", False, False),
    ("[[Functions#Links Home and more]]", False, True),
    ("[[Functions#a b c d]]", False, True),
    ("[[Functions#Tags tags]]", False, True),
    ("[[Functions#Many spaces]]", False, True),
    ("[[Functions#Many,,,  spaces]]", False, True),
    ("[[Functions#Setup#run]]", False, True),  # nested, each level normalised
    ("[[Functions#hasTags]]", True, True),  # a different heading in every mode
    ("[[Functions#has-tag]]", True, True),  # `-` is no separator
    ("[[Functions#Setup#hasTag]]", True, True),  # not within Setup's section
    ("[[Functions#^step-1]]", False, False),
    ("[[Functions#^a_b]]", True, False),  # Obsidian's block ids hold no `_`
]

FIRST_LINK_LINE = 6  # after three lines of frontmatter, `# Home` and a blank line


def _home() -> str:
    links = "\n".join(link for link, _, _ in TABLE)
    return f"---\nsummary: Home\n---\n# Home\n\n{links}\n"


def _findings(root: Path, config: str) -> list[tuple[str, int, int, str]]:
    proj = Project(root).write(
        {
            "knowl.toml": config,
            f"{G}/Functions.md": FUNCTIONS,
            f"{G}/Home.md": _home(),
        }
    )
    proj.commit("vault")
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=0)
    rows = json.loads(result.stdout)["diagnostics"]
    return [
        (d["code"], d["line"], d["column"], d["message"].split(":")[0])
        for d in rows
        if d["code"] not in ("KB202",)
    ]


MODES = {"obsidian": '[links]\nresolution = "obsidian"\n', "exact": ""}


@pytest.mark.parametrize("mode", list(MODES))
def test_heading_links_match_as_the_mode_says(tmp_path: Path, mode: str) -> None:
    expected = [
        ("KB105", FIRST_LINK_LINE + i, 1, link)
        for i, (link, in_obsidian, in_exact) in enumerate(TABLE)
        if (in_obsidian if mode == "obsidian" else in_exact)
    ]
    assert _findings(tmp_path / "vault", MODES[mode]) == expected


def test_the_hint_names_the_heading_as_written(tmp_path: Path) -> None:
    proj = Project(tmp_path / "vault").write(
        {
            "knowl.toml": '[links]\nresolution = "obsidian"\n',
            f"{G}/Functions.md": FUNCTIONS,
            f"{G}/Home.md": "---\nsummary: Home\n---\n[[Functions#hasTagg]]\n",
        }
    )
    proj.commit("vault")
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=0)
    [row] = [d for d in json.loads(result.stdout)["diagnostics"] if d["code"] == "KB105"]
    assert (row["line"], row["column"]) == (4, 1)
    assert row["message"] == "[[Functions#hasTagg]]: page 'Functions' has no heading 'hasTagg'"
    assert row["hint"] == "did you mean 'hasTag()'?"
