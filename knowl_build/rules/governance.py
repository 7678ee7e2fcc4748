"""Governance rules: duplicate ids (KB005), user pages shadowing global ones (KB303),
exclusive conflicts (KB301) and supersession (KB302)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from knowl_build.core.config import DENDRON, OBSIDIAN
from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Page
from knowl_build.core.resolve import GLOBAL, PageIndex, fold, scope_label
from knowl_build.rules.context import Emitted, RuleContext, finding_at
from knowl_build.rules.rule import Rule
from knowl_build.secrets.patterns import REDACTED
from knowl_build.secrets.scanner import redact

DUPLICATE_PAGE_ID = Rule(
    code="KB005",
    name="duplicate-page-id",
    default="error",
    summary="duplicate page id in one scope",
    doc="""Two pages of one scope (global, or one owner) share a file name, or the folder
      name a page bundle takes as its id (`posts/my-trip/index.md` and `_index.md` are
      `my-trip`, so bundles of different names are no duplicates). Each file is reported
      once, naming the other. References to the id resolve to the set of them.
      With `[links] resolution = "obsidian"` (or `"dendron"`, a vault per folder), pages in
      different folders may share a name (a link picks one as Obsidian or Dendron does, see
      KB108); only paths that differ in case alone are KB005 there.""",
)

EXCLUSIVE_CONFLICT = Rule(
    code="KB301",
    name="exclusive-conflict",
    default="error",
    summary="two active exclusive pages share a conflict key and scope",
    doc="""Pages with `conflict.exclusive: true` claim to be the only active answer for their
      normalized `conflict.key` and `conflict.scope`, project-wide. Supersede one.""",
)

BROKEN_SUPERSESSION = Rule(
    code="KB302",
    name="broken-supersession",
    default="error",
    summary="supersession broken",
    doc="""`status: superseded` needs `superseded_by`, `superseded_by` needs that status, the
      target must be a visible page, and supersession must not form a cycle.""",
)

USER_SHADOWS_GLOBAL = Rule(
    code="KB303",
    name="user-shadows-global",
    default="info",
    summary="a user page has the id of a global page",
    doc="""References to the id resolve to the global page; the user page becomes an
      annotation of it in search and show.""",
)

RULES: tuple[Rule, ...] = (
    DUPLICATE_PAGE_ID,
    EXCLUSIVE_CONFLICT,
    BROKEN_SUPERSESSION,
    USER_SHADOWS_GLOBAL,
)


def check_governance(ctx: RuleContext) -> Emitted:
    yield from _duplicates(ctx)
    yield from _shadows(ctx)
    yield from _conflicts(ctx)
    yield from _supersession(ctx)


def _duplicates(ctx: RuleContext) -> Emitted:
    for (scope, page_id), pages in _same_name(ctx.index).items():
        if len(pages) < 2:
            continue
        for page in pages:
            others = ", ".join(p.path for p in pages if p is not page)
            yield (
                page.path,
                Finding(
                    DUPLICATE_PAGE_ID.code,
                    1,
                    1,
                    f"page id '{page_id}' is used twice in {scope_label(scope)}: also {others}",
                    "rename one of the files",
                ),
            )


def _same_name(index: PageIndex) -> dict[tuple[str, str], list[Page]]:
    """Pages that one name cannot tell apart: the same id in a scope; with Obsidian's or
    Dendron's resolution, where pages in different folders (vaults) may share a name, the same
    path up to case."""
    if index.mode not in (OBSIDIAN, DENDRON):
        return index.by_id
    groups: dict[tuple[str, str], list[Page]] = defaultdict(list)
    for page in index.pages:
        groups[(page.scope, fold(page.rel))].append(page)
    return {(scope, pages[0].id): pages for (scope, _), pages in groups.items()}


def _shadows(ctx: RuleContext) -> Emitted:
    for page in ctx.index.pages:
        if page.scope == GLOBAL or not page.parsed.text_ok:
            continue
        globals_ = ctx.index.by_id.get((GLOBAL, page.id))
        if globals_:
            yield (
                page.path,
                Finding(
                    USER_SHADOWS_GLOBAL.code,
                    1,
                    1,
                    f"user page '{page.id}' has the id of global page {globals_[0].path}; "
                    "it becomes an annotation of it",
                ),
            )


ConflictGroups = dict[tuple[str, tuple[tuple[str, str], ...]], list[Page]]


def exclusive_groups(pages: list[Page]) -> ConflictGroups:
    """Every active exclusive page, grouped by normalized conflict key and scope (SPEC 8.3):
    what KB301 reports and `knowl conflicts` lists."""
    groups: ConflictGroups = defaultdict(list)
    for page in pages:
        conflict = page.parsed.fields.conflict
        if (
            page.parsed.text_ok
            and conflict
            and conflict.exclusive
            and page.parsed.fields.status == "active"
        ):
            groups[(conflict.normalized_key, conflict.scope)].append(page)
    return groups


def shown_key(key: str, pages: list[Page]) -> str:
    """A normalized key as it may be shown: lowercasing hides a pasted secret from
    redaction, so a key that any page writes with a secret in it is shown redacted."""
    for page in pages:
        written = page.parsed.fields.conflict.key if page.parsed.fields.conflict else key
        if redact(written) != written:
            return REDACTED
    return key


def conflict_groups(pages: list[Page]) -> list[dict[str, Any]]:
    """`knowl conflicts`: each group with its pages and whether it is a violation."""
    rows = []
    for (key, scope), members in sorted(exclusive_groups(pages).items()):
        members = sorted(members, key=lambda p: (p.scope, p.id, p.path))
        rows.append(
            {
                "key": shown_key(key, members),
                "scope": {k: redact(v) for k, v in scope},
                "pages": [{"page": p.id, "scope": p.scope, "path": p.path} for p in members],
                "violation": len(members) > 1,
            }
        )
    return rows


def _conflicts(ctx: RuleContext) -> Emitted:
    for (key, scope), pages in exclusive_groups(ctx.pages).items():
        if len(pages) < 2:
            continue
        where = f" in scope {dict(scope)}" if scope else ""
        shown = shown_key(key, pages)
        for page in pages:
            others = ", ".join(p.path for p in pages if p is not page)
            written = page.parsed.fields.conflict.key if page.parsed.fields.conflict else key
            yield (
                page.path,
                finding_at(
                    EXCLUSIVE_CONFLICT.code,
                    page.parsed.fields.anchors.get("conflict"),
                    f"exclusive conflict key '{written}' (normalized '{shown}'){where} is also "
                    f"claimed by active {others}",
                    "retire one with: knowl supersede <old> <new>",
                    f"exclusive conflict {shown}{where}",
                ),
            )


def _supersession(ctx: RuleContext) -> Emitted:
    successor: dict[str, Page] = {}
    for page in ctx.pages:
        fields = page.parsed.fields
        anchors = fields.anchors
        status_span = anchors.get("status") or anchors.get("superseded_by")
        if fields.status == "superseded" and fields.superseded_by is None:
            yield (
                page.path,
                finding_at(
                    BROKEN_SUPERSESSION.code,
                    status_span,
                    "status is 'superseded' but 'superseded_by' is missing",
                    "name the page that replaces it in 'superseded_by'",
                ),
            )
        target = fields.superseded_by
        if target is None:
            continue
        if fields.status != "superseded":
            yield (
                page.path,
                finding_at(
                    BROKEN_SUPERSESSION.code,
                    status_span,
                    f"'superseded_by' is set but status is '{fields.status}'",
                    "set 'status: superseded' or remove 'superseded_by'",
                ),
            )
        resolution = ctx.index.resolve(target.value, page.scope)
        if not resolution.pages:
            yield (
                page.path,
                finding_at(
                    BROKEN_SUPERSESSION.code,
                    target.span,
                    f"superseded_by '{target.value}' names no page visible from {scope_label(page.scope)}",
                    ctx.page_hint(target.value, page.scope),
                ),
            )
            continue
        successor[page.path] = resolution.pages[0]
    # By path, not id: two pages of one id (KB005) are two pages, and only the one whose
    # `superseded_by` closes the cycle is reported.
    for page in ctx.pages:
        if page.path not in successor:
            continue
        seen = {page.path}
        current = successor[page.path]
        while current.path in successor:
            if current.path == page.path or current.path in seen:
                break
            seen.add(current.path)
            current = successor[current.path]
        if current.path == page.path:
            target = page.parsed.fields.superseded_by
            assert target is not None
            yield (
                page.path,
                finding_at(
                    BROKEN_SUPERSESSION.code,
                    target.span,
                    f"superseded_by '{target.value}' makes a supersession cycle",
                    "one page of the cycle must stay active",
                ),
            )
