"""Inline suppressions and per-path severities (issue 11, point 8), with exact positions."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.helpers import SEMANTICS, Project, invoke

P = "knowledge/global/p.md"
GOOD_FM = '---\nmeta:\n  last_validated_at: "2026-05-01T00:00:00Z"\n---\n'
TOKEN = "ghp_" + "A1b2" * 9

# (page text, expected (code, line, column) list for P, in order)
CASES = {
    "next line hides the code": (
        GOOD_FM + "# P\n\n<!-- knowl: disable-next-line KB103 -->\n[[missing]]\n",
        [],
    ),
    "next line only": (
        GOOD_FM + "# P\n\n<!-- knowl: disable-next-line KB103 -->\n\n[[missing]]\n",
        [("KB011", 7, 1), ("KB103", 9, 1)],
    ),
    "another code": (
        GOOD_FM + "<!-- knowl: disable-next-line KB105 -->\n[[missing]]\n",
        [("KB011", 5, 1), ("KB103", 6, 1)],
    ),
    "several codes and a reason": (
        GOOD_FM + f"<!-- knowl: disable-next-line KB105, KB401 -- a documented fake -->\n{TOKEN}\n",
        [],
    ),
    "no code means every code": (
        GOOD_FM + "<!-- knowl: disable-next-line -->\n[[missing]] and [[also-missing]]\n",
        [],
    ),
    "disable to the end of the file": (
        GOOD_FM + "[[before]]\n<!-- knowl: disable KB103 -->\n[[a]]\n\n[[b]]\n",
        [("KB103", 5, 1)],
    ),
    "a word that is no code hides nothing": (
        GOOD_FM + "<!-- knowl: disable-next-line broken-link -->\n[[missing]]\n",
        [("KB011", 5, 1), ("KB103", 6, 1)],
    ),
    "lowercase codes": (
        GOOD_FM + "<!-- knowl: disable-next-line kb103 -->\n[[missing]]\n",
        [],
    ),
    "a comment shown in code suppresses nothing": (
        GOOD_FM + f"```\n<!-- knowl: disable-next-line KB401 -->\n{TOKEN}\n```\n",
        [("KB401", 7, 1)],
    ),
    "frontmatter next line": (
        "---\n# knowl: disable-next-line KB006\nsl_ref: [x]\nmeta:\n"
        '  last_validated_at: "2026-05-01T00:00:00Z"\n---\n',
        [],
    ),
    "frontmatter disable covers the whole page": (
        "---\n# knowl: disable KB202 -- an archived page\ntitle: Old\n---\n[[missing]]\n",
        [("KB103", 5, 1)],
    ),
    "an unused frontmatter suppression": (
        "---\ntitle: Old  # knowl: disable KB006\nmeta:\n"
        '  last_validated_at: "2026-05-01T00:00:00Z"\n---\n',
        [("KB011", 2, 13)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_suppression_table(project: Callable[..., Project], name: str) -> None:
    text, expected = CASES[name]
    proj = project({**SEMANTICS, P: text})
    failing = any(code in ("KB103", "KB401") for code, _, _ in expected)
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=int(failing))
    found = [
        (d["code"], d["line"], d["column"])
        for d in json.loads(result.stdout)["diagnostics"]
        if d["path"] == P
    ]
    assert found == expected


def test_kb011_names_the_codes_and_can_be_turned_off(project: Callable[..., Project]) -> None:
    page = GOOD_FM + "<!-- knowl: disable-next-line KB105 -->\ntext\n"
    proj = project({**SEMANTICS, P: page})
    out = invoke(["check", "--repo", str(proj.root)]).stdout
    assert "KB011 suppression of KB105 hides no finding" in out
    proj.write({"knowl.toml": "[rules]\nKB011 = 'off'\n"})
    assert "KB011" not in invoke(["check", "--repo", str(proj.root)]).stdout


PER_PATH = """\
[rules]
KB202 = "off"

[rules.per-path]
"knowledge/global/archive/**" = { KB103 = "off", KB202 = "warning" }
"knowledge/**/drafts/*.md" = { KB103 = "warning" }
"knowledge/global/drafts/strict-*.md" = { KB103 = "error" }
"""


def test_per_path_severities(project: Callable[..., Project]) -> None:
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": PER_PATH,
            "knowledge/global/archive/2020/old.md": "[[gone]]\n",
            "knowledge/global/drafts/idea.md": "[[gone]]\n",
            "knowledge/global/drafts/strict-idea.md": "[[gone]]\n",
            "knowledge/global/live.md": "[[gone]]\n",
        }
    )
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    found = sorted(
        (d["path"], d["code"], d["severity"]) for d in json.loads(result.stdout)["diagnostics"]
    )
    assert found == [
        ("knowledge/global/archive/2020/old.md", "KB202", "warning"),
        ("knowledge/global/drafts/idea.md", "KB103", "warning"),
        ("knowledge/global/drafts/strict-idea.md", "KB103", "error"),
        ("knowledge/global/live.md", "KB103", "error"),
    ]


def test_per_path_off_also_drops_the_freshness_reason(project: Callable[..., Project]) -> None:
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": '[rules.per-path]\n"knowledge/global/archive/**" = { KB202 = "off" }\n',
            "knowledge/global/archive/old.md": "# Old\n",
            "knowledge/global/new.md": "# New\n",
        }
    )
    stale = json.loads(invoke(["stale", "--repo", str(proj.root), "--json"], code=1).stdout)
    assert [p["page"] for p in stale["pages"]] == ["new"]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[rules.per-path]\n"x/**" = { KB999 = "off" }\n',
            "'rules.per-path.x/**.KB999': unknown rule code",
        ),
        (
            '[rules.per-path]\n"x/**" = { KB103 = "loud" }\n',
            "'rules.per-path.x/**.KB103': severity must be one of",
        ),
        ('[rules.per-path]\n"x/**" = "off"\n', "'rules.per-path.x/**': expected a table"),
        ("[rules]\nper-path = 1\n", "'rules.per-path': expected a table of globs"),
        ("[rules]\nper_path = {}\n", "did you mean 'per-path'?"),
    ],
)
def test_per_path_configuration_errors(
    project: Callable[..., Project], toml: str, message: str
) -> None:
    proj = project({**SEMANTICS, "knowl.toml": toml})
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert message in result.stderr


def test_rules_shows_per_path_and_suppressions(project: Callable[..., Project]) -> None:
    proj = project({**SEMANTICS, "knowl.toml": PER_PATH})
    out = invoke(["rules", "--repo", str(proj.root)]).stdout
    assert "knowledge/global/archive/**" in out and "KB103 = off, KB202 = warning" in out
    assert "knowl: disable-next-line" in out and "KB011" in out
