"""One change, one finding (issue 22, item 10), on real git history.

An entity the page binds a fingerprint for is compared by that fingerprint: a change is
KB201 alone. KB203 is for the `sl_refs` entities the page binds no fingerprint for. Before,
every drifted page got both for the same commit.

The repository, one commit a day from 2026-01-01:

    initial   orders: total_revenue sum(amount), status dimension labelled Status
    net       total_revenue is sum(amount_net); the status dimension is labelled State
    refunds   total_revenue is sum(amount_net) - sum(refunds)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from knowl_build.semantic.layer import measure_fingerprint
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

ORDERS = "semantics/shop/orders.yaml"
PAGE = "knowledge/global/revenue.md"
REVIEW = "after checking the page against the live definitions, run: knowl review revenue"
TOML = "[rules]\nKB202 = 'off'\n"


def page(bound: str) -> str:
    return (
        "---\nsummary: Revenue\n"
        "sl_refs: [shop_pg.orders.total_revenue, shop_pg.orders.status]\n"
        'meta:\n  last_validated_at: "2026-01-01T12:00:00Z"\n  bound_fingerprints:\n'
        f'    shop_pg.orders.total_revenue: "{bound}"\n'
        "---\nRevenue by status.\n"
    )


def history(project: Callable[..., Project], bound: str = FP_SUM_AMOUNT) -> dict[str, str]:
    proj = project({**SEMANTICS, "knowl.toml": TOML, PAGE: page(bound)})
    net = (
        SEMANTICS[ORDERS]
        .replace('"sum(amount)"', '"sum(amount_net)"')
        .replace("label: Status", "label: State")
    )
    proj.write({ORDERS: net})
    c = {"net": proj.commit("Net revenue; status is the state")}
    proj.write({ORDERS: net.replace('"sum(amount_net)"', '"sum(amount_net) - sum(refunds)"')})
    c["refunds"] = proj.commit("Revenue net of refunds")
    c["root"] = str(proj.root)
    return c


def findings(root: str, code: int = 0) -> list[tuple[str, int, int, str]]:
    # Warnings only: exit 0.
    result = invoke(["check", "--repo", root, "--format", "json"], code=code)
    rows: list[dict[str, Any]] = json.loads(result.stdout)["diagnostics"]
    assert all(r["path"] == PAGE for r in rows)
    return [(r["code"], r["line"], r["column"], r["message"]) for r in rows]


def where(c: dict[str, str], name: str, day: str, subject: str) -> str:
    return f'commit {c[name][:12]} (2026-01-{day}, "{subject}")'


def test_a_bound_entity_is_kb201_alone_an_unbound_one_kb203(
    project: Callable[..., Project],
) -> None:
    c = history(project)
    net = where(c, "net", "02", "Net revenue; status is the state")
    refunds = where(c, "refunds", "03", "Revenue net of refunds")
    assert findings(c["root"]) == [
        (
            "KB203",
            3,
            41,
            "'shop_pg.orders.status' changed after the page was last validated (2026-01-01): "
            f"{net}: -`label: Status` +`label: State`",
        ),
        (
            "KB201",
            7,
            5,
            "'shop_pg.orders.total_revenue' drifted: written against `sum(amount)`, now "
            f"`sum(amount_net) - sum(refunds)`; changed in {net}, then in {refunds}",
        ),
    ]


def test_the_freshness_reasons_name_each_entity_once(
    project: Callable[..., Project],
) -> None:
    c = history(project)
    invoke(["build", "--repo", c["root"]])
    shown = json.loads(invoke(["show", "revenue", "--repo", c["root"], "--json"]).stdout)
    assert shown["freshness"]["value"] == "needs_review"
    reasons = [(r["code"], r["message"].split(" ")[0]) for r in shown["freshness"]["reasons"]]
    assert reasons == [
        ("KB201", "'shop_pg.orders.total_revenue'"),
        ("KB203", "'shop_pg.orders.status'"),
    ]


def test_a_binding_to_the_live_definition_draws_no_finding_for_it(
    project: Callable[..., Project],
) -> None:
    # Bound to today's definition (by hand, after the changes): the page says it was written
    # against it, so its change after validation is no KB203 either (the status one is).
    c = history(project, measure_fingerprint("sum(amount_net) - sum(refunds)"))
    assert [f[:3] for f in findings(c["root"])] == [("KB203", 3, 41)]


def test_kb201_off_does_not_bring_kb203_back_for_a_bound_entity(
    project: Callable[..., Project],
) -> None:
    c = history(project)
    toml = Path(c["root"]) / "knowl.toml"
    toml.write_text(TOML + "KB201 = 'off'\n")
    assert [f[:3] for f in findings(c["root"])] == [("KB203", 3, 41)]
