"""The seeds' own tests (issue 22, item 11), on real git repositories.

- A bound fingerprint that is no hash (`sha256:old`) is KB002 and marks the page drifted
  besides, as Canonic does: KB201 says the bound value matches no version, `drift_flag` is
  true in search and show, and the page needs review.
- A store with a `confidence` outside [0, 1], or not finite, is a structured refusal: with
  `--json`, `action: "refused"` and a KB002 error naming `confidence` at the value in the page
  as it would have been written (exit 1, nothing written); over MCP, the same answer as a tool
  error (`isError`), as Knowl's tests expect.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config_loader import load_config
from knowl_build.writes.request import Request
from knowl_build.writes.store import store
from tests.helpers import SEMANTICS, Project, invoke

BASE: dict[str, str | bytes] = {**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n"}
ORDERS = "semantics/shop/orders.yaml"
REVENUE = "knowledge/global/revenue.md"
REVENUE_TEXT = """\
---
summary: Revenue
sl_refs: [shop_pg.orders.total_revenue]
meta:
  last_validated_at: "2026-01-01T12:00:00Z"
  bound_fingerprints:
    shop_pg.orders.total_revenue: "sha256:old"
---
Revenue is the sum of order amounts.
"""
NOT_A_HASH = (
    "KB002",
    REVENUE,
    7,
    35,
    "'meta.bound_fingerprints.shop_pg.orders.total_revenue' must be 'sha256:' and hex digits",
)
STORE = ["store", "--category", "fact", "--title", "Order counts", "--content", "Counted."]
PAGE = "knowledge/global/order-counts.md"
HINT = "give a confidence from 0 to 1, or none"


def refusal(shown: str, line: int = 5, column: int = 13) -> dict[str, Any]:
    """The KB002 error of a refused confidence, as every front end answers it."""
    return {
        "code": "KB002",
        "severity": "error",
        "path": PAGE,
        "line": line,
        "column": column,
        "end_line": None,
        "end_column": None,
        "message": f"'confidence' must be a finite number in [0, 1] (never clamped), not {shown}",
        "hint": HINT,
    }


def findings(root: Path) -> list[tuple[str, str, int, int, str]]:
    result = invoke(["check", "--repo", str(root), "--format", "json"], code=1)
    rows = json.loads(result.stdout)["diagnostics"]
    return [(r["code"], r["path"], r["line"], r["column"], r["message"]) for r in rows]


def test_a_bound_value_that_is_no_hash_is_drift_besides_kb002(
    project: Callable[..., Project],
) -> None:
    proj = project({**BASE, REVENUE: REVENUE_TEXT})
    # Nothing changed since: the value matches no version all the same.
    drifted = (
        "'shop_pg.orders.total_revenue' drifted: the bound value 'sha256:old' is no "
        "fingerprint and matches no version, now `sum(amount)`"
    )
    assert findings(proj.root) == [("KB201", REVENUE, 7, 5, drifted), NOT_A_HASH]
    proj.write({ORDERS: SEMANTICS[ORDERS].replace('"sum(amount)"', '"sum(amount_net)"')})
    sha = proj.commit("Revenue is net")
    assert findings(proj.root) == [
        (
            "KB201",
            REVENUE,
            7,
            5,
            "'shop_pg.orders.total_revenue' drifted: the bound value 'sha256:old' is no "
            "fingerprint and matches no version, now `sum(amount_net)`; last changed in "
            f'commit {sha[:12]} (2026-01-02, "Revenue is net")',
        ),
        NOT_A_HASH,
    ]


def test_a_page_bound_to_no_hash_is_drifted_in_search_and_show(
    project: Callable[..., Project],
) -> None:
    proj = project({**BASE, REVENUE: REVENUE_TEXT})
    invoke(["build", "--repo", str(proj.root), "--allow-errors"])
    found = json.loads(invoke(["search", "revenue", "--repo", str(proj.root), "--json"]).stdout)
    hit = next(h for h in found["hits"] if h["page"] == "revenue")
    assert (hit["drift_flag"], hit["freshness"]) == (True, "needs_review")
    shown = json.loads(invoke(["show", "revenue", "--repo", str(proj.root), "--json"]).stdout)
    assert shown["meta"]["drift_flag"] is True
    assert shown["freshness"]["value"] == "needs_review"
    assert [(d["entity"], d["bound"], d["bound_expr"]) for d in shown["drift"]] == [
        ("shop_pg.orders.total_revenue", "sha256:old", None)
    ]
    assert [r["code"] for r in shown["freshness"]["reasons"]] == ["KB201"]  # no KB203 too


# The page would be `---`, title, summary, category, then `confidence: <value>` on line 5
# (source_commit follows it): the value's first character is column 13.
@pytest.mark.parametrize(
    ("value", "shown"),
    [("1.5", "1.5"), ("-0.1", "-0.1"), ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf")],
)
def test_a_confidence_outside_0_1_is_a_structured_refusal(
    project: Callable[..., Project], value: str, shown: str
) -> None:
    proj = project(BASE)
    result = invoke([*STORE, "--repo", str(proj.root), "--confidence", value, "--json"], code=1)
    answer = json.loads(result.stdout)
    assert answer == {
        "action": "refused",
        "page": "order-counts",
        "path": PAGE,
        "superseded": None,
        "overlapping": None,
        "diagnostics": [refusal(shown)],
        "status": "active",
        "build": None,
        "rebuilt": False,
        "commit": None,
        "committed": False,
    }
    assert "Usage:" not in result.output and proj.run_git("status", "--porcelain") == ""
    # Without --json: the finding at its place and the reason, on standard error.
    text = invoke([*STORE, "--repo", str(proj.root), "--confidence", value], code=1).stderr
    assert text.splitlines() == [
        f"refused: order-counts ({PAGE})",
        f"  {PAGE}:5:13: error KB002 'confidence' must be a finite number in [0, 1] "
        f"(never clamped), not {shown}",
        f"  confidence must be a finite number in [0, 1] (never clamped), not {shown}; "
        "nothing was written",
    ]


def test_the_refusal_holds_whatever_kb002s_severity(project: Callable[..., Project]) -> None:
    proj = project({**BASE, "knowl.toml": "[rules]\nKB202 = 'off'\nKB002 = 'off'\n"})
    result = invoke([*STORE, "--repo", str(proj.root), "--confidence", "7", "--json"], code=1)
    assert json.loads(result.stdout)["diagnostics"] == [refusal("7.0")]
    assert not (proj.root / PAGE).exists()


def test_the_library_answers_the_same_refusal(project: Callable[..., Project]) -> None:
    proj = project(BASE)
    for value, shown, at in ((math.nan, "nan", (5, 13)), (True, "True", (1, 1))):
        request = Request(category="fact", title="Order counts", content="C.", confidence=value)
        outcome = store(proj.root, load_config(proj.root), request)
        assert (outcome.action, outcome.argument, outcome.changes) == ("refused", "confidence", [])
        assert outcome.diagnostics == [refusal(shown, *at)]
    assert proj.run_git("status", "--porcelain") == ""


def test_mcp_store_knowledge_refuses_as_a_tool_error_with_the_answer(
    project: Callable[..., Project],
) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp_types import CallToolResult

    from knowl_build.app.project import Locator
    from knowl_build.mcp_server import make_server
    from tests.test_mcp import run

    proj = project(BASE)
    arguments = {"category": "fact", "title": "Order counts", "content": "Counted."}

    async def body(session: Any) -> Any:
        return await session.call_tool("store_knowledge", {**arguments, "confidence": 1.5})

    # Over stdio, through the official client (which does not validate an error's content).
    result = run(["--repo", str(proj.root), "--allow-writes"], body)
    assert result.is_error
    assert result.structured_content["action"] == "refused"
    assert result.structured_content["diagnostics"] == [refusal("1.5")]
    assert [c.text for c in result.content] == [
        "Refused: nothing was written: 'confidence' must be a finite number in [0, 1] "
        "(never clamped), not 1.5."
    ]
    # In process, the values JSON cannot carry.
    server = make_server(
        locator=Locator(proj.root), artifact=None, with_repo=True, allow_writes=True
    )
    for number, shown in ((math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")):
        answer = asyncio.run(
            server.call_tool("store_knowledge", {**arguments, "confidence": number})
        )
        assert isinstance(answer, CallToolResult) and answer.is_error
        assert answer.structured_content is not None
        assert answer.structured_content["diagnostics"] == [refusal(shown)]
    assert proj.run_git("status", "--porcelain") == ""
