"""Renames that also change a member (issue 22, item 9), on real git history.

A semantic model renamed in the commit that changes one of its measures: the measure is a
rename too (it keeps its name under the renamed model), so KB101 and KB106 name the new name,
`knowl fix` proposes it, and the change of definition is drift against the new entity, before
the fix and after it. Never "removed", and one page's KB101 and KB106 say the same.

The repository, one commit a day from 2026-01-01:

    initial   dbt model customers (lifetime_value sum(paid_total), orders_placed, refunds);
              Canonic source orders (total_revenue sum(amount))
    rename    customers -> clients, lifetime_value now sum(paid_total_eur), refunds dropped;
              Canonic orders -> sales (its fingerprint holds its name: matched by its
              members), total_revenue now sum(amount_net)
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config_loader import load_config
from knowl_build.pipeline.analysis import analyse
from knowl_build.semantic.layer import measure_fingerprint
from knowl_build.writes import fix
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke, records

TOML = "[rules]\nKB202 = 'off'\n[semantics.dbt]\nproject_dir = 'analytics_dbt'\n"
DBT = "name: shop_dbt\nversion: '1.0.0'\nconfig-version: 2\nmodel-paths: [models]\n"
CUSTOMERS_FILE = "analytics_dbt/models/customers.yml"
ORDERS_FILE = "semantics/shop/orders.yaml"
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
      - name: orders_placed
        agg: count
        expr: order_id
      - name: refunds
        agg: sum
        expr: refunded
"""
CLIENTS = (
    CUSTOMERS.replace("name: customers", "name: clients")
    .replace("expr: paid_total", "expr: paid_total_eur")
    .replace("      - name: refunds\n        agg: sum\n        expr: refunded\n", "")
)
SALES = (
    SEMANTICS[ORDERS_FILE]
    .replace("name: orders", "name: sales")
    .replace('expr: "sum(amount)"', 'expr: "sum(amount_net)"')
)
FP_LIFETIME = measure_fingerprint("sum(paid_total)")
FP_LIFETIME_EUR = measure_fingerprint("sum(paid_total_eur)")
FP_NET = measure_fingerprint("sum(amount_net)")

BOUND_PAGE = "knowledge/global/customers.md"
BOUND = f"""\
---
summary: Customers
sl_refs:
  - shop_dbt.customers
  - shop_dbt.customers.lifetime_value
meta:
  last_validated_at: "2026-01-01T12:00:00Z"
  bound_fingerprints:
    shop_dbt.customers.lifetime_value: "{FP_LIFETIME}"
---
Lifetime value is {{{{ sl:shop_dbt.customers.lifetime_value.expr }}}}.
"""
# No fingerprint bound: after the rename is fixed, the change is KB203's.
UNBOUND_PAGE = "knowledge/global/value.md"
UNBOUND = """\
---
summary: Value
sl_refs: [shop_dbt.customers.lifetime_value, shop_dbt.customers.refunds]
meta:
  last_validated_at: "2026-01-01T12:00:00Z"
---
Body.
"""
REVENUE_PAGE = "knowledge/global/revenue.md"
REVENUE = f"""\
---
summary: Revenue
sl_refs: [shop_pg.orders.total_revenue]
meta:
  last_validated_at: "2026-01-01T12:00:00Z"
  bound_fingerprints:
    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"
---
Revenue is << sl:shop_pg.orders.total_revenue.expr >>.
"""
SUBJECT = "Rename customers to clients and orders to sales; EUR and net amounts"
HINT = "run knowl fix to propose the rename (knowl fix --apply writes it)"


@dataclass
class Repo:
    root: Path
    rename: str  # the rename commit's id

    @property
    def where(self) -> str:
        return f'commit {self.rename[:12]} (2026-01-02, "{SUBJECT}")'

    def copy(self, target: Path) -> Path:
        shutil.copytree(self.root, target, ignore=shutil.ignore_patterns(".knowl"))
        return target


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    proj = Project(tmp_path_factory.mktemp("drift_renames") / "repo")
    proj.write(
        {
            ".gitignore": ".knowl/\n",
            "knowl.toml": TOML,
            "analytics_dbt/dbt_project.yml": DBT,
            CUSTOMERS_FILE: CUSTOMERS,
            **SEMANTICS,
            BOUND_PAGE: BOUND,
            UNBOUND_PAGE: UNBOUND,
            REVENUE_PAGE: REVENUE,
        }
    )
    proj.commit("Initial project")
    proj.write({CUSTOMERS_FILE: CLIENTS, ORDERS_FILE: SALES})
    return Repo(proj.root, proj.commit(SUBJECT))


def check(root: Path, code: int = 1) -> list[tuple[str, str, int, int, str, str | None]]:
    result = invoke(["check", "--repo", str(root), "--format", "json"], code=code)
    rows: list[dict[str, Any]] = json.loads(result.stdout)["diagnostics"]
    return [(r["code"], r["path"], r["line"], r["column"], r["message"], r["hint"]) for r in rows]


def test_members_of_a_renamed_model_are_renames_even_when_they_changed(repo: Repo) -> None:
    analysis = analyse(repo.root, load_config(repo.root), use_cache=False)
    assert analysis.history is not None
    renamed = {
        name: record.renamed_to
        for name, record in analysis.history.entities.items()
        if record.renamed_to is not None
    }
    assert renamed == {
        "shop_dbt.customers": "shop_dbt.clients",
        "shop_dbt.customers.customer_id": "shop_dbt.clients.customer_id",
        "shop_dbt.customers.lifetime_value": "shop_dbt.clients.lifetime_value",
        "shop_dbt.customers.orders_placed": "shop_dbt.clients.orders_placed",
        # A Canonic source's fingerprint holds its name: it is matched by its members.
        "shop_pg.orders": "shop_pg.sales",
        "shop_pg.orders.amount": "shop_pg.sales.amount",
        "shop_pg.orders.order_id": "shop_pg.sales.order_id",
        "shop_pg.orders.status": "shop_pg.sales.status",
        "shop_pg.orders.total_revenue": "shop_pg.sales.total_revenue",
    }
    # A measure gone from the renamed model is a removal.
    refunds = analysis.history.entities["shop_dbt.customers.refunds"]
    assert (refunds.removed_in, refunds.renamed_to) == (repo.rename, None)
    # The new name's past holds the old name's versions: the change came with the rename.
    lineage = analysis.history.lineage("shop_dbt.clients.lifetime_value")
    assert lineage is not None
    assert lineage.versions[1:] == [(repo.rename, FP_LIFETIME_EUR)]
    assert lineage.versions[0][1] == FP_LIFETIME and lineage.changed_in == repo.rename


def test_the_rename_and_the_drift_are_each_reported_never_a_removal(repo: Repo) -> None:
    where = repo.where
    lifetime = "'shop_dbt.customers.lifetime_value'"
    new = "'shop_dbt.clients.lifetime_value'"
    review = "after checking the page against the live definitions, run: knowl review "
    assert check(repo.root) == [
        (
            "KB101",
            BOUND_PAGE,
            4,
            5,
            "sl_ref 'shop_dbt.customers' resolves to no live semantic entity; it was renamed "
            f"to 'shop_dbt.clients' in {where}",
            f"did you mean 'shop_dbt.clients'? {HINT}",
        ),
        (
            "KB101",
            BOUND_PAGE,
            5,
            5,
            f"sl_ref {lifetime[1:-1]!r} resolves to no live semantic entity; it was renamed to "
            f"{new} in {where}",
            f"did you mean {new}? {HINT}",
        ),
        (
            "KB201",
            BOUND_PAGE,
            9,
            5,
            f"{lifetime} (renamed to {new}) drifted: written against `sum(paid_total)`, now "
            f"`sum(paid_total_eur)`; changed in {where}",
            review + "customers",
        ),
        (
            "KB106",
            BOUND_PAGE,
            11,
            19,
            "{{ sl:shop_dbt.customers.lifetime_value.expr }} names no semantic entity "
            f"{lifetime}; it was renamed to {new} in {where}",
            f"did you mean {new}? {HINT}",
        ),
        (
            "KB101",
            REVENUE_PAGE,
            3,
            11,
            "sl_ref 'shop_pg.orders.total_revenue' resolves to no live semantic entity; it was "
            f"renamed to 'shop_pg.sales.total_revenue' in {where}",
            f"did you mean 'shop_pg.sales.total_revenue'? {HINT}",
        ),
        (
            "KB201",
            REVENUE_PAGE,
            7,
            5,
            "'shop_pg.orders.total_revenue' (renamed to 'shop_pg.sales.total_revenue') drifted: "
            f"written against `sum(amount)`, now `sum(amount_net)`; changed in {where}",
            review + "revenue",
        ),
        (
            "KB106",
            REVENUE_PAGE,
            9,
            12,
            "<< sl:shop_pg.orders.total_revenue.expr >> names no semantic entity "
            "'shop_pg.orders.total_revenue'; it was renamed to 'shop_pg.sales.total_revenue' "
            f"in {where}",
            f"did you mean 'shop_pg.sales.total_revenue'? {HINT}",
        ),
        (
            "KB101",
            UNBOUND_PAGE,
            3,
            11,
            f"sl_ref {lifetime[1:-1]!r} resolves to no live semantic entity; it was renamed to "
            f"{new} in {where}",
            f"did you mean {new}? {HINT}",
        ),
        (
            "KB101",
            UNBOUND_PAGE,
            3,
            46,
            "sl_ref 'shop_dbt.customers.refunds' resolves to no live semantic entity; it was "
            f"removed in {where}",
            "run knowl fix to propose removing it (knowl fix --apply writes the change)",
        ),
    ]


def test_the_drift_is_in_the_artifact_and_the_page_needs_review(repo: Repo, tmp_path: Path) -> None:
    root = repo.copy(tmp_path / "repo")
    invoke(["build", "--repo", str(root), "--allow-errors"])
    out = root / ".knowl" / "build"
    page = next(
        r for r in records(out / (out / "CURRENT").read_text().strip()) if r["path"] == BOUND_PAGE
    )
    assert page["freshness"]["value"] == "needs_review"
    assert page["drift"] == [
        {
            "entity": "shop_dbt.customers.lifetime_value",
            "bound": FP_LIFETIME,
            "live": FP_LIFETIME_EUR,
            "changed_in": {
                "commit": repo.rename,
                "date": "2026-01-02T12:00:00Z",
                "author": "Test Author",
                "subject": SUBJECT,
            },
            "changes": [
                {
                    "commit": repo.rename,
                    "date": "2026-01-02T12:00:00Z",
                    "author": "Test Author",
                    "subject": SUBJECT,
                }
            ],
            "bound_expr": "sum(paid_total)",
            "live_expr": "sum(paid_total_eur)",
        }
    ]
    shown = invoke(["search", "lifetime value", "--repo", str(root), "--json"]).stdout
    hit = next(h for h in json.loads(shown)["hits"] if h.get("page") == "customers")
    assert hit["drift_flag"] is True


def test_fix_proposes_the_rename_and_the_drift_stays_on_the_new_name(
    repo: Repo, tmp_path: Path
) -> None:
    root = repo.copy(tmp_path / "repo")
    plan = fix.plan(analyse(root, load_config(root), use_cache=False))
    assert [(p.path, p.renamed, p.removed) for p in plan.proposals] == [
        (
            BOUND_PAGE,
            (
                ("shop_dbt.customers", "shop_dbt.clients"),
                ("shop_dbt.customers.lifetime_value", "shop_dbt.clients.lifetime_value"),
            ),
            (),
        ),
        (
            REVENUE_PAGE,
            (("shop_pg.orders.total_revenue", "shop_pg.sales.total_revenue"),),
            (),
        ),
        (
            UNBOUND_PAGE,
            (("shop_dbt.customers.lifetime_value", "shop_dbt.clients.lifetime_value"),),
            ("shop_dbt.customers.refunds",),
        ),
    ]
    invoke(["fix", "--repo", str(root), "--apply"])
    assert (root / BOUND_PAGE).read_text() == BOUND.replace("customers.", "clients.").replace(
        "shop_dbt.customers\n", "shop_dbt.clients\n"
    )
    where = repo.where
    review = "after checking the page against the live definitions, run: knowl review "
    # The rename is made; what changed with it is drift on the new name (bound), or a change
    # after validation (unbound; the removal of refunds cleared its validation date).
    assert check(root, code=0) == [
        (
            "KB201",
            BOUND_PAGE,
            9,
            5,
            "'shop_dbt.clients.lifetime_value' drifted: written against `sum(paid_total)`, now "
            f"`sum(paid_total_eur)`; changed in {where}",
            review + "customers",
        ),
        (
            "KB201",
            REVENUE_PAGE,
            7,
            5,
            "'shop_pg.sales.total_revenue' drifted: written against `sum(amount)`, now "
            f"`sum(amount_net)`; changed in {where}",
            review + "revenue",
        ),
    ]


def test_an_unbound_page_after_the_fix_is_told_the_rename_changed_the_measure(
    repo: Repo, tmp_path: Path
) -> None:
    root = repo.copy(tmp_path / "repo")
    text = UNBOUND.replace(", shop_dbt.customers.refunds", "").replace("customers.", "clients.")
    (root / UNBOUND_PAGE).write_text(text)
    rows = [r for r in check(root) if r[1] == UNBOUND_PAGE]
    assert rows == [
        (
            "KB203",
            UNBOUND_PAGE,
            3,
            11,
            "'shop_dbt.clients.lifetime_value' changed after the page was last validated "
            f"(2026-01-01): {repo.where}: `sum(paid_total)` became `sum(paid_total_eur)`",
            "after checking the page against the live definitions, run: knowl review value",
        )
    ]
