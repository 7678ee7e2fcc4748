"""knowl fix: proposals for sl_refs to removed entities, as diffs; --apply writes them."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

ORDERS = "semantics/shop/orders.yaml"
PAGE = "knowledge/global/revenue.md"
TEXT = (
    "---\n"
    "summary: Revenue   # the summary\n"
    "sl_refs:\n"
    "  - shop_pg.orders.total_revenue\n"
    "  - shop_pg.orders\n"
    "meta:\n"
    '  last_validated_at: "2026-01-01T00:00:00Z"\n'
    "  bound_fingerprints:\n"
    f'    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n'
    "---\n"
    "# Revenue\n\nSee the orders source.\n"
)


def removed_measure(proj: Project) -> str:
    text = SEMANTICS[ORDERS].replace(
        '  - { name: total_revenue, expr: "sum(amount)", additivity: additive, description: Revenue. }\n',
        "",
    )
    proj.write({ORDERS: text.replace("measures:\n", "")})
    return proj.commit("Remove total_revenue")


def test_removed_entity_fix_diff_and_apply(project: Callable[..., Project]) -> None:
    proj = project({**SEMANTICS, PAGE: TEXT, "knowl.toml": "[rules]\nKB202 = 'off'\n"})
    sha = removed_measure(proj)
    check = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    kb101 = [d for d in json.loads(check.stdout)["diagnostics"] if d["code"] == "KB101"]
    assert f"removed in commit {sha[:12]}" in kb101[0]["message"]
    assert "knowl fix" in kb101[0]["hint"]

    proposed = invoke(["fix", "--repo", str(proj.root)], code=1)
    assert proposed.stdout == (
        f"--- a/{PAGE}\n+++ b/{PAGE}\n@@ -1,12 +1,10 @@\n ---\n summary: Revenue   # the summary\n"
        " sl_refs:\n-  - shop_pg.orders.total_revenue\n   - shop_pg.orders\n meta:\n"
        '-  last_validated_at: "2026-01-01T00:00:00Z"\n-  bound_fingerprints:\n'
        f'-    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n'
        "+  last_validated_at: null\n+  bound_fingerprints: {}\n ---\n # Revenue\n \n"
    )
    assert (proj.root / PAGE).read_text() == TEXT  # proposals only

    invoke(["fix", "--repo", str(proj.root), "--apply"])
    after = (proj.root / PAGE).read_text()
    assert "total_revenue" not in after and "last_validated_at: null" in after
    assert after.endswith("---\n# Revenue\n\nSee the orders source.\n")
    invoke(["check", "--repo", str(proj.root)])
    assert invoke(["fix", "--repo", str(proj.root)]).stdout == ""


def test_protected_pages_are_reported_not_edited(project: Callable[..., Project]) -> None:
    curated = TEXT.replace("meta:\n", "meta:\n  provenance: human_curated\n")
    frozen = TEXT.replace("meta:\n", "meta:\n  frozen: true\n")
    proj = project({**SEMANTICS, PAGE: curated, "knowledge/global/frozen.md": frozen})
    removed_measure(proj)
    result = invoke(["fix", "--repo", str(proj.root), "--apply"])
    assert "revenue.md: not edited (provenance human_curated)" in result.stderr
    assert "frozen.md: not edited (frozen)" in result.stderr
    assert (proj.root / PAGE).read_text() == curated
    assert (proj.root / "knowledge/global/frozen.md").read_text() == frozen


def test_nothing_to_fix_exits_0(project: Callable[..., Project]) -> None:
    proj = project({**SEMANTICS, PAGE: TEXT})
    result = invoke(["fix", "--repo", str(proj.root)])
    assert result.stdout == "" and "0 proposal(s)" in result.stderr
