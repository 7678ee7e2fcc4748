"""The seeds' own tests (issue 22, item 11), on real git repositories.

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
from typing import Any

import pytest

from knowl_build.config_loader import load_config
from knowl_build.writes.request import Request
from knowl_build.writes.store import store
from tests.helpers import SEMANTICS, Project, invoke

BASE: dict[str, str | bytes] = {**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n"}
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
