"""A number, date or boolean in a field that holds text is the text as written (issue 22, item
8): `title: 0.840` is "0.840" in `knowl check`, the records, `show`, `search` and the site,
as Dendron and Hugo write such titles. What is still no text (a list, a mapping; a number
where a choice is expected) stays KB002, at its exact place. Real git repositories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Project, current_build, invoke, records


@pytest.fixture(autouse=True)
def _pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkeypatch.setenv("KNOWL_EMBEDDINGS", "off")


FILES = {
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/ratio.md": (
        "---\ntitle: 0.840\nsummary: 2024-01-05\ntags: [2024, 0.50, yes]\nrefs: [2024]\n---\n"
        "The churn ratio of the cohort.\n"
    ),
    "knowledge/global/2024.md": (
        "---\ntitle: 2024\nsummary: The year in review\n---\nWhat happened in the year.\n"
    ),
    "knowledge/global/day.md": (
        "---\ntitle: 2024-01-05\nsummary: 2024-01-05 10:30:00\n---\nA daily note, see [[2024]].\n"
    ),
    "knowledge/global/flags.md": (
        "---\ntitle: yes\ncategory: decision\nreasoning: 1e3\nalternatives: [true, 1_000, 0x1F]\n"
        "source: 2024\nconflict:\n  key: 2024\n---\nA decision about flags.\n"
    ),
}
TITLES = {"ratio": "0.840", "2024": "2024", "day": "2024-01-05", "flags": "yes"}


def check(root: Path, code: int = 0) -> list[tuple[str, int, int, str, str]]:
    result = invoke(["check", "--repo", str(root), "--format", "json"], code=code)
    return [
        (d["path"], d["line"], d["column"], d["code"], d["message"])
        for d in json.loads(result.stdout)["diagnostics"]
    ]


def show(root: Path, page: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(
        invoke(["show", page, "--repo", str(root), "--json"]).stdout
    )
    return answer


def test_numbers_dates_and_booleans_are_text_where_text_is_expected(
    project: Callable[..., Project],
) -> None:
    proj = project(FILES)
    assert check(proj.root) == []
    invoke(["build", "--repo", str(proj.root), "-q"])
    by_id = {r["id"]: r for r in records(current_build(proj.root))}
    assert {page: by_id[page]["title"] for page in TITLES} == TITLES
    ratio = by_id["ratio"]
    assert ratio["fields"]["summary"] == "2024-01-05"
    assert ratio["fields"]["tags"] == ["2024", "0.50", "yes"]
    # The record's copy of the frontmatter says what the fields read.
    assert ratio["frontmatter"]["title"] == "0.840"
    assert ratio["frontmatter"]["tags"] == ["2024", "0.50", "yes"]
    # `refs: [2024]` names the page 2024.
    assert [(link["target"], link["to"]) for link in ratio["links"]] == [
        ("2024", "knowledge/global/2024.md")
    ]
    flags = by_id["flags"]["fields"]
    assert flags["reasoning"] == "1e3"
    assert flags["alternatives"] == ["true", "1_000", "0x1F"]
    assert flags["source"] == "2024"
    assert flags["conflict"]["key"] == "2024"
    assert by_id["day"]["fields"]["summary"] == "2024-01-05 10:30:00"


def test_show_search_and_the_site_give_the_title_as_written(
    project: Callable[..., Project],
) -> None:
    proj = project(FILES)
    invoke(["build", "--repo", str(proj.root), "-q"])
    for page, title in TITLES.items():
        assert show(proj.root, page)["title"] == title
    hits = json.loads(invoke(["search", "churn", "--repo", str(proj.root), "--json"]).stdout)
    assert [(hit["page"], hit["title"], hit["summary"]) for hit in hits["hits"]] == [
        ("ratio", "0.840", "2024-01-05")
    ]
    out = proj.root.parent / "site"
    invoke(["site", "--repo", str(proj.root), "--out", str(out), "-q"])
    pages = {path: path.read_text(encoding="utf-8") for path in out.rglob("*.html")}
    ratio = [text for text in pages.values() if "The churn ratio of the cohort." in text]
    assert len(ratio) == 1
    assert "<title>0.840" in ratio[0]
    assert "<h1>0.840</h1>" in ratio[0] or ">0.840</h1>" in ratio[0]
    assert "0.84<" not in ratio[0]


def test_what_is_no_text_is_still_kb002_at_its_place(project: Callable[..., Project]) -> None:
    page = (
        "---\n"
        "title: [0.840]\n"
        "summary: {a: 1}\n"
        "usage_mode: 1\n"
        "status: yes\n"
        "tags:\n"
        "  - 2024\n"
        "  - [x]\n"
        "confidence: 0.840\n"
        "---\n"
        "Body.\n"
    )
    proj = project({**FILES, "knowledge/global/bad.md": page})
    path = "knowledge/global/bad.md"
    assert check(proj.root, code=1) == [
        (path, 2, 8, "KB002", "'title' must be a string, got a list"),
        (path, 3, 10, "KB002", "'summary' must be a string, got a mapping"),
        (path, 4, 13, "KB002", "'usage_mode' must be a string, got a number"),
        (path, 5, 9, "KB002", "'status' must be a string, got a boolean"),
        (path, 8, 5, "KB002", "'tags' items must be strings, got a list"),
    ]


def test_null_is_no_value_and_the_title_falls_back_to_the_heading(
    project: Callable[..., Project],
) -> None:
    proj = project(
        {
            **FILES,
            "knowledge/global/empty.md": "---\ntitle:\nsummary: ~\n---\n# The Heading\n\nText.\n",
        }
    )
    assert check(proj.root) == []
    invoke(["build", "--repo", str(proj.root), "-q"])
    answer = show(proj.root, "empty")
    assert answer["title"] == "The Heading"
