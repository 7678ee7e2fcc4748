"""timeline and show --at on a repository with several commits, a rename and a changed measure."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

ORDERS = "semantics/shop/orders.yaml"


def page(summary: str, body: str, status: str = "active") -> str:
    return (
        f"---\nsummary: {summary}\nstatus: {status}\nsl_refs: [shop_pg.orders.total_revenue]\n"
        f'meta:\n  bound_fingerprints:\n    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n---\n'
        f"{body}\nExpression: `<< sl:shop_pg.orders.total_revenue.expr >>`\n"
    )


@pytest.fixture
def history(project: Callable[..., Project]) -> tuple[Project, list[str]]:
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            "knowledge/global/rev.md": page("First take", "Revenue v1."),
        },
        commit=False,
    )
    shas = [proj.commit("Add revenue page")]
    proj.write({"knowledge/global/rev.md": page("Second take", "Revenue v2.")})
    shas.append(proj.commit("Rewrite revenue page"))
    proj.run_git("tag", "v2")
    proj.remove("knowledge/global/rev.md").write(
        {"knowledge/global/finance/revenue.md": page("Second take", "Revenue v2.")}
    )
    shas.append(proj.commit("Move revenue page"))
    proj.write(
        {ORDERS: SEMANTICS[ORDERS].replace('expr: "sum(amount)"', 'expr: "sum(net_amount)"')}
    )
    shas.append(proj.commit("Net revenue"))
    proj.write(
        {"knowledge/global/finance/revenue.md": page("Third take", "Revenue v3.", "deprecated")}
    )
    shas.append(proj.commit("Deprecate"))
    return proj, shas


def test_timeline_follows_renames_newest_first(history: tuple[Project, list[str]]) -> None:
    proj, shas = history
    answer = json.loads(invoke(["timeline", "revenue", "--repo", str(proj.root), "--json"]).stdout)
    assert (answer["page"], answer["scope"]) == ("revenue", "global")
    versions = answer["versions"]
    assert [v["commit"] for v in versions] == [shas[4], shas[2], shas[1], shas[0]]
    assert [v["path"] for v in versions] == ["knowledge/global/finance/revenue.md"] * 2 + [
        "knowledge/global/rev.md"
    ] * 2
    assert [v["status"] for v in versions] == ["deprecated", "active", "active", "active"]
    assert [v["summary"] for v in versions] == [
        "Third take",
        "Second take",
        "Second take",
        "First take",
    ]
    assert versions[0]["subject"] == "Deprecate" and versions[0]["author"] == "Test Author"
    assert versions[0]["date"].endswith("Z")
    assert "-Revenue v2.\n+Revenue v3.\n" in versions[0]["diff"]
    assert versions[1]["diff"] == ""  # the move did not change the body
    assert versions[-1]["diff"] == ""
    text = invoke(["timeline", "revenue", "--repo", str(proj.root)]).stdout
    assert shas[4][:12] in text and "Deprecate" in text


def test_show_at_renders_against_the_layer_of_that_time(history: tuple[Project, list[str]]) -> None:
    proj, shas = history
    now = json.loads(
        invoke(["show", "revenue", "--repo", str(proj.root), "--at", "HEAD", "--json"]).stdout
    )
    assert "`sum(net_amount)`" in now["body"] and now["meta"]["drift_flag"] is True
    assert now["at"]["commit"] == shas[4]
    old = json.loads(
        invoke(["show", "rev", "--repo", str(proj.root), "--at", "v2", "--json"]).stdout
    )
    assert "Revenue v2." in old["body"] and "`sum(amount)`" in old["body"]
    assert old["meta"]["drift_flag"] is False and old["at"]["commit"] == shas[1]
    by_commit = json.loads(
        invoke(["show", "revenue", "--repo", str(proj.root), "--at", shas[2], "--json"]).stdout
    )
    assert "`sum(amount)`" in by_commit["body"]
    # An ISO date: the last first-parent commit at or before it (commits are one day apart).
    by_date = json.loads(
        invoke(["show", "rev", "--repo", str(proj.root), "--at", "2026-01-01", "--json"]).stdout
    )
    assert by_date["at"]["commit"] == shas[0] and "Revenue v1." in by_date["body"]


def test_show_at_errors(
    history: tuple[Project, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    proj, _ = history
    assert (
        "cannot be combined"
        in invoke(
            [
                "show",
                "revenue",
                "--repo",
                str(proj.root),
                "--at",
                "HEAD",
                "--artifact",
                str(proj.root),
            ],
            code=2,
        ).stderr
    )
    assert (
        "not a commit, tag, branch or ISO date"
        in invoke(
            ["show", "revenue", "--repo", str(proj.root), "--at", "no-such-rev"], code=2
        ).stderr
    )
    # Not at v2 (the nearest id of that commit is suggested, as for any page not found).
    assert invoke(
        ["show", "revenue", "--repo", str(proj.root), "--at", "v2"], code=1
    ).stderr.startswith("knowl: error: no page 'revenue' visible to anonymous")
    assert invoke(["timeline", "nope", "--repo", str(proj.root)], code=1).stderr.strip() == (
        "knowl: error: no page 'nope' visible to anonymous"
    )
    plain = Project(tmp_path_factory.mktemp("nogit") / "p", git=False).write(
        {"knowledge/global/a.md": "x\n"}
    )
    assert (
        "page history needs git"
        in invoke(["timeline", "a", "--repo", str(plain.root)], code=2).stderr
    )
