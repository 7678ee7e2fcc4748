"""Case-exact publishing (issue 22, item 5): `[links] case_only` reports, as KB109, a link that
names its page only when case is ignored; exact resolution keeps its strictness, and its
KB103 says the name differs only in case.

One vault in a real git repository, checked under every setting with each finding's exact
position and severity.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowl_build.artifacts.publication import current_folder
from tests.helpers import Project, invoke, records

G = "knowledge/global"
FM = "---\nsummary: s\n---\n"

VAULT = {
    f"{G}/Finance/Revenue.md": "---\nsummary: r\naliases: [RevRec]\n---\n# Revenue\n",
    f"{G}/Guide.md": f"{FM}# Guide\n",
    f"{G}/Straße.md": f"{FM}# Straße\n",
    f"{G}/Posts/My Trip/index.md": f"{FM}# Trip\n",
    f"{G}/Home.md": (
        "---\nsummary: home\nrefs: [revenue]\n---\n"  # a ref: never KB109
        "[[Revenue]] [[RevRec]] [[Finance/Revenue]] [[Revenue#REVENUE]]\n"  # line 5: exact
        "[[revenue]] [[revrec]] [[finance/revenue]]\n"  # line 6
        "![[guide]] [[strasse]] [[my trip]] [[posts/my trip/INDEX]]\n"  # line 7
        "<!-- knowl: disable-next-line KB109 -->\n"
        "[[GUIDE]]\n"  # line 9: suppressed
        "[rev](revenue.md) [guide](Guide.md) [rev](Finance/Revenue.md)\n"  # line 10: Markdown
    ),
}

# (line, column) of each link that matches only when case is ignored, in order.
CASE_ONLY = [(6, 1), (6, 13), (6, 24), (7, 1), (7, 12), (7, 24), (7, 36), (10, 1)]


def _vault(root: Path, config: str) -> Project:
    proj = Project(root).write({**VAULT, "knowl.toml": '[rules]\nKB202 = "off"\n' + config})
    proj.commit("vault")
    return proj


def _check(proj: Project, code: int) -> list[tuple[str, str, int, int]]:
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=code)
    rows = json.loads(result.stdout)["diagnostics"]
    return [(d["code"], d["severity"], d["line"], d["column"]) for d in rows]


OBSIDIAN = '[links]\nresolution = "obsidian"\n'
REMOVE = "remove the comment (the finding it silenced is gone, or the code or line is wrong)"


@pytest.mark.parametrize(
    ("setting", "code", "expected"),
    [
        ("", 0, []),
        ('case_only = "ignore"\n', 0, []),
        ('case_only = "warning"\n', 0, [("KB109", "warning", *at) for at in CASE_ONLY]),
        ('case_only = "error"\n', 1, [("KB109", "error", *at) for at in CASE_ONLY]),
    ],
    ids=["default", "ignore", "warning", "error"],
)
def test_case_only_in_obsidian_mode(
    tmp_path: Path, setting: str, code: int, expected: list[tuple[str, str, int, int]]
) -> None:
    proj = _vault(tmp_path / "v", OBSIDIAN + setting)
    assert _check(proj, code) == expected


def test_kb109_names_the_page_and_its_spelling(tmp_path: Path) -> None:
    proj = _vault(tmp_path / "v", OBSIDIAN + 'case_only = "warning"\n')
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    rows = json.loads(result.stdout)["diagnostics"]
    assert [(r["message"], r["hint"]) for r in rows[:3]] == [
        (
            "[[revenue]] names knowledge/global/Finance/Revenue.md only when case is ignored; "
            "a case-exact host (Quartz, most static sites) publishes it as a broken link",
            "write it as 'Revenue'",
        ),
        (
            "[[revrec]] names knowledge/global/Finance/Revenue.md only when case is ignored; "
            "a case-exact host (Quartz, most static sites) publishes it as a broken link",
            "write it as 'Revenue'",
        ),
        (
            "[[finance/revenue]] names knowledge/global/Finance/Revenue.md only when case is "
            "ignored; a case-exact host (Quartz, most static sites) publishes it as a broken "
            "link",
            "write it as 'Finance/Revenue'",
        ),
    ]
    # A Markdown link Obsidian resolves by its file name: the path to write.
    assert (rows[-1]["line"], rows[-1]["hint"]) == (10, "write it as 'Finance/Revenue.md'")


def test_the_rules_table_wins_over_case_only(tmp_path: Path) -> None:
    config = (
        '[rules.per-path."knowledge/global/Home.md"]\nKB109 = "info"\n'
        + OBSIDIAN
        + 'case_only = "error"\n'
    )
    proj = _vault(tmp_path / "a", config)
    assert _check(proj, 0) == [("KB109", "info", *at) for at in CASE_ONLY]
    on = _vault(tmp_path / "b", 'KB109 = "warning"\n' + OBSIDIAN)  # [rules], case_only unset
    assert _check(on, 0) == [("KB109", "warning", *at) for at in CASE_ONLY]


def test_a_case_only_link_still_resolves(tmp_path: Path) -> None:
    proj = _vault(tmp_path / "v", OBSIDIAN + 'case_only = "warning"\n')
    invoke(["build", "--repo", str(proj.root)])
    folder = current_folder(proj.root / ".knowl" / "build")
    assert folder is not None
    home = next(r for r in records(folder) if r["path"] == f"{G}/Home.md")
    to = {link["target"]: link.get("to") for link in home["links"]}
    assert to["revenue"] == to["Revenue"] == f"{G}/Finance/Revenue.md"
    assert to["my trip"] == f"{G}/Posts/My Trip/index.md"
    assert to["strasse"] == f"{G}/Straße.md"


def test_exact_mode_keeps_its_strictness_and_says_why(tmp_path: Path) -> None:
    proj = _vault(tmp_path / "v", '[links]\ncase_only = "warning"\n')
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    rows = json.loads(result.stdout)["diagnostics"]
    found = [(r["code"], r["line"], r["column"], r["hint"]) for r in rows]
    differs = "it differs only in case, and links match case exactly"
    assert found == [
        ("KB006", 3, 1, None),  # `aliases` is Obsidian's key
        ("KB102", 3, 8, f"did you mean 'Revenue'? {differs}"),
        # Line 5 is written with each page's case: it resolves; headings ignore case.
        ("KB103", 5, 13, None),  # [[RevRec]]: aliases name nothing in exact mode
        ("KB103", 6, 1, f"did you mean 'Revenue'? {differs}"),
        ("KB103", 6, 13, None),
        ("KB103", 6, 24, f"did you mean 'Finance/Revenue'? {differs}"),
        ("KB103", 7, 1, f"did you mean 'Guide'? {differs}"),
        ("KB103", 7, 12, f"did you mean 'Straße'? {differs}"),  # casefold: ß is ss
        ("KB103", 7, 24, f"did you mean 'My Trip'? {differs}"),
        ("KB103", 7, 36, f"did you mean 'Posts/My Trip/index'? {differs}"),
        ("KB011", 8, 1, REMOVE),  # the KB109 suppression hides nothing: no KB109 here
        ("KB103", 9, 1, f"did you mean 'Guide'? {differs}"),
        # A Markdown link is a path: the file of that name elsewhere (rules/mdlinks.py).
        ("KB103", 10, 1, "did you mean 'Finance/Revenue.md'?"),
    ]


@pytest.mark.parametrize("value", ['"warn"', '"off"', "true"])
def test_a_bad_case_only_is_a_config_error(tmp_path: Path, value: str) -> None:
    proj = Project(tmp_path / "p").write({"knowl.toml": f"[links]\ncase_only = {value}\n"})
    result = invoke(["check", "--repo", str(proj.root)], code=2)
    assert "'links.case_only'" in result.stderr
    if value == '"warn"':
        assert "did you mean 'warning'?" in result.stderr


def test_the_rule_table_shows_kb109_off_until_asked(tmp_path: Path) -> None:
    proj = Project(tmp_path / "p", git=False)
    row = next(
        line
        for line in invoke(["rules", "--repo", str(proj.root)]).stdout.splitlines()
        if "KB109" in line
    )
    assert row.split()[:4] == ["KB109", "case-only-link", "warning", "off"]
    proj.write({"knowl.toml": '[links]\ncase_only = "error"\n'})
    row = next(
        line
        for line in invoke(["rules", "--repo", str(proj.root)]).stdout.splitlines()
        if "KB109" in line
    )
    assert row.split()[:4] == ["KB109", "case-only-link", "warning", "error"]
