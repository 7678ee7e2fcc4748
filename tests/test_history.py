"""History rules on real git repositories: drift, removal, changes after validation, sources."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.pipeline.analysis import analyse
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project

ORDERS = "semantics/shop/orders.yaml"
PAGE = "knowledge/global/revenue.md"


def revenue_page(validated: str = "2026-01-01T12:00:00Z", extra: str = "") -> str:
    return (
        "---\nsummary: Revenue\nsl_refs: [shop_pg.orders.total_revenue]\n"
        f'meta:\n  last_validated_at: "{validated}"\n  bound_fingerprints:\n'
        f'    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n{extra}---\n'
        "Revenue is `<< sl:shop_pg.orders.total_revenue.expr >>`.\n"
    )


def findings(proj: Project) -> list[tuple[str, int, int, str]]:
    analysis = analyse(proj.root, Config(), use_cache=False)
    return [(d.code, d.line, d.column, d.message) for d in analysis.diagnostics if d.path == PAGE]


def test_measure_changed_in_later_commit_is_drift_naming_the_commit(
    project: Callable[..., Project],
) -> None:
    proj = project({**SEMANTICS, PAGE: revenue_page()})
    proj.write(
        {
            ORDERS: SEMANTICS[ORDERS].replace(
                'expr: "sum(amount)"', 'expr: "sum(amount) - sum(refunds)"'
            )
        }
    )
    sha = proj.commit("Net out refunds in revenue")
    proj.write({"knowledge/global/other.md": "x\n"})
    proj.commit("unrelated")
    analysis = analyse(proj.root, Config(), use_cache=False)
    drift = [d for d in analysis.diagnostics if d.code == "KB201"]
    assert len(drift) == 1
    d = drift[0]
    assert (d.path, d.line, d.column) == (PAGE, 7, 5)
    assert "written against `sum(amount)`, now `sum(amount) - sum(refunds)`" in d.message
    assert f"commit {sha[:12]}" in d.message and "Net out refunds in revenue" in d.message
    # The page binds the measure's fingerprint: the change is KB201's alone, never KB203 too.
    assert [x for x in analysis.diagnostics if x.code == "KB203"] == []
    assessment = analysis.assessments[PAGE]
    assert assessment.value == "needs_review"
    assert {r["code"] for r in assessment.reasons} == {"KB201", "KB202"}
    assert assessment.drift[0]["changed_in"]["commit"] == sha
    assert assessment.drift[0]["bound_expr"] == "sum(amount)"


def test_uncommitted_change_is_working_tree(project: Callable[..., Project]) -> None:
    proj = project({**SEMANTICS, PAGE: revenue_page()})
    proj.write({ORDERS: SEMANTICS[ORDERS].replace("sum(amount)", "sum(amount_eur)")})
    analysis = analyse(proj.root, Config(), use_cache=False)
    assert analysis.history is not None
    assert analysis.history.entities["shop_pg.orders.total_revenue"].changed_in == "working-tree"
    drift = analysis.assessments[PAGE].drift[0]
    assert drift["changed_in"] == {"commit": None, "working_tree": True}
    assert any(
        "uncommitted changes" in d.message for d in analysis.diagnostics if d.code == "KB201"
    )


def test_removed_entity_names_removing_commit(project: Callable[..., Project]) -> None:
    proj = project({**SEMANTICS, PAGE: revenue_page()})
    text = SEMANTICS[ORDERS].replace(
        '  - { name: total_revenue, expr: "sum(amount)", additivity: additive, description: Revenue. }\n',
        "",
    )
    proj.write({ORDERS: text.replace("measures:\n", "")})
    sha = proj.commit("Drop the revenue measure")
    got = [f for f in findings(proj) if f[0] == "KB101"]
    assert len(got) == 1
    assert got[0][:3] == ("KB101", 3, 11)
    assert f"removed in commit {sha[:12]}" in got[0][3]


def test_introduction_is_not_a_change_and_renames_keep_history(
    project: Callable[..., Project],
) -> None:
    proj = project({**SEMANTICS, PAGE: revenue_page("2025-06-01T00:00:00Z")})
    first = proj.run_git("rev-parse", "HEAD").strip()
    proj.write({"semantics/moved/orders_v2.yaml": SEMANTICS[ORDERS]}).remove(ORDERS)
    proj.commit("Move the orders source")
    analysis = analyse(proj.root, Config(), use_cache=False)
    assert analysis.history is not None
    record = analysis.history.entities["shop_pg.orders.total_revenue"]
    assert record.introduced_in == first
    assert record.changed_in is None
    assert not [d for d in analysis.diagnostics if d.code in ("KB201", "KB203")]
    assert analysis.history.page_commits[PAGE] == [first]


def test_affected_paths_and_source_commit(project: Callable[..., Project]) -> None:
    proj = project({**SEMANTICS, "src/app.py": "print(1)\n", "src/keep.py": "x = 1\n"})
    base = proj.run_git("rev-parse", "HEAD").strip()
    page = (
        f"---\nsource_commit: {base[:10]}\naffected_paths: [src/app.py, src/keep.py, src/gone.py]\n"
        "meta: {last_validated_at: 2026-05-01}\n---\nx\n"
    )
    proj.write({PAGE: page, "src/app.py": "print(2)\n"})
    proj.commit("change app")
    got = [(f[0], f[1], f[2]) for f in findings(proj)]
    assert got == [("KB204", 3, 18), ("KB204", 3, 43)]
    proj.write({PAGE: page.replace(base[:10], "deadbeef00")})
    got = [(f[0], f[1], f[2]) for f in findings(proj)]
    assert got == [("KB205", 2, 16)]


def test_no_git_still_reports_drift_without_commit(tmp_path: Path) -> None:
    proj = Project(tmp_path / "p", git=False)
    proj.write(
        {
            **SEMANTICS,
            PAGE: revenue_page(),
            ORDERS: SEMANTICS[ORDERS].replace("sum(amount)", "sum(x)"),
        }
    )
    analysis = analyse(proj.root, Config(), use_cache=False)
    codes = [d.code for d in analysis.diagnostics]
    assert "KB201" in codes and "KB009" in codes and "KB203" not in codes


def test_cached_replay_continues_and_equals_a_full_replay(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    from knowl_build.history.git import GitRepo
    from knowl_build.history.log import GitHistory
    from knowl_build.history.replay import trace
    from knowl_build.pipeline.analysis import load_layer
    from knowl_build.pipeline.inputs import read_inputs

    def replay(proj: Project, cache: Path | None) -> object:
        config = Config()
        layer = load_layer(read_inputs(proj.root, config))
        repo = GitRepo.find(proj.root)
        assert repo is not None
        reader = GitHistory(repo)
        try:
            h = trace(reader, config, layer, cache=cache)
        finally:
            reader.close()
        return (
            h.head,
            sorted(h.commits),
            {k: v.to_list() for k, v in h.entities.items()},
            h.definitions,
            h.page_commits,
        )

    cache = tmp_path / "history.json"
    proj = project({**SEMANTICS, PAGE: revenue_page()})
    assert replay(proj, cache) == replay(proj, None)
    for n in range(3):
        proj.write(
            {
                ORDERS: SEMANTICS[ORDERS].replace("sum(amount)", f"sum(amount_{n})"),
                f"knowledge/global/p{n}.md": f"page {n}\n",
            }
        )
        proj.commit(f"round {n}")
        if n == 1:
            proj.write({"knowledge/global/moved.md": "page 0\n"}).remove("knowledge/global/p0.md")
            proj.commit("move")
        assert cache.exists()
        assert replay(proj, cache) == replay(proj, None), n
    # A rewritten history is replayed from the start.
    proj.run_git("reset", "-q", "--hard", "HEAD~2")
    assert replay(proj, cache) == replay(proj, None)
