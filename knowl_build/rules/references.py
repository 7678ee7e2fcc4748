"""Reference rules: sl_refs (KB101), refs (KB102, KB104), links (KB103, KB104, KB105),
live-definition directives (KB106) and bound fingerprints (KB107)."""

from __future__ import annotations

from knowl_build.hints import SKIPPED, NearNames, suggestion
from knowl_build.history.records import WORKING_TREE
from knowl_build.model import Link, Page
from knowl_build.parse.body import heading_key
from knowl_build.resolve import is_file_target, scope_label
from knowl_build.rules.context import Emitted, RuleContext, finding_at

HEADING_CUTOFF = 0.6  # difflib's default, as heading hints always used


def check_references(ctx: RuleContext) -> Emitted:
    headings = _Headings(ctx)
    for page in ctx.pages:
        yield from _sl_refs(ctx, page)
        yield from _refs(ctx, page)
        yield from _links(ctx, page, headings)
        yield from _directives(ctx, page)
        yield from _bound(page)


def _sl_refs(ctx: RuleContext, page: Page) -> Emitted:
    for ref in page.parsed.fields.sl_refs:
        if ref.value in ctx.layer.entities:
            continue
        message = f"sl_ref '{ref.value}' resolves to no live semantic entity"
        hint: str | None = None
        record = ctx.git.history.entities.get(ref.value) if ctx.git is not None else None
        if ctx.git is not None and record is not None and record.removed_in is not None:
            if record.removed_in == WORKING_TREE:
                message += "; it was removed by uncommitted changes in the working tree"
            else:
                commit = ctx.git.history.commits[record.removed_in]
                message += (
                    f"; it was removed in commit {commit.sha[:12]} ({commit.date[:10]}, "
                    f'"{commit.subject}")'
                )
            hint = "run knowl fix to propose removing it (knowl fix --apply writes the change)"
        elif ctx.git is not None and ctx.git.history.unknown is not None:
            # It may have been removed where git cannot see (before a shallow clone's oldest
            # commit, in a version git could not read): say so, claim nothing.
            message += f"; whether and when it was removed is {ctx.git.history.unknown_text}"
        if hint is None:  # looked up only when shown: lookups count against the hint budget
            hint = ctx.entity_hint(ref.value)
        yield page.path, finding_at("KB101", ref.span, message, hint, subject=ref.value)


def _hidden_message(item: str, hidden: list[Page], scope: str) -> str:
    where = ", ".join(p.path for p in hidden)
    return f"{item} names a page that is not visible from {scope_label(scope)} ({where})"


def _refs(ctx: RuleContext, page: Page) -> Emitted:
    for ref in page.parsed.fields.refs:
        resolution = ctx.index.resolve(ref.value, page.scope)
        if resolution.pages:
            continue
        if resolution.hidden:
            yield (
                page.path,
                finding_at(
                    "KB104",
                    ref.span,
                    _hidden_message(f"ref '{ref.value}'", resolution.hidden, page.scope),
                    "global pages are read by everyone and must not depend on personal pages",
                ),
            )
        else:
            yield (
                page.path,
                finding_at(
                    "KB102",
                    ref.span,
                    f"ref '{ref.value}' names no page visible from {scope_label(page.scope)}",
                    ctx.page_hint(ref.value, page.scope),
                ),
            )


def _links(ctx: RuleContext, page: Page, headings: _Headings) -> Emitted:
    for link in page.parsed.links:
        if not link.target:
            yield from _heading(page, link, [page], headings)
            continue
        resolution = ctx.index.resolve(link.target, page.scope)
        if resolution.pages:
            yield from _heading(page, link, resolution.pages, headings)
        elif is_file_target(link.target) and ctx.index.find_file(link.target):
            continue
        elif resolution.hidden:
            yield (
                page.path,
                finding_at(
                    "KB104",
                    link.span,
                    _hidden_message(link.raw, resolution.hidden, page.scope),
                    "global pages are read by everyone and must not depend on personal pages",
                ),
            )
        elif is_file_target(link.target):
            yield (
                page.path,
                finding_at(
                    "KB103",
                    link.span,
                    f"{link.raw} points at no page visible from {scope_label(page.scope)} "
                    "and no file under the knowledge folder",
                ),
            )
        else:
            yield (
                page.path,
                finding_at(
                    "KB103",
                    link.span,
                    f"{link.raw} points at no page visible from {scope_label(page.scope)}",
                    ctx.page_hint(link.target, page.scope),
                ),
            )


class _Headings:
    """The headings of the pages links point at, prepared once per run: each page's heading
    keys as a set (a link is a lookup, not a pass over the target's headings), and, for each
    set of target pages a broken link meets, the index its did-you-mean hints come from. The
    hints charge the run's hint budget like every other did-you-mean (hints.py), so a
    page of thousands of headings and thousands of `[[#…]]` links checks in linear time."""

    def __init__(self, ctx: RuleContext) -> None:
        self._ctx = ctx
        self._keys: dict[str, frozenset[str]] = {}  # page path -> its heading keys
        self._names: dict[tuple[str, ...], NearNames] = {}  # target paths -> heading texts
        self._hints: dict[tuple[tuple[str, ...], str], str | None] = {}

    def has(self, targets: list[Page], heading: str) -> bool:
        wanted = heading_key(heading)
        for target in targets:
            keys = self._keys.get(target.path)
            if keys is None:
                keys = self._keys[target.path] = frozenset(
                    heading_key(h.text) for h in target.parsed.headings
                )
            if wanted in keys:
                return True
        return False

    def hint(self, targets: list[Page], heading: str) -> str | None:
        """What `difflib.get_close_matches(heading, <the targets' heading texts>, n=1)` finds,
        phrased as a hint; the budget notice (once) or None when the budget is spent."""
        paths = tuple(target.path for target in targets)
        if (paths, heading) in self._hints:
            return self._hints[paths, heading]
        names = self._names.get(paths)
        if names is None:
            names = self._names[paths] = NearNames(
                h.text for target in targets for h in target.parsed.headings
            )
        budget = self._ctx._hint_budget
        found = names.closest(heading, HEADING_CUTOFF, budget)
        if found is SKIPPED:
            self._hints[paths, heading] = None
            return budget.notice()
        hint = self._hints[paths, heading] = suggestion(found)
        return hint


def _heading(page: Page, link: Link, targets: list[Page], headings: _Headings) -> Emitted:
    heading = link.heading
    if not heading or heading.startswith("^"):
        return  # `#^block` references are not checked
    if headings.has(targets, heading):
        return
    name = link.target or page.id
    yield (
        page.path,
        finding_at(
            "KB105",
            link.span,
            f"{link.raw}: page '{name}' has no heading '{heading}'",
            headings.hint(targets, heading),
        ),
    )


def _directives(ctx: RuleContext, page: Page) -> Emitted:
    for directive in page.parsed.directives:
        if ctx.layer.resolve_attribute(directive.name) is not None:
            continue
        entity_name, _, attribute = directive.name.rpartition(".")
        entity = ctx.layer.entities.get(entity_name)
        if entity is None:
            yield (
                page.path,
                finding_at(
                    "KB106",
                    directive.span,
                    f"{directive.raw} names no semantic entity '{entity_name or directive.name}'",
                    ctx.entity_hint(entity_name)
                    if entity_name
                    else "write << sl:<connection>.<source>[.<member>].<attribute> >>",
                ),
            )
        else:
            kinds = ctx.layer.members.get(entity_name, {entity.kind: entity})
            allowed = sorted({a for member in kinds.values() for a in member.attributes})
            yield (
                page.path,
                finding_at(
                    "KB106",
                    directive.span,
                    f"{directive.raw}: {entity.kind} '{entity_name}' has no attribute '{attribute}'",
                    f"attributes: {', '.join(allowed)}",
                ),
            )


def _bound(page: Page) -> Emitted:
    fields = page.parsed.fields
    refs = {ref.value for ref in fields.sl_refs}
    for bound in fields.bound_fingerprints:
        if bound.entity not in refs:
            yield (
                page.path,
                finding_at(
                    "KB107",
                    bound.key_span,
                    f"bound fingerprint '{bound.entity}' is not in the page's sl_refs",
                    "remove the entry or add the entity to sl_refs",
                ),
            )
