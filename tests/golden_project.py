"""The fixed project behind the golden files: one finding of most kinds, a secret included."""

from __future__ import annotations

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS

FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "semantics/shop/broken.yaml": "name: broken\nconnection: shop_pg\ntable: t\ngrain: [nope]\n",
    "knowledge/global/revenue.md": (
        "---\n"
        'summary: Revenue, in "EUR"; see refunds.\n'
        "tags: [revenue]\n"
        "sl_refs: [shop_pg.orders.total_revenue, shop_pg.orders.nope]\n"
        "refs: [refunds, personal]\n"
        "sl_ref: typo\n"
        "meta:\n"
        '  last_validated_at: "2026-05-01T00:00:00Z"\n'
        "  bound_fingerprints:\n"
        f'    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n'
        "---\n"
        "# Revenue\n\n"
        "`<< sl:shop_pg.orders.total_revenue.expr >>`, see [[revenue-defintion]], [[refunds#Timing]].\n"
        "Connect with postgres://analyst:hunter2@db.internal/shop, and caf\u00e9 [[nowhere|x]].\n"
        "<< sl:shop_pg.orders.total_revenue.colour >>\n"
    ),
    "knowledge/global/revenue-definition.md": "---\nmeta:\n  last_validated_at: 2026-05-01\n---\n# Definition\n",
    "knowledge/global/refunds.md": "---\nusage_mode: caveat\n---\n# Refunds\n\n## When\n",
    "knowledge/user/ann/personal.md": "---\nsummary: mine\nmeta: {last_validated_at: 2026-05-01}\n---\n",
}
