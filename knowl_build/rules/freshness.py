"""Freshness rules that need no history: KB202 (stale validation date)."""

from __future__ import annotations

import datetime as dt

from knowl_build.rules.context import Emitted, RuleContext, finding_at


def age_in_days(validated_at: str, today: dt.date) -> int:
    return (today - dt.date.fromisoformat(validated_at[:10])).days


def check_freshness(ctx: RuleContext) -> Emitted:
    limit = ctx.config.staleness_days
    for page in ctx.pages:
        fields = page.parsed.fields
        validated = fields.last_validated_at
        if validated is None:
            yield (
                page.path,
                finding_at(
                    "KB202",
                    fields.anchors.get("meta.last_validated_at:value"),
                    "page has no meta.last_validated_at",
                    "after checking the page against the live definitions, run: knowl review "
                    + page.id,
                ),
            )
            continue
        age = age_in_days(validated, ctx.today)
        if age > limit:
            yield (
                page.path,
                finding_at(
                    "KB202",
                    fields.anchors["meta.last_validated_at:value"],
                    f"last validated {age} days ago, more than staleness_days ({limit})",
                    "after checking the page against the live definitions, run: knowl review "
                    + page.id,
                ),
            )
