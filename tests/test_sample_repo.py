"""The demo project checks clean but for the drift it demonstrates; a repository laid out for
Canonic checks without findings."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from knowl_build.core.config_loader import load_config
from knowl_build.pipeline.analysis import analyse
from tests.helpers import Project, invoke

SAMPLE = Path(__file__).resolve().parent.parent / "sample_repo"


def test_sample_repo_checks_clean_but_for_its_one_drifted_page(tmp_path: Path) -> None:
    """The demo shows the main feature: one page drifted from the measure it binds (in this
    repository's own history, the commit that changed it is named), nothing else."""
    copy = tmp_path / "sample"
    shutil.copytree(SAMPLE, copy, ignore=shutil.ignore_patterns(".knowl"))
    project = Project(copy)
    project.commit("sample")
    result = invoke(["check", "--repo", str(copy), "--format", "json"])
    [drift] = json.loads(result.stdout)["diagnostics"]
    assert (drift["code"], drift["severity"], drift["path"], drift["line"]) == (
        "KB201",
        "warning",
        "knowledge/global/metrics/average-order-value.md",
        15,
    )
    assert "now `sum(amount) / nullif(count(distinct order_id), 0)`" in drift["message"]
    assert "knowl review average-order-value" in drift["hint"]
    invoke(["check", "--repo", str(copy), "--strict"], code=1)


def test_sample_repo_retrieval_tests_pass(tmp_path: Path) -> None:
    copy = tmp_path / "sample"
    shutil.copytree(SAMPLE, copy, ignore=shutil.ignore_patterns(".knowl"))
    Project(copy).commit("sample")
    answer = json.loads(invoke(["eval", "--repo", str(copy), "--build", "--json"]).stdout)
    summary = answer["summary"]
    assert summary["questions"] >= 8 and summary["failed"] == 0
    assert summary["min_mrr"] == 0.8 and summary["mrr_at_10"] >= 0.8
    assert {q["user"] for q in answer["questions"]} == {None, "alice", "bob"}


def test_sample_repo_covers_the_demo_features() -> None:
    config = load_config(SAMPLE)
    analysis = analyse(SAMPLE, config, use_cache=False)
    pages = analysis.pages
    assert len(pages) >= 20
    assert {p.scope for p in pages} == {"global", "user:alice", "user:bob"}
    assert {p.parsed.fields.usage_mode for p in pages} == {
        "reference",
        "caveat",
        "policy",
        "definition",
    }
    assert {p.parsed.fields.category for p in pages} >= {
        "fact",
        "decision",
        "goal",
        "constraint",
        "architecture",
        "state",
        "skill",
    }
    assert any(p.parsed.fields.status == "superseded" for p in pages)
    assert any(p.parsed.fields.conflict and p.parsed.fields.conflict.exclusive for p in pages)
    raw = [d.raw for p in pages for d in p.parsed.directives]
    assert any(r.startswith("<<") for r in raw) and any(r.startswith("{{") for r in raw)
    assert any(link.heading for p in pages for link in p.parsed.links)
    connections = {e.connection for e in analysis.layer.entities.values()}
    assert connections == {"warehouse_pg", "billing_sf", "marketing_dbt"}
    assert any(e.origin == "dbt" and e.kind == "metric" for e in analysis.layer.entities.values())
    sources = [e for e in analysis.layer.entities.values() if e.kind == "source"]
    assert len(sources) >= 5
    assert any("joins" in e.definition for e in sources)


CANONIC: dict[str, str | bytes] = {
    "semantics/warehouse/orders.yaml": (
        "name: orders\nconnection: warehouse\ntable: public.orders\ngrain: [id]\n"
        "columns:\n  - {name: id, type: int}\n  - {name: amount, type: numeric}\n"
        "  - {name: created_at, type: timestamp}\n"
        "measures:\n  - {name: revenue, expr: sum(amount), description: Gross revenue}\n"
        "dimensions:\n  - {name: day, column: created_at, granularity: day}\n"
        "joins: []\nfilters: []\nmeta: {provenance: inferred}\n"
    ),
    "knowledge/global/revenue.md": (
        "---\nsummary: How revenue is defined\ntags: [finance]\nsl_refs: [warehouse.orders.revenue]\n"
        "usage_mode: definition\nmeta:\n  provenance: human_curated\n  last_validated_at: 2026-05-01\n"
        "  bound_fingerprints:\n    warehouse.orders.revenue: "
        "sha256:6193c9db63810d49d8c08c18bacb053c943f8f0c1ea8d0fc3dee16ecc0cd7b34\n---\n"
        "# Revenue\n\nRevenue is `{{ sl:warehouse.orders.revenue.expr }}`. See [[returns]].\n"
    ),
    "knowledge/global/returns.md": (
        "---\nsummary: Returns are not subtracted\nsl_refs: [warehouse.orders.revenue]\nusage_mode: caveat\n"
        "meta:\n  last_validated_at: 2026-05-01\n---\nReturns are booked separately.\n"
    ),
    "knowledge/user/u123/notes.md": (
        "---\nsummary: my notes\nrefs: [revenue]\nmeta:\n  last_validated_at: 2026-05-01\n---\n"
        "Check [[revenue]] first.\n"
    ),
}


def test_canonic_layout_checks_with_no_error(project: Callable[..., Project]) -> None:
    proj = project(CANONIC)
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"])
    assert json.loads(result.stdout)["summary"] == {"error": 0, "warning": 0, "info": 0}
