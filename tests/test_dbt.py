"""The dbt semantic layer as a second source of entities, on real temp git repositories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.core.config_loader import load_config
from knowl_build.core.errors import ConfigError
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.publish import build
from knowl_build.semantic.layer import measure_fingerprint
from tests.helpers import SEMANTICS, Project, invoke, records

TOML = "[rules]\nKB202 = 'off'\n[semantics.dbt]\nproject_dir = 'analytics_dbt'\n"
DBT_PROJECT = "name: shop_dbt\nversion: '1.0.0'\nconfig-version: 2\nmodel-paths: [models]\n"
LEGACY = """\
version: 2
semantic_models:
  - name: orders
    description: Orders placed on the web shop.
    model: ref('fct_orders')
    defaults:
      agg_time_dimension: ordered_at
    entities:
      - name: order_id
        type: primary
      - name: customer
        type: foreign
        expr: customer_id
    dimensions:
      - name: ordered_at
        type: time
        type_params:
          time_granularity: day
      - name: status
        type: categorical
    measures:
      - name: order_total
        description: Order value in EUR.
        agg: sum
        expr: amount
      - name: order_count
        agg: count
        expr: "1"
      - name: revenue
        agg: sum
metrics:
  - name: total_revenue
    description: Revenue of all orders.
    type: simple
    type_params:
      measure: order_total
"""
LATEST = """\
models:
  - name: customers
    semantic_model: true
    columns:
      - name: customer_id
        entity: primary
      - name: country
        dimension: categorical
      - name: signed_up_at
        dimension: time
        granularity: month
    metrics:
      - name: customer_count
        type: simple
        agg: count_distinct
        expr: customer_id
      - name: lifetime_value
        type: simple
        agg: sum
        description: Sum of everything a customer paid.
"""
PAGE = (
    "---\nsummary: Revenue from dbt\nsl_refs:\n  - shop_dbt.orders.order_total\n  - shop_dbt.orders.revenue\n"
    "  - shop_dbt.orders.customer\n  - shop_dbt.metrics.total_revenue\n  - shop_dbt.customers.customer_count\n"
    "  - shop_dbt.customers.lifetime_value\n  - shop_dbt.customers\n  - shop_pg.orders.total_revenue\n"
    'meta:\n  bound_fingerprints:\n    shop_dbt.orders.order_total: "'
    + measure_fingerprint("sum(amount)")
    + '"\n---\n'
    "Total: `<< sl:shop_dbt.orders.order_total.expr >>` with << sl:shop_dbt.orders.order_total.agg >>; "
    "{{ sl:shop_dbt.orders.order_total.description }} Metric type << sl:shop_dbt.metrics.total_revenue.type >>. "
    "Revenue expr << sl:shop_dbt.orders.revenue.expr >>, grain << sl:shop_dbt.orders.grain >>, "
    "granularity << sl:shop_dbt.orders.ordered_at.granularity >>, LTV << sl:shop_dbt.customers.lifetime_value.agg >> "
    "of << sl:shop_dbt.customers.lifetime_value.expr >>. Canonic: << sl:shop_pg.orders.total_revenue.expr >>.\n"
)
FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": TOML,
    "analytics_dbt/dbt_project.yml": DBT_PROJECT,
    "analytics_dbt/models/marts/orders.yml": LEGACY,
    "analytics_dbt/models/marts/customers.yml": LATEST,
    "analytics_dbt/target/ignored.yml": "semantic_models: [ {name: never} ]\n",
    "knowledge/global/revenue.md": PAGE,
}


def test_references_resolve_and_directives_render(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    result = invoke(["build", "--repo", str(proj.root), "--format", "json"])
    assert json.loads(result.stdout)["diagnostics"] == []
    out = proj.root / ".knowl" / "build"
    folder = out / (out / "CURRENT").read_text().strip()
    page = records(folder)[0]
    assert page["body"] == (
        "Total: `amount` with sum; Order value in EUR. Metric type simple. Revenue expr revenue, "
        "grain order_id, granularity day, LTV sum of lifetime_value. Canonic: sum(amount).\n"
    )
    entities = {
        e["name"]: e for e in json.loads((folder / "entities.json").read_text())["entities"]
    }
    # A dbt measure fingerprints as the Canonic measure of what it computes.
    assert entities["shop_dbt.orders.revenue"]["fingerprint"] == measure_fingerprint("sum(revenue)")
    assert (
        entities["shop_dbt.orders.order_total"]["file"] == "analytics_dbt/models/marts/orders.yml"
    )
    assert entities["shop_dbt.orders.order_total"]["line"] == 22
    assert entities["shop_dbt.customers.customer_count"]["kind"] == "measure"
    assert entities["shop_dbt.metrics.customer_count"]["kind"] == "metric"
    assert entities["shop_dbt.customers.country"]["kind"] == "dimension"
    assert (
        entities["shop_dbt.orders"]["kind"] == "source"
        and entities["shop_pg.orders"]["kind"] == "source"
    )
    assert not any(name.endswith(".never") for name in entities)


def test_changed_measure_expr_is_drift_naming_the_commit(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    proj.write(
        {
            "analytics_dbt/models/marts/orders.yml": LEGACY.replace(
                "expr: amount", "expr: amount_net"
            )
        }
    )
    sha = proj.commit("Order total is net now")
    analysis = analyse(proj.root, load_config(proj.root), use_cache=False)
    kb201 = [d for d in analysis.diagnostics if d.code == "KB201"]
    assert len(kb201) == 1 and f"commit {sha[:12]}" in kb201[0].message
    assert "written against `sum(amount)`, now `sum(amount_net)`" in kb201[0].message


def test_removed_measure_is_kb101(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    proj.write(
        {
            "analytics_dbt/models/marts/orders.yml": LEGACY.replace(
                "      - name: revenue\n        agg: sum\n", ""
            )
        }
    )
    sha = proj.commit("Drop revenue")
    analysis = analyse(proj.root, load_config(proj.root), use_cache=False)
    kb101 = [d for d in analysis.diagnostics if d.code == "KB101"]
    assert [(d.line, d.column) for d in kb101] == [(5, 5)]
    assert f"removed in commit {sha[:12]}" in kb101[0].message


def test_dbt_file_findings_at_their_place(project: Callable[..., Project]) -> None:
    bad = (
        "semantic_models:\n  - name: orders\n    model: ref('x')\n    measures:\n"
        "      - name: total\n        expr: amount\n      - name: total\n        agg: sum\n"
        "  - name: bad name\nmetrics:\n  - name: untyped\n"
    )
    proj = project(
        {
            **FILES,
            "analytics_dbt/models/marts/orders.yml": bad,
            "analytics_dbt/models/broken.yml": "semantic_models: [\n",
            "knowledge/global/revenue.md": "x\n",
        }
    )
    analysis = analyse(proj.root, load_config(proj.root), use_cache=False)
    found = [(d.path, d.code, d.line, d.column) for d in analysis.diagnostics if d.code == "KB050"]
    assert found == [
        ("analytics_dbt/models/broken.yml", "KB050", 2, 1),
        ("analytics_dbt/models/marts/orders.yml", "KB050", 5, 9),
        ("analytics_dbt/models/marts/orders.yml", "KB050", 7, 15),
        ("analytics_dbt/models/marts/orders.yml", "KB050", 9, 11),
        ("analytics_dbt/models/marts/orders.yml", "KB050", 11, 5),
    ]


def test_canonic_and_dbt_in_one_project_and_name_clashes(project: Callable[..., Project]) -> None:
    # A dbt `orders` (connection shop_dbt) and a Canonic `orders` (shop_pg) coexist; a dbt
    # connection equal to a Canonic one makes the same names clash, reported in the dbt file.
    proj = project(
        {
            **FILES,
            "knowl.toml": TOML + "connection = 'shop_pg'\n",
            "knowledge/global/revenue.md": "x\n",
        }
    )
    analysis = analyse(proj.root, load_config(proj.root), use_cache=False)
    clash = [d for d in analysis.diagnostics if d.code == "KB050"]
    assert [(d.path, d.line) for d in clash] == [("analytics_dbt/models/marts/orders.yml", 3)]
    assert "already defined in semantics/shop/orders.yaml" in clash[0].message


@pytest.mark.parametrize(
    "toml, message",
    [
        ("[semantics.dbt]\nproject_dir = 'semantics/dbt'\n", "must not lie under semantics/"),
        ("[semantics.dbt]\nconnection = 'x'\n", "'semantics.dbt.project_dir': is required"),
        ("[semantics.dbt]\nproject_dir = 'd'\nconection = 'x'\n", "did you mean 'connection'"),
        ("[semantics]\ndbtt = {}\n", "did you mean 'dbt'"),
    ],
)
def test_dbt_configuration_errors(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "knowl.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)


def test_missing_dbt_project_file_is_a_finding(project: Callable[..., Project]) -> None:
    proj = project({"knowl.toml": "[semantics.dbt]\nproject_dir = 'nowhere'\n"})
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    assert [(d["path"], d["code"]) for d in json.loads(result.stdout)["diagnostics"]] == [
        ("nowhere/dbt_project.yml", "KB050")
    ]


def test_sample_repo_dbt_example_builds(tmp_path: Path) -> None:
    import shutil

    sample = Path(__file__).resolve().parent.parent / "sample_repo"
    copy = tmp_path / "sample"
    shutil.copytree(sample, copy, ignore=shutil.ignore_patterns(".knowl"))
    Project(copy).commit("sample")
    result = build(copy, load_config(copy))
    # The demo's one finding is the drift it demonstrates (tests/test_sample_repo.py).
    assert result.status == "published"
    assert [d.code for d in result.diagnostics] == ["KB201"]
    names = {e for e in analyse(copy, load_config(copy)).layer.entities}
    assert any(name.startswith("marketing_dbt.") for name in names)
