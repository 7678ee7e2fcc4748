"""`knowl context` (issue 14): the context of a question in one answer, checked field by field
on a real git repository: pages with citations, live definitions and each page's drift, the
caveats riding along, the superseded pages the hits replace, and scopes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

G = "knowledge/global"
STALE_FP = "sha256:" + "0" * 64
PAGES = {
    "knowl.toml": '[rules]\nKB202 = "off"\nKB201 = "warning"\n',
    f"{G}/revenue.md": f"""\
---
summary: Revenue is the sum of completed order amounts.
usage_mode: definition
sl_refs: [shop_pg.orders.total_revenue]
meta:
  bound_fingerprints:
    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"
---
# Revenue

Orders are placed on the web shop.
Revenue is calculated as << sl:shop_pg.orders.total_revenue.expr >> over completed orders.
""",
    f"{G}/revenue-2023.md": """\
---
summary: The old revenue figure.
status: superseded
superseded_by: revenue
---
# Old revenue

Gross figures.
""",
    f"{G}/refunds.md": """\
---
summary: Refunds are not netted out.
usage_mode: caveat
sl_refs: [shop_pg.orders.total_revenue]
---
# Refunds

Finance nets them out later.
""",
    f"{G}/dashboard.md": f"""\
---
summary: The revenue dashboard tile.
sl_refs: [shop_pg.orders.total_revenue, shop_pg.orders.status]
meta:
  bound_fingerprints:
    shop_pg.orders.total_revenue: "{STALE_FP}"
---
# Dashboard

The tile shows revenue calculated daily.
""",
    "knowledge/user/alice/revenue-notes.md": """\
---
summary: Alice's private revenue notes, calculated by hand.
---
# Notes

Revenue calculated in a spreadsheet.
""",
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proj = Project(tmp_path_factory.mktemp("context") / "kb").write({**SEMANTICS, **PAGES})
    proj.commit("pages")
    invoke(["build", "--repo", str(proj.root)])
    return proj.root


def _context(root: Path, question: str, *extra: str) -> Any:
    result = invoke(["context", question, "--repo", str(root), "--json", *extra])
    return json.loads(result.stdout)


def test_pages_cite_the_line_that_matched(kb: Path) -> None:
    answer = _context(kb, "how is revenue calculated?")
    assert answer["question"] == "how is revenue calculated?"
    pages = {p["page"]: p for p in answer["pages"]}
    assert set(pages) == {"revenue", "dashboard"}
    revenue = pages["revenue"]
    assert revenue["path"] == f"{G}/revenue.md"
    assert (revenue["usage_mode"], revenue["freshness"], revenue["drift_flag"]) == (
        "definition",
        "fresh",
        False,
    )
    # Line 12 of the file: the body line with both terms, live definition filled in.
    assert revenue["citation"] == {
        "path": f"{G}/revenue.md",
        "line": 12,
        "text": "Revenue is calculated as sum(amount) over completed orders.",
    }
    dashboard = pages["dashboard"]
    assert (dashboard["freshness"], dashboard["drift_flag"]) == ("needs_review", True)
    assert dashboard["citation"]["line"] == 10


def test_definitions_say_which_page_drifted(kb: Path) -> None:
    answer = _context(kb, "how is revenue calculated?")
    entities = {e["entity"]: e for e in answer["entities"]}
    assert list(entities) == ["shop_pg.orders.status", "shop_pg.orders.total_revenue"]
    revenue = entities["shop_pg.orders.total_revenue"]
    assert revenue["live"] is True
    assert (revenue["kind"], revenue["expression"], revenue["description"]) == (
        "measure",
        "sum(amount)",
        "Revenue.",
    )
    assert revenue["fingerprint"] == FP_SUM_AMOUNT
    uses = {u["page"]: (u["bound_fingerprint"], u["drifted"]) for u in revenue["used_by"]}
    assert uses == {"revenue": (FP_SUM_AMOUNT, False), "dashboard": (STALE_FP, True)}


def test_caveats_and_replaced_pages_ride_along(kb: Path) -> None:
    answer = _context(kb, "how is revenue calculated?")
    assert answer["caveats"] == [
        {
            "page": "refunds",
            "scope": "global",
            "summary": "Refunds are not netted out.",
            "triggered_by": ["shop_pg.orders.total_revenue"],
        }
    ]
    assert answer["superseded"] == [
        {
            "page": "revenue-2023",
            "scope": "global",
            "title": "Old revenue",
            "summary": "The old revenue figure.",
            "superseded_by": "revenue",
        }
    ]


def test_a_users_pages_reach_that_user_only(kb: Path) -> None:
    anonymous = _context(kb, "revenue calculated spreadsheet")
    assert "revenue-notes" not in {p["page"] for p in anonymous["pages"]}
    alice = _context(kb, "revenue calculated spreadsheet", "--user", "alice")
    notes = next(p for p in alice["pages"] if p["page"] == "revenue-notes")
    assert notes["citation"]["text"] == "Revenue calculated in a spreadsheet."
    bob = _context(kb, "revenue calculated spreadsheet", "--user", "bob")
    assert "revenue-notes" not in {p["page"] for p in bob["pages"]}


def test_text_output_and_no_hits(kb: Path) -> None:
    text = invoke(["context", "how is revenue calculated?", "--repo", str(kb)]).stdout
    assert f"{G}/revenue.md:12: Revenue is calculated as sum(amount)" in text
    assert "drifted since written: dashboard" in text
    assert "caveat refunds: Refunds are not netted out." in text
    assert text.endswith("\n")
    empty = invoke(["context", "zebra", "--repo", str(kb)]).stdout
    assert empty == "no pages for 'zebra'\n"


def test_entities_page_with_cursors_bound_to_the_question(kb: Path) -> None:
    from knowl_build.core.errors import KnowlError
    from knowl_build.reader import Reader

    with Reader.open(kb) as reader:
        everything = reader.list_entities(limit=1000)
        names = [row["entity"] for row in everything["entities"]]
        assert names == sorted(names) and everything["next_cursor"] is None
        seen, cursor = [], None
        while True:
            page = reader.list_entities(limit=2, cursor=cursor)
            assert page["total"] == len(names)
            seen += [row["entity"] for row in page["entities"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == names
        first = reader.list_entities(limit=2)
        assert first["next_cursor"] is not None
        for bad in ("x", first["next_cursor"] + "A", "A" * 500, "../../etc", "MTow"):
            with pytest.raises(KnowlError, match="invalid cursor"):
                reader.list_entities(limit=2, cursor=bad)
        with pytest.raises(KnowlError, match="invalid cursor"):  # another question's cursor
            reader.list_entities(limit=2, kind="measure", cursor=first["next_cursor"])
        measures = reader.list_entities(kind="measure", query="REVENUE")
        assert [row["entity"] for row in measures["entities"]] == ["shop_pg.orders.total_revenue"]


def test_describe_entity_groups_pages_by_usage_mode(kb: Path) -> None:
    from knowl_build.core.errors import KnowlError
    from knowl_build.reader import Reader

    with Reader.open(kb) as reader:
        answer = reader.describe_entity("shop_pg.orders.total_revenue")
        assert (answer["kind"], answer["expression"], answer["fingerprint"]) == (
            "measure",
            "sum(amount)",
            FP_SUM_AMOUNT,
        )
        assert {mode: [p["page"] for p in rows] for mode, rows in answer["pages"].items()} == {
            "caveat": ["refunds"],
            "definition": ["revenue"],
            "reference": ["dashboard"],
        }
        assert next(iter(answer["pages"])) == "caveat"
        with pytest.raises(KnowlError, match=r"no semantic entity 'shop_pg\.orders\.total_revenu'"):
            reader.describe_entity("shop_pg.orders.total_revenu")
