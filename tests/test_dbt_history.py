"""A dbt project's history on real git: fingerprints cover what a definition computes, drift
names the change that made it (before and after), and a renamed model becomes a `fix` proposal.

One repository is built per module. Its history, one commit a day from 2026-01-01:

    initial   order_value is median(amount); weekly_value a 7-day cumulative metric
    describe  only descriptions change (no definition does)
    p50       order_value: agg median -> percentile, agg_params percentile 0.5
    touch     descriptions again, and a page deleted
    p90       order_value: agg_params percentile 0.5 -> 0.9
    window    weekly_value: type_params window 7 days -> 14 days
    number    order_count: expr "1" -> 1 (the same expression)
    rename    semantic model customers -> clients
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config_loader import load_config
from knowl_build.pipeline.analysis import analyse
from knowl_build.semantic.layer import fingerprint_of, measure_fingerprint
from knowl_build.writes import fix
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke, records

TOML = "[rules]\nKB202 = 'off'\n[semantics.dbt]\nproject_dir = 'analytics_dbt'\n"
DBT = "name: shop_dbt\nversion: '1.0.0'\nconfig-version: 2\nmodel-paths: [models]\n"
ORDERS_FILE = "analytics_dbt/models/orders.yml"
CUSTOMERS_FILE = "analytics_dbt/models/customers.yml"
ORDERS = """\
version: 2
semantic_models:
  - name: orders
    description: Orders placed on the web shop.
    model: ref('fct_orders')
    entities:
      - name: order_id
        type: primary
    measures:
      - name: order_value
        description: Typical order value.
        agg: median
        expr: amount
      - name: order_count
        agg: sum
        expr: "1"
metrics:
  - name: weekly_value
    description: Order value over a week.
    type: cumulative
    type_params:
      measure: order_value
      window: 7 days
"""
CUSTOMERS = """\
version: 2
semantic_models:
  - name: customers
    description: One row per customer.
    model: ref('dim_customers')
    entities:
      - name: customer_id
        type: primary
    measures:
      - name: lifetime_value
        agg: sum
        expr: paid_total
"""
P50 = ORDERS.replace(
    "agg: median\n", "agg: percentile\n        agg_params:\n          percentile: 0.5\n"
)
P90 = P50.replace("percentile: 0.5", "percentile: 0.9")

# The documented bases (docs/concepts/drift-and-freshness.md), hashed as Canonic hashes.
FP_MEDIAN = measure_fingerprint("median(amount)")
FP_P50 = fingerprint_of({"expr": "percentile(amount)", "agg_params": {"percentile": "0.5"}})
FP_P90 = fingerprint_of({"expr": "percentile(amount)", "agg_params": {"percentile": "0.9"}})
FP_COUNT = measure_fingerprint("sum(1)")
FP_WEEK = fingerprint_of(
    {"type": "cumulative", "type_params": {"measure": "order_value", "window": "7 days"}}
)
FP_TWO_WEEKS = fingerprint_of(
    {"type": "cumulative", "type_params": {"measure": "order_value", "window": "14 days"}}
)
FP_LIFETIME = measure_fingerprint("sum(paid_total)")

VALUE_PAGE = "knowledge/global/order-value.md"
VALUE = f"""\
---
summary: Order value
sl_refs:
  - shop_dbt.orders.order_value
  - shop_dbt.orders.order_count
  - shop_dbt.metrics.weekly_value
meta:
  last_validated_at: "2026-01-01T12:00:00Z"
  bound_fingerprints:
    shop_dbt.orders.order_value: "{FP_MEDIAN}"
    shop_dbt.orders.order_count: "{FP_COUNT}"
    shop_dbt.metrics.weekly_value: "{FP_WEEK}"
---
The typical order: << sl:shop_dbt.orders.order_value.agg >>.
"""
# Bound to the p50 version without listing it in sl_refs: KB107, and drift all the same.
P90_PAGE = "knowledge/global/p90.md"
P90_TEXT = f"""\
---
summary: The order value percentile
meta:
  bound_fingerprints:
    shop_dbt.orders.order_value: "{FP_P50}"
---
Body.
"""
CUSTOMERS_PAGE = "knowledge/global/customers.md"
CUSTOMERS_TEXT = f"""\
---
summary: Customers
sl_refs:
  - shop_dbt.customers
  - shop_dbt.customers.lifetime_value
refs: [old-notes, order-value]
meta:
  last_validated_at: "2026-01-02T00:00:00Z"
  bound_fingerprints:
    shop_dbt.customers.lifetime_value: "{FP_LIFETIME}"
---
From << sl:shop_dbt.customers.table >>; value {{{{ sl:shop_dbt.customers.lifetime_value.expr }}}}.
"""
# Canonic's own example binds `sha256:abc`: accepted, and drift (it matches nothing live).
CANONIC_PAGE = "knowledge/global/revenue.md"
CANONIC_TEXT = f"""\
---
summary: Revenue
sl_refs: [shop_pg.orders.total_revenue, shop_pg.orders]
meta:
  bound_fingerprints:
    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"
    shop_pg.orders: "sha256:abc"
---
Body.
"""
OLD_NOTES = "knowledge/global/old-notes.md"
FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": TOML,
    "analytics_dbt/dbt_project.yml": DBT,
    ORDERS_FILE: ORDERS,
    CUSTOMERS_FILE: CUSTOMERS,
    VALUE_PAGE: VALUE,
    P90_PAGE: P90_TEXT,
    CUSTOMERS_PAGE: CUSTOMERS_TEXT,
    CANONIC_PAGE: CANONIC_TEXT,
    OLD_NOTES: "---\nsummary: Old notes\n---\nBody.\n",
}
SUBJECTS = {
    "initial": "Initial project",
    "describe": "Describe order value",
    "p50": "Order value is the median as a percentile",
    "touch": "Reword descriptions, drop old notes",
    "p90": "Order value is the 90th percentile",
    "window": "Weekly value over two weeks",
    "number": "Order count expr as a number",
    "rename": "Rename customers to clients",
}


@dataclass
class History:
    root: Path
    c: dict[str, str]  # commit name -> full id

    def day(self, name: str) -> str:
        return f"2026-01-{1 + list(SUBJECTS).index(name):02d}"

    def where(self, name: str) -> str:
        return f'commit {self.c[name][:12]} ({self.day(name)}, "{SUBJECTS[name]}")'

    def info(self, name: str) -> dict[str, Any]:
        return {
            "commit": self.c[name],
            "date": f"{self.day(name)}T12:00:00Z",
            "author": "Test Author",
            "subject": SUBJECTS[name],
        }

    def copy(self, target: Path) -> Path:
        shutil.copytree(self.root, target, ignore=shutil.ignore_patterns(".knowl"))
        return target


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    proj = Project(tmp_path_factory.mktemp("dbt_history") / "repo")
    proj.write({".gitignore": ".knowl/\n", **FILES})
    c = {"initial": proj.commit(SUBJECTS["initial"])}
    proj.write({ORDERS_FILE: ORDERS.replace("Typical order value.", "The usual order value.")})
    c["describe"] = proj.commit(SUBJECTS["describe"])
    proj.write({ORDERS_FILE: P50})
    c["p50"] = proj.commit(SUBJECTS["p50"])
    proj.write(
        {
            ORDERS_FILE: P50.replace("Order value over a week.", "Seven days of order value."),
            CUSTOMERS_FILE: CUSTOMERS.replace("One row per customer.", "Every customer."),
        }
    ).remove(OLD_NOTES)
    c["touch"] = proj.commit(SUBJECTS["touch"])
    proj.write({ORDERS_FILE: P90})
    c["p90"] = proj.commit(SUBJECTS["p90"])
    proj.write({ORDERS_FILE: P90.replace("window: 7 days", "window: 14 days")})
    c["window"] = proj.commit(SUBJECTS["window"])
    number = P90.replace("window: 7 days", "window: 14 days").replace('expr: "1"', "expr: 1")
    proj.write({ORDERS_FILE: number})
    c["number"] = proj.commit(SUBJECTS["number"])
    renamed = CUSTOMERS.replace("One row per customer.", "Every customer.")
    proj.write({CUSTOMERS_FILE: renamed.replace("name: customers", "name: clients")})
    c["rename"] = proj.commit(SUBJECTS["rename"])
    return History(proj.root, c)


def check(root: Path, code: int = 1) -> list[dict[str, Any]]:
    result = invoke(["check", "--repo", str(root), "--format", "json"], code=code)
    assert "Traceback" not in result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)["diagnostics"]
    return rows


def test_drift_names_the_first_change_after_the_bound_version_and_each_since(
    history: History,
) -> None:
    rows = [r for r in check(history.root) if r["code"] in ("KB201", "KB203", "KB107", "KB002")]
    got = [(r["code"], r["path"], r["line"], r["column"], r["message"]) for r in rows]
    p50, p90, window = history.where("p50"), history.where("p90"), history.where("window")
    value_change = "-`median(amount)` +`percentile(amount)` +`agg_params.percentile: 0.9`"
    # Both drifted entities are bound: KB201 alone says so (no KB203 for the same change).
    assert got == [
        (
            "KB201",
            VALUE_PAGE,
            10,
            5,
            f"'shop_dbt.orders.order_value' drifted: its definition changed: {value_change}; "
            f"changed in {p50}, then in {p90}",
        ),
        (
            "KB201",
            VALUE_PAGE,
            12,
            5,
            "'shop_dbt.metrics.weekly_value' drifted: its definition changed: "
            f"-`type_params.window: 7 days` +`type_params.window: 14 days`; changed in {window}",
        ),
        (
            "KB107",
            P90_PAGE,
            5,
            5,
            "bound fingerprint 'shop_dbt.orders.order_value' is not in the page's sl_refs",
        ),
        (
            "KB201",
            P90_PAGE,
            5,
            5,
            "'shop_dbt.orders.order_value' drifted: its definition changed: "
            f"-`agg_params.percentile: 0.5` +`agg_params.percentile: 0.9`; changed in {p90}",
        ),
        (
            "KB201",
            CANONIC_PAGE,
            7,
            5,
            "'shop_pg.orders' drifted: written against a definition not found in history, "
            "now `connection: shop_pg; description: One row per order.; grain: [order_id]; "
            "name: orders; table: analytics.fct_orders`",
        ),
    ]


def test_entities_fingerprint_what_they_compute(history: History) -> None:
    analysis = analyse(history.root, load_config(history.root), use_cache=False)
    layer, past = analysis.layer, analysis.history
    assert past is not None
    value = layer.entities["shop_dbt.orders.order_value"]
    assert value.fingerprint == FP_P90
    assert value.fingerprinted == "percentile(amount)\nagg_params.percentile: 0.9"
    assert layer.entities["shop_dbt.metrics.weekly_value"].fingerprint == FP_TWO_WEEKS
    # `1` and "1" are one expression: the number commit changed nothing.
    count = past.entities["shop_dbt.orders.order_count"]
    assert layer.entities["shop_dbt.orders.order_count"].fingerprint == FP_COUNT
    assert (count.changed_in, count.versions) == (None, [(history.c["initial"], FP_COUNT)])
    # Descriptions are not definitions: the commits that only touched them are no versions.
    assert past.entities["shop_dbt.orders.order_value"].versions == [
        (history.c["initial"], FP_MEDIAN),
        (history.c["p50"], FP_P50),
        (history.c["p90"], FP_P90),
    ]
    assert past.entities["shop_dbt.metrics.weekly_value"].versions == [
        (history.c["initial"], FP_WEEK),
        (history.c["window"], FP_TWO_WEEKS),
    ]
    # Canonic measures keep Canonic's fingerprint.
    assert layer.entities["shop_pg.orders.total_revenue"].fingerprint == FP_SUM_AMOUNT
    # The rename: each entity of the model, to the same entity under the new name.
    renamed = {n: r.renamed_to for n, r in past.entities.items() if r.renamed_to is not None}
    assert renamed == {
        "shop_dbt.customers": "shop_dbt.clients",
        "shop_dbt.customers.customer_id": "shop_dbt.clients.customer_id",
        "shop_dbt.customers.lifetime_value": "shop_dbt.clients.lifetime_value",
    }
    assert {past.entities[n].removed_in for n in renamed} == {history.c["rename"]}


def test_the_artifact_and_show_give_before_after_and_every_commit(
    history: History, tmp_path: Path
) -> None:
    root = history.copy(tmp_path / "repo")
    invoke(["build", "--repo", str(root), "--allow-errors"])
    out = root / ".knowl" / "build"
    folder = out / (out / "CURRENT").read_text().strip()
    page = next(r for r in records(folder) if r["path"] == VALUE_PAGE)
    assert page["drift"] == [
        {
            "entity": "shop_dbt.orders.order_value",
            "bound": FP_MEDIAN,
            "live": FP_P90,
            "changed_in": history.info("p50"),
            "changes": [history.info("p50"), history.info("p90")],
            "bound_expr": "median(amount)",
            "live_expr": "percentile(amount)\nagg_params.percentile: 0.9",
            "diff": "-median(amount)\n+percentile(amount)\n+agg_params.percentile: 0.9",
        },
        {
            "entity": "shop_dbt.metrics.weekly_value",
            "bound": FP_WEEK,
            "live": FP_TWO_WEEKS,
            "changed_in": history.info("window"),
            "changes": [history.info("window")],
            "bound_expr": "type: cumulative\ntype_params.measure: order_value\n"
            "type_params.window: 7 days",
            "live_expr": "type: cumulative\ntype_params.measure: order_value\n"
            "type_params.window: 14 days",
            "diff": "-type_params.window: 7 days\n+type_params.window: 14 days",
        },
    ]
    shown = invoke(["show", "order-value", "--repo", str(root)]).stdout
    p50, p90, window = (history.c[n][:12] for n in ("p50", "p90", "window"))
    drift_lines = [line for line in shown.splitlines() if line.startswith(("  drift", "    "))]
    assert drift_lines == [
        f"  drift shop_dbt.orders.order_value: its definition changed in {p50}, {p90}:",
        "    -median(amount)",
        "    +percentile(amount)",
        "    +agg_params.percentile: 0.9",
        f"  drift shop_dbt.metrics.weekly_value: its definition changed in {window}:",
        "    -type_params.window: 7 days",
        "    +type_params.window: 14 days",
    ]
    assert "None" not in shown and "?" not in shown


def test_a_renamed_model_is_named_in_findings(history: History) -> None:
    rows = [r for r in check(history.root) if r["code"] in ("KB101", "KB106")]
    rename = history.where("rename")
    hint = "run knowl fix to propose the rename (knowl fix --apply writes it)"
    assert [(r["code"], r["line"], r["column"], r["message"], r["hint"]) for r in rows] == [
        (
            "KB101",
            4,
            5,
            "sl_ref 'shop_dbt.customers' resolves to no live semantic entity; it was renamed "
            f"to 'shop_dbt.clients' in {rename}",
            f"did you mean 'shop_dbt.clients'? {hint}",
        ),
        (
            "KB101",
            5,
            5,
            "sl_ref 'shop_dbt.customers.lifetime_value' resolves to no live semantic entity; it "
            f"was renamed to 'shop_dbt.clients.lifetime_value' in {rename}",
            f"did you mean 'shop_dbt.clients.lifetime_value'? {hint}",
        ),
        (
            "KB106",
            12,
            6,
            "<< sl:shop_dbt.customers.table >> names no semantic entity 'shop_dbt.customers'; "
            f"it was renamed to 'shop_dbt.clients' in {rename}",
            f"did you mean 'shop_dbt.clients'? {hint}",
        ),
        (
            "KB106",
            12,
            47,
            "{{ sl:shop_dbt.customers.lifetime_value.expr }} names no semantic entity "
            "'shop_dbt.customers.lifetime_value'; it was renamed to "
            f"'shop_dbt.clients.lifetime_value' in {rename}",
            f"did you mean 'shop_dbt.clients.lifetime_value'? {hint}",
        ),
    ]
    assert {r["path"] for r in rows} == {CUSTOMERS_PAGE}


def test_fix_proposes_the_rename_and_drops_refs_to_deleted_pages(
    history: History, tmp_path: Path
) -> None:
    root = history.copy(tmp_path / "repo")
    plan = fix.plan(analyse(root, load_config(root), use_cache=False))
    assert [(p.path, p.renamed, p.removed, p.removed_pages) for p in plan.proposals] == [
        (
            CUSTOMERS_PAGE,
            (
                ("shop_dbt.customers", "shop_dbt.clients"),
                ("shop_dbt.customers.lifetime_value", "shop_dbt.clients.lifetime_value"),
            ),
            (),
            ("old-notes",),
        )
    ]
    after = f"""\
---
summary: Customers
sl_refs:
  - shop_dbt.clients
  - shop_dbt.clients.lifetime_value
refs: [order-value]
meta:
  last_validated_at: "2026-01-02T00:00:00Z"
  bound_fingerprints:
    shop_dbt.clients.lifetime_value: "{FP_LIFETIME}"
---
From << sl:shop_dbt.clients.table >>; value {{{{ sl:shop_dbt.clients.lifetime_value.expr }}}}.
"""
    assert plan.proposals[0].after == after  # a rename keeps the page's validation
    proposed = invoke(["fix", "--repo", str(root)], code=1)
    assert proposed.stdout == plan.proposals[0].diff()
    invoke(["fix", "--repo", str(root), "--apply"])
    assert (root / CUSTOMERS_PAGE).read_text() == after
    codes = {r["code"] for r in check(root, code=0)}
    assert not codes & {"KB101", "KB102", "KB106"}


@pytest.mark.parametrize(
    "measure",
    [
        "{ name: m, agg: [sum], expr: {a: 1} }",
        "{ name: m, agg: sum, agg_params: 7, filter: [1, {x: null}] }",
        "{ name: m, agg: percentile, agg_params: {percentile: .nan}, create_metric: yes }",
        "{ name: m }",
    ],
)
def test_odd_definitions_are_findings_or_fingerprints_never_tracebacks(
    measure: str, tmp_path: Path
) -> None:
    metrics = (
        "metrics:\n  - { name: x, type: ratio, type_params: [1, 2] }\n"
        "  - { name: y, type: derived, type_params: 5, filter: {a: [b]} }\n"
    )
    model = (
        "semantic_models:\n  - name: odd\n    model: ref('odd')\n"
        f"    measures:\n      - {measure}\n{metrics}"
    )
    proj = Project(tmp_path / "repo")
    proj.write(
        {
            "knowl.toml": TOML,
            "analytics_dbt/dbt_project.yml": DBT,
            ORDERS_FILE: model,
            VALUE_PAGE: "---\nsummary: x\nsl_refs: [shop_dbt.odd.m]\n"
            'meta:\n  bound_fingerprints:\n    shop_dbt.odd.m: "sha256:0"\n---\nBody.\n',
        }
    )
    proj.commit("odd")
    proj.write({ORDERS_FILE: model.replace("name: m", "name: n")})
    proj.commit("rename the odd measure")
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    assert "Traceback" not in result.output
    codes = [d["code"] for d in json.loads(result.stdout)["diagnostics"]]
    assert "KB101" in codes and "KB002" not in codes


def test_kb203_names_a_joins_change_and_a_renamed_measure_is_proposed(
    project: Callable[..., Project],
) -> None:
    orders = SEMANTICS["semantics/shop/orders.yaml"] + (
        'joins: [ { to: customers, on: "orders.customer_id = customers.customer_id" } ]\n'
    )
    page = (
        "---\nsummary: Orders\nsl_refs: [shop_pg.orders, shop_pg.orders.total_revenue]\n"
        'meta:\n  last_validated_at: "2026-01-01T12:00:00Z"\n---\n'
        "Revenue is << sl:shop_pg.orders.total_revenue.expr >>.\n"
    )
    proj = project({"semantics/shop/orders.yaml": orders, "knowledge/global/orders.md": page})
    proj.write(
        {
            "semantics/shop/orders.yaml": orders.replace(
                "customers.customer_id", "customers.id"
            ).replace("name: total_revenue", "name: revenue")
        }
    )
    sha = proj.commit("Join on customers.id; total_revenue is revenue")
    rows = check(proj.root)
    where = f'commit {sha[:12]} (2026-01-02, "Join on customers.id; total_revenue is revenue")'
    assert [(r["code"], r["message"]) for r in rows if r["code"] in ("KB101", "KB203")] == [
        (
            "KB203",
            "'shop_pg.orders' changed after the page was last validated (2026-01-01): "
            f"{where}: -`joins[0].on: orders.customer_id = customers.customer_id` "
            "+`joins[0].on: orders.customer_id = customers.id`",
        ),
        (
            "KB101",
            "sl_ref 'shop_pg.orders.total_revenue' resolves to no live semantic entity; it was "
            f"renamed to 'shop_pg.orders.revenue' in {where}",
        ),
    ]
    invoke(["fix", "--repo", str(proj.root), "--apply"])
    assert (proj.root / "knowledge/global/orders.md").read_text() == page.replace(
        "total_revenue", "revenue"
    )
