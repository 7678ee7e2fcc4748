"""Search quality (issue 23): a page's names (title, file name, `aliases`) rank it first when
the query equals one of them, case and accents aside; a heading query finds its page with the
section and the passage that matched; the site's shards rank exactly as `knowl search`. On a
real git repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowl_build.reader import Reader
from knowl_build.site import urls
from tests.helpers import Project, invoke
from tests.test_site_search import build, ranked, write_data

G = "knowledge/global"
FILES = {
    "knowl.toml": 'staleness_days = 3650\n[rules]\nKB202 = "off"\nKB201 = "warning"\n',
    f"{G}/revenue.md": """\
---
title: Revenue
summary: What revenue means here.
aliases: [Umsatz, "Chiffre d'affaires"]
---
# Revenue

The sum of completed orders.
""",
    # Pages that say "revenue" far more often than the page named so.
    f"{G}/revenue-by-region.md": """\
---
title: Revenue by region
summary: Revenue, revenue and revenue again, by region.
tags: [revenue]
---
# Revenue by region

Revenue revenue revenue: the revenue of each region, and revenue umsatz notes.
""",
    f"{G}/umsatz-report.md": """\
---
title: Umsatz report
summary: The monthly umsatz report (umsatz, umsatz).
---
# Umsatz report

Umsatz umsatz umsatz.
""",
    f"{G}/cv.md": """\
---
title: Résumé
summary: How to write one.
---
# Résumé

A short page.
""",
    f"{G}/resume-tips.md": """\
---
title: Tips
summary: Resume tips, resume advice, resume resume.
---
# Tips

resume resume resume.
""",
    f"{G}/warehouse.md": """\
---
title: Warehouse operations
summary: Running the warehouse.
---
# Warehouse operations

Daily loads run at night.

## Rotating the warehouse credentials

Ask the platform team first.
The credentials are rotated every quarter by the on-call engineer.
""",
    f"{G}/glossary.md": """\
---
title: Glossary
summary: Words we use.
---
# Glossary

## Brewing words { #zymurgy }

Zymurgy is the chemistry of fermentation.
""",
    f"{G}/access-faq.md": """\
---
title: Access FAQ
summary: Questions about access.
---
# Access FAQ

Where secrets live.
""",
    # A question that shares one word ("file") with the name of the page it is not about.
    f"{G}/outline.md": """\
---
title: Document outline
---
# Document outline

The headings are those the configuration lists, in order.
""",
    f"{G}/final-newline.md": """\
---
title: Files should end with a single newline character
---
# Files should end with a single newline character

A file is reported when its last line does not end with a newline: each file must end with
one, so that a file shown in a terminal ends its line.
""",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proj = Project(tmp_path_factory.mktemp("quality") / "proj").write(FILES)
    proj.commit("pages")
    build(proj.root)
    return proj.root


def first(root: Path, query: str) -> str:
    with Reader.open(root) as reader:
        hits = reader.search(query, limit=10)["hits"]
    assert hits, query
    return hits[0]["page"]


@pytest.mark.parametrize("query", ["revenue", "REVENUE", "Revenue"])
def test_a_query_equal_to_the_title_puts_the_page_first(project: Path, query: str) -> None:
    assert first(project, query) == "revenue"


@pytest.mark.parametrize("query", ["umsatz", "UMSATZ", "chiffre d'affaires", "CHIFFRE D AFFAIRES"])
def test_a_query_equal_to_an_alias_puts_the_page_first(project: Path, query: str) -> None:
    assert first(project, query) == "revenue"


def test_a_question_finds_its_page_by_what_it_says_not_by_a_word_of_another_name(
    project: Path,
) -> None:
    # "file" is one word of the other page's name; the question is about this page's content.
    question = "This rule is triggered when the headings in a file are not in the order given"
    assert first(project, question) == "outline"
    # The name, or most of it, still finds the page it names.
    assert first(project, "file end newline") == "final-newline"


def test_names_are_compared_without_accents(project: Path) -> None:
    # "resume" is no term of the page titled Résumé, and Tips says it five times.
    assert first(project, "resume") == "cv"
    assert first(project, "RÉSUMÉ") == "cv"
    assert first(project, "revenue by region") == "revenue-by-region"


def test_a_file_name_is_a_name(project: Path) -> None:
    assert first(project, "access-FAQ") == "access-faq"
    assert first(project, "umsatz report") == "umsatz-report"


def test_a_heading_query_finds_its_section_and_passage(project: Path) -> None:
    with Reader.open(project) as reader:
        hit = reader.search("rotating credentials", limit=3)["hits"][0]
    assert hit["page"] == "warehouse"
    # The heading is line 9 of the file (frontmatter included). Of its section, the heading
    # and line 12 hold both terms (`rotated` is `rotating` stemmed): the line is the passage.
    assert hit["section"] == {
        "heading": "Rotating the warehouse credentials",
        "anchor": "rotating-the-warehouse-credentials",
        "line": 9,
    }
    assert hit["snippet"] == {
        "text": "The credentials are rotated every quarter by the on-call engineer.",
        "line": 12,
        "matches": [[4, 15], [20, 27]],
    }


def test_a_heading_alone_is_the_passage_when_no_line_matches_as_much(project: Path) -> None:
    with Reader.open(project) as reader:
        hit = reader.search("rotating warehouse", limit=3)["hits"][0]
    assert hit["page"] == "warehouse"
    assert hit["snippet"] == {
        "text": "Rotating the warehouse credentials",
        "line": 9,
        "matches": [[0, 8], [13, 22]],
    }


def test_the_passage_is_the_best_line_of_the_section(project: Path) -> None:
    with Reader.open(project) as reader:
        hit = reader.search("credentials rotated quarter", limit=3)["hits"][0]
    assert hit["page"] == "warehouse"
    text = "The credentials are rotated every quarter by the on-call engineer."
    assert hit["snippet"] == {"text": text, "line": 12, "matches": [[4, 15], [20, 27], [34, 41]]}
    assert hit["section"] is not None and hit["section"]["line"] == 9


def test_json_and_text_output_carry_the_passage(project: Path) -> None:
    out = invoke(["search", "rotating credentials", "--repo", str(project), "--json"]).stdout
    hit = json.loads(out)["hits"][0]
    assert hit["snippet"]["matches"] == [[4, 15], [20, 27]]
    text = invoke(["search", "rotating credentials", "--repo", str(project)]).stdout
    assert "§ Rotating the warehouse credentials" in text


def test_an_explicit_heading_id_is_the_sections_anchor(project: Path) -> None:
    with Reader.open(project) as reader:
        hit = reader.search("zymurgy fermentation", limit=1)["hits"][0]
    assert hit["section"] == {"heading": "Brewing words", "anchor": "zymurgy", "line": 7}
    assert hit["snippet"] is not None and hit["snippet"]["line"] == 9


def test_context_cites_the_same_passage(project: Path) -> None:
    with Reader.open(project) as reader:
        answer = reader.context("credentials rotated quarter")
    citation = answer["pages"][0]["citation"]
    assert citation is not None
    assert (citation["line"], citation["text"]) == (
        12,
        "The credentials are rotated every quarter by the on-call engineer.",
    )


QUERIES = [
    "revenue",
    "UMSATZ",
    "resume",
    "Résumé",
    "rotating credentials",
    "access faq",
    "revenue by region",
    "tips",
    "This rule is triggered when the headings in a file are not in the order given",
]


def test_the_site_ranks_as_knowl_search(project: Path, tmp_path: Path) -> None:
    from knowl_build.reader.view import find_artifact

    write_data(find_artifact(project), tmp_path)
    with Reader.open(project) as reader:
        for query in QUERIES:
            expected = []
            for hit in reader.search(query, limit=100)["hits"]:
                entry = reader.view.page(hit["scope"], hit["page"])
                assert entry is not None
                expected.append((urls.page_href(entry), hit["score"]))
            got = ranked(tmp_path, query)
            assert [h for h, _ in got] == [h for h, _ in expected], query
            assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-12)


def test_the_mcp_text_shows_the_passage(project: Path) -> None:
    from knowl_build.mcp_server import text

    with Reader.open(project) as reader:
        answer = reader.search("credentials rotated quarter", limit=1)
    shown = text.search(answer).splitlines()
    assert shown[2] == (
        "  (Rotating the warehouse credentials, line 12) "
        "The credentials are rotated every quarter by the on-call engineer."
    )
