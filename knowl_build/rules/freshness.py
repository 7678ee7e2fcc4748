"""Freshness (SPEC 5): drift (KB201), staleness (KB202), definitions changed after validation
(KB203), affected paths changed (KB204), unknown source commits (KB205).

`assess()` computes each page's freshness with every reason as data; the findings are the
same reasons, at their places. Reasons of rules configured "off" do not count.

A claim the history cannot back is not made: in a shallow clone a drift message says
"unknown (shallow history)" where it would name an old expression or a commit it cannot see
("unknown (history incomplete)" when git could not read part of the history); KB203 only
names changes it saw; KB204 and KB205 stay quiet for a source_commit git cannot answer for.
KB010 and KB012 say why, once, at the project.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Page
from knowl_build.history.records import WORKING_TREE, EntityHistory
from knowl_build.rules.context import Emitted, RuleContext, finding_at
from knowl_build.rules.rule import Rule
from knowl_build.semantic.fingerprint import change_phrase, diff_lines, one_line, spans_lines
from knowl_build.support import clock

DRIFT = Rule(
    code="KB201",
    name="drift",
    default="warning",
    summary="a bound fingerprint differs from the live one",
    doc="""The definition the page was written against has changed. Every entity in
      `meta.bound_fingerprints` is compared (one missing from `sl_refs` is KB107 as well), and
      any `sha256:<hex>` value is accepted: one that matches no live definition is drift. A
      value that is no hash (`sha256:old`) is KB002 and drift besides: it matches no version.
      The finding shows the definition the page was written against (found in history by
      its fingerprint) and the live one, or the lines that differ when it spans lines, and
      names the first commit after the bound version that changed it, and each later one.
      An entity renamed in history (KB101 names the new name) is compared with the entity it
      became, so a measure whose model was renamed while it changed drifts; `knowl fix`
      proposes the rename and the drift stays until the page is reviewed.
      Review the page, then run `knowl review`.""",
)

STALE = Rule(
    code="KB202",
    name="stale",
    default="warning",
    summary="`last_validated_at` missing or older than `staleness_days`",
    doc="""Nobody has confirmed the page against the live definitions recently. Set
      `[rules] KB202 = "off"` for repositories that do not track validation dates.""",
)

DEFINITION_CHANGED = Rule(
    code="KB203",
    name="definition-changed",
    default="warning",
    summary="an `sl_refs` entity without a bound fingerprint changed after `last_validated_at`",
    doc="""An entity the page is about was changed by a commit dated after the page was
      last validated. The finding names each such commit and what changed: the definition
      before and after, or the lines that differ (a join's `on`, a metric's window).
      Only for entities the page binds no fingerprint for: a bound entity is compared by its
      fingerprint (KB201), so one change is one finding.""",
)

AFFECTED_PATH_CHANGED = Rule(
    code="KB204",
    name="affected-path-changed",
    default="warning",
    summary="a file in `affected_paths` changed since `source_commit`",
    doc="""The knowledge was derived at `source_commit`; a file it is about has changed or
      been deleted since.""",
)

UNKNOWN_SOURCE_COMMIT = Rule(
    code="KB205",
    name="unknown-source-commit",
    default="warning",
    summary="`source_commit` is not a commit reachable from HEAD",
    doc="""The commit the knowledge was derived from is not in the history of HEAD (a typo,
      or a rebased-away commit).""",
)

RULES: tuple[Rule, ...] = (
    DRIFT,
    STALE,
    DEFINITION_CHANGED,
    AFFECTED_PATH_CHANGED,
    UNKNOWN_SOURCE_COMMIT,
)
_RULES_BY_CODE = {rule.code: rule for rule in RULES}  # the findings Assessment.add weighs

ORDER = {"fresh": 0, "stale": 1, "needs_review": 2}
_REVIEW = "after checking the page against the live definitions, run: knowl review "
_VALIDATED = "meta.last_validated_at"  # the subject of KB202, whose message holds an age


@dataclass(slots=True)
class Assessment:
    value: str = "fresh"
    path: str | None = None  # the page's (per-path severities apply to its reasons)
    reasons: list[dict[str, Any]] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def add(self, ctx: RuleContext, finding: Finding, value: str, **data: Any) -> None:
        if _RULES_BY_CODE[finding.code].severity(ctx.config, self.path) == "off":
            return
        self.findings.append(finding)
        self.reasons.append(
            {"code": finding.code, "freshness": value, "message": finding.message, **data}
        )
        if ORDER[value] > ORDER[self.value]:
            self.value = value

    def to_json(self) -> dict[str, Any]:
        reasons = sorted(self.reasons, key=lambda r: (r["code"], r["message"]))
        return {"value": self.value, "reasons": reasons}


def parse_utc(iso: str) -> dt.datetime | None:
    """`last_validated_at` as written by fields.to_utc_iso, aware, in UTC; None for a value
    that is not one (such a value never comes from a page). Total: no string raises."""
    try:
        when = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _commit_time(seconds: int) -> dt.datetime:
    """A commit's time as a UTC datetime. git accepts times after year 9999 (and a commit
    with one can be pushed); those compare as the last representable moment, never raise."""
    return clock.from_epoch(seconds)


def _change(ctx: RuleContext, ref: str | None) -> tuple[str, dt.datetime | None]:
    """A change as text for messages, and its date (now for the working tree)."""
    if ref is None or ctx.git is None:
        return "", None
    if ref == WORKING_TREE:
        return "uncommitted changes in the working tree", ctx.working_tree_time()
    commit = ctx.git.history.commits[ref]
    when = _commit_time(commit.time)
    return f'commit {ref[:12]} ({commit.date[:10]}, "{commit.subject}")', when


def _commits_text(ctx: RuleContext, refs: list[str | None]) -> str:
    """Changes in order: `commit A (...)`, then `commit B (...)`; a change git cannot place
    says why (a shallow clone, history git could not read)."""
    history = ctx.git.history if ctx.git is not None else None
    unknown = history.unknown_text if history is not None and history.unknown else "unknown"
    texts = [_change(ctx, ref)[0] or unknown for ref in refs]
    return ", then in ".join(texts)


def _drift(
    ctx: RuleContext,
    name: str,
    bound: str,
    live: str,
    renamed: str | None = None,
    valid: bool = True,
) -> tuple[str, dict[str, Any]]:
    """KB201's message, and its record (without the fingerprints): the definition the page
    was written against and the live one, and the commits that changed it since. `renamed`:
    the live entity `name` was renamed to, whose past (its own, then `name`'s) is searched;
    `valid` False: the bound value is no fingerprint (KB002 besides), so no version had it."""
    history = ctx.git.history if ctx.git else None
    record = history.lineage(renamed or name) if history else None
    old = history.definitions.get(bound) if history else None
    changes = record.changes_since(bound) if record is not None else None
    where = ""
    if changes:
        where = "; changed in " + _commits_text(ctx, changes)
    elif record is not None and record.changed_in is not None:
        # The bound version is not in history: name the change the live definition came in.
        changes = [record.changed_in]
        where = "; last changed in " + _commits_text(ctx, changes)
    elif (
        history is not None
        and history.unknown is not None
        and (record is None or record.unknown_past)
    ):
        where = "; changed in " + history.unknown_text  # it may lie before what git has
    if not valid:
        what = f"the bound value '{bound}' is no fingerprint and matches no version, now "
        what += f"`{one_line(live)}`"
    elif old is None:
        if history is not None and history.unknown is not None:
            then = history.unknown_text
        else:
            then = "a definition not found in history"
        what = f"written against {then}, now `{one_line(live)}`"
    elif spans_lines(old, live):
        what = "its definition changed: " + change_phrase(old, live)
    else:
        what = f"written against `{old}`, now `{live}`"
    known = [ref for ref in changes or [] if ref is not None]
    drift: dict[str, Any] = {
        "entity": name,
        "changed_in": history.commit_json(known[0]) if history and known else None,
        "bound_expr": old,
        "live_expr": live,
    }
    if history is not None and known:
        drift["changes"] = [history.commit_json(ref) for ref in known]
    if old is not None and spans_lines(old, live):
        drift["diff"] = "\n".join(diff_lines(old, live))
    subject = f"'{name}' (renamed to '{renamed}')" if renamed else f"'{name}'"
    return f"{subject} drifted: {what}{where}", drift


def _changed_after(
    ctx: RuleContext, record: EntityHistory, validated_at: dt.datetime
) -> list[tuple[int, str]]:
    """The changes (index in `versions`, commit) dated after `validated_at`, oldest first."""
    found = []
    for at, (ref, _) in enumerate(record.versions):
        if at == 0 or ref is None:
            continue  # an introduction, or a change git cannot date
        when = _change(ctx, ref)[1]
        if when is not None and when > validated_at:
            found.append((at, ref))
    return found


def _assess_page(ctx: RuleContext, page: Page) -> Assessment:
    """The page's freshness, its reasons and findings: the frontmatter's word, then drift
    (KB201), staleness (KB202), definitions changed since (KB203), the source (KB204/5)."""
    fields = page.parsed.fields
    result = Assessment(value=fields.freshness, path=page.path)
    if fields.freshness != "fresh":
        result.reasons.append(
            {
                "code": "frontmatter",
                "freshness": fields.freshness,
                "message": f"freshness is set to '{fields.freshness}' in frontmatter",
            }
        )
    _bound_drift(ctx, page, result)
    validated_at = _staleness(ctx, page, result)
    if validated_at is not None:
        _definitions_changed(ctx, page, validated_at, result)
    _source_changes(ctx, page, result)
    return result


def _bound_drift(ctx: RuleContext, page: Page, result: Assessment) -> None:
    """KB201: a bound fingerprint that differs from the live one (any bound entity: one left
    out of sl_refs is KB107 besides). An entity renamed in history is compared with the live
    entity it became (its old name is KB101's, the change of definition KB201's)."""
    entities = ctx.layer.entities
    history = ctx.git.history if ctx.git else None
    for bound in page.parsed.fields.bound_fingerprints:
        entity = entities.get(bound.entity)
        renamed = None
        if entity is None and history is not None:
            found = history.renamed(bound.entity, entities)
            if found is not None:
                renamed = found[0]
                entity = entities[renamed]
        # A value that is no hash is quoted as written.
        fingerprint = bound.fingerprint.lower() if bound.valid else bound.fingerprint
        if entity is None or entity.fingerprint == fingerprint:
            continue
        message, drift = _drift(
            ctx, bound.entity, fingerprint, entity.fingerprinted, renamed, bound.valid
        )
        result.drift.append({"bound": bound.fingerprint, "live": entity.fingerprint, **drift})
        result.add(
            ctx,
            finding_at(DRIFT.code, bound.key_span, message, _REVIEW + page.id, bound.entity),
            "needs_review",
            entity=bound.entity,
        )


def _staleness(ctx: RuleContext, page: Page, result: Assessment) -> dt.datetime | None:
    """KB202: never validated, or too long ago. Returns when the page was last validated
    (None: never, or at no readable time)."""
    fields = page.parsed.fields
    validated = fields.last_validated_at
    validated_at = parse_utc(validated) if validated is not None else None
    anchor = fields.anchors.get("meta.last_validated_at:value")
    if validated is None or validated_at is None:
        message = "page has no meta.last_validated_at"
    else:
        age = (ctx.today - validated_at.date()).days
        if age <= ctx.config.staleness_days:
            return validated_at
        message = (
            f"last validated {age} days ago, more than staleness_days ({ctx.config.staleness_days})"
        )
    result.add(ctx, finding_at(STALE.code, anchor, message, _REVIEW + page.id, _VALIDATED), "stale")
    return validated_at


def _definitions_changed(
    ctx: RuleContext, page: Page, validated_at: dt.datetime, result: Assessment
) -> None:
    """KB203: an sl_refs entity changed after the page was last validated. An entity the
    page binds a fingerprint for is KB201's alone: one change, one finding."""
    history = ctx.git.history if ctx.git else None
    if history is None:
        return
    fields = page.parsed.fields
    validated = fields.last_validated_at or ""
    bound_names = {bound.entity for bound in fields.bound_fingerprints}
    for ref in fields.sl_refs:
        if ref.value in bound_names:
            continue
        record = history.lineage(ref.value)  # a change made with a rename is one
        live = ctx.layer.entities.get(ref.value)
        if live is None or record is None or record.changed_in is None:
            continue
        later = _changed_after(ctx, record, validated_at)
        if not later:
            continue
        where = _commits_text(ctx, [r for _, r in later])
        earlier = history.definitions.get(record.versions[later[0][0] - 1][1])
        result.add(
            ctx,
            finding_at(
                DEFINITION_CHANGED.code,
                ref.span,
                f"'{ref.value}' changed after the page was last validated "
                f"({validated[:10]}): {where}: {_what_changed(earlier, live.fingerprinted)}",
                _REVIEW + page.id,
                ref.value,
            ),
            "needs_review",
            entity=ref.value,
        )


def _what_changed(earlier: str | None, live: str) -> str:
    if earlier is None:
        return f"now `{one_line(live)}`"
    if earlier == live:
        return f"changed back to `{one_line(earlier)}`"
    return change_phrase(earlier, live)


def _source_changes(ctx: RuleContext, page: Page, result: Assessment) -> None:
    """KB204 / KB205: the knowledge was derived at source_commit. A source_commit missing
    from `reachable` is unknown: git failed on it, or the clone is shallow and the commit
    may be older than its oldest commit. Nothing is claimed then."""
    fields = page.parsed.fields
    if ctx.git is None or fields.source_commit is None:
        return
    if fields.source_commit not in ctx.git.reachable:
        return
    full = ctx.git.reachable[fields.source_commit]
    if full is None:
        result.findings.append(
            finding_at(
                UNKNOWN_SOURCE_COMMIT.code,
                fields.anchors.get("source_commit:value"),
                f"source_commit '{fields.source_commit}' is not a commit reachable from HEAD",
                "fix the commit id, or remove source_commit",
                "source_commit",
            )
        )
        return
    for item in fields.affected_paths:
        if (full, item.value) in ctx.git.changed_paths:
            result.add(
                ctx,
                finding_at(
                    AFFECTED_PATH_CHANGED.code,
                    item.span,
                    f"affected path '{item.value}' changed since source_commit {full[:12]}",
                    "re-read the file and update the page, then set source_commit to HEAD",
                    item.value,
                ),
                "needs_review",
                path=item.value,
            )


class Assessments(dict[str, Assessment]):
    """Each text page's freshness by path: those assessed so far, and `get` assesses any other
    text page when it is first asked for (a check that reused the ledger assessed only the
    pages it checked again; `stale` or a hover may ask for any)."""

    def __init__(
        self, ctx: RuleContext, found: dict[str, Assessment], volatile: set[str] | None = None
    ) -> None:
        super().__init__(found)
        self._ctx = ctx
        self._pages: dict[str, Page] | None = None
        # The pages whose freshness read the moment of the run (`working_tree_time`).
        self.volatile = volatile or set()

    def get(self, path: str, default: Any = None) -> Any:
        found = super().get(path)
        if found is not None:
            return found
        if self._pages is None:
            self._pages = {page.path: page for page in self._ctx.pages}
        page = self._pages.get(path)
        if page is None:
            return default
        found = self[path] = _assessed(self._ctx, page, self.volatile)
        return found


def _assessed(ctx: RuleContext, page: Page, volatile: set[str]) -> Assessment:
    ctx.read_now = False
    found = _assess_page(ctx, page)
    if ctx.read_now:
        volatile.add(page.path)
    return found


def assess(ctx: RuleContext, pages: Iterable[Page] | None = None) -> Assessments:
    """Freshness of every text page (or, at first, of `pages` only), by path."""
    results: dict[str, Assessment] = {}
    volatile: set[str] = set()
    for page in ctx.pages if pages is None else pages:
        if page.path not in results:
            results[page.path] = _assessed(ctx, page, volatile)
    return Assessments(ctx, results, volatile)


def check_freshness(ctx: RuleContext, assessments: dict[str, Assessment] | None = None) -> Emitted:
    assessments = assessments if assessments is not None else assess(ctx)
    for path, assessment in assessments.items():
        for finding in assessment.findings:
            yield path, finding
