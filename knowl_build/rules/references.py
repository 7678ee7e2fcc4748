"""Reference rules: sl_refs (KB101), refs (KB102, KB104), links (KB103, KB104, KB105, KB108,
KB109), live-definition directives (KB106) and bound fingerprints (KB107)."""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable, Iterable

from knowl_build.core.config import DENDRON, EXACT, OBSIDIAN
from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import MARKDOWN, Heading, Link, Page, Span
from knowl_build.core.resolve import Resolution, is_file_target, is_wildcard, note_name, scope_label
from knowl_build.history.records import WORKING_TREE
from knowl_build.parse import dendron
from knowl_build.parse.body import heading_key, strip_inline
from knowl_build.rules.context import Emitted, RuleContext, finding_at
from knowl_build.rules.rule import Rule
from knowl_build.support.hints import SKIPPED, NearNames, suggestion

UNKNOWN_SL_REF = Rule(
    code="KB101",
    name="unknown-sl-ref",
    default="error",
    summary="`sl_refs` item names no live entity",
    doc="""An `sl_refs` entry must name a semantic entity: `<connection>.<source>` or
      `<connection>.<source>.<member>`. The hint names the nearest entity. When git history
      shows the entity removed, the message names the commit; when that commit added an
      entity of the same kind and definition (a renamed model or measure), or the member of
      the same name and kind in the model it renamed (even if that member changed too: KB201
      then reports the drift against it), it names the new name, and `knowl fix` proposes
      the rename.""",
)

UNKNOWN_REF = Rule(
    code="KB102",
    name="unknown-ref",
    default="error",
    summary="`refs` item names no page",
    doc="""A `refs` entry must be the id (or scope-relative path) of a page.""",
)

BROKEN_LINK = Rule(
    code="KB103",
    name="broken-link",
    default="error",
    summary="a link or embed names no page or file",
    doc="""The target of a wiki-link or embed matches no page visible from the linking page
      and, for targets with a file extension, no file under `knowledge/`; or the path of a
      Markdown link or image (`[text](path)`, `[text][label]`, `![alt](path)`, relative to
      the page, or site-absolute with `[links] site_root`) names no page and no file or
      folder of the project (in Obsidian mode, not by its vault path or file name either).
      The message quotes the link as written. Matching follows
      `[links] resolution`: exact by default (no case folding, no fuzzy match), or as
      Obsidian or Dendron resolve links; the hint suggests the nearest id. A Dendron wildcard
      reference (`![[a.b.*]]`) is never KB103, whether or not a note matches.""",
)

INVISIBLE_TARGET = Rule(
    code="KB104",
    name="invisible-target",
    default="error",
    summary="a ref or link names a page that is not visible from here",
    doc="""A global page points at a user page, or a user page at another user's page (by a
      `refs` item, a wiki-link or a Markdown link's path); or a wiki-link, embed or Markdown
      link names a file under another user's folder (`user/<owner>/` holds that user's files
      as well as pages). Global pages are read by everyone and must not depend on personal
      pages or files.""",
)

UNKNOWN_HEADING = Rule(
    code="KB105",
    name="unknown-heading",
    default="warning",
    summary="`[[id#Heading]]` or `[text](page.md#slug)`: the target has no such heading",
    doc="""Headings are compared case-insensitively with whitespace collapsed and inline
      markup removed. A Markdown link's `#fragment` names a heading by its slug, as GitHub
      writes it (`#the-section`, `#faq-1` for a second "FAQ"; MkDocs' slugs too), and
      `[x](#local)` a heading of the page itself; in Obsidian mode also by the heading's
      text (`#Some%20Heading`) or a `^block` id. A fragment of a link to a file that is no
      page is not checked.
      `[[Page#A#B]]` names heading `B` inside the section of heading `A`,
      heading by heading. With `[links] resolution = "obsidian"`, `[[Page#^block-id]]` must
      name a block id (`^block-id` ending a line of the target), and both the link's heading
      and the target's headings are compared as Obsidian normalises them: each of
      ``!"#$%&()*+,.:;<=>?@^`{|}~/[]\\`` is a space, runs of spaces are one, trimmed
      (`[[Functions#hasTag]]` names the heading `` `hasTag()` ``). With `"dendron"`, a
      heading is named by its text or its slug (`#useful-extensions` for "Useful
      Extensions"), blocks are checked too, and of a note reference's range
      (`#start,1:#end`) each end that is a heading or a block is checked; `*`, `^begin` and
      `^end` are positions. In `exact` mode `#^block` references are not checked.""",
)

UNKNOWN_DIRECTIVE_TARGET = Rule(
    code="KB106",
    name="unknown-directive-target",
    default="error",
    summary="a live-definition directive names an unknown entity or attribute",
    doc="""`<< sl:ENTITY.ATTR >>` and `{{ sl:ENTITY.ATTR }}` must name an existing entity and
      an attribute of its kind (measure: expr, description, additivity, fingerprint;
      dimension: column, granularity, label, description; column: type, nullable,
      description; source: table, description, grain). An entity renamed in history (see
      KB101) is named in the message, and `knowl fix` proposes the rename.""",
)

UNBOUND_FINGERPRINT = Rule(
    code="KB107",
    name="unbound-fingerprint",
    default="warning",
    summary="a `bound_fingerprints` key is not in the page's `sl_refs`",
    doc="""`meta.bound_fingerprints` records the definitions the page was written against;
      an entry for an entity the page does not reference is left over from an edit.""",
)

AMBIGUOUS_LINK = Rule(
    code="KB108",
    name="ambiguous-link",
    default="warning",
    summary="a link's name fits several pages equally well (Obsidian, Dendron resolution)",
    doc="""With `[links] resolution = "obsidian"`, a bare name shared by pages in different
      folders resolves to the page whose path is shortest, as Obsidian does. When another
      page's path is as short, the choice is a tie broken by path order, and the link may not
      mean the page it resolves to: qualify it with its folder (`[[Folder/Page]]`). With
      `"dendron"`, a note name shared by notes in several folders (vaults) is always
      ambiguous, as Dendron asks which one is meant; the link resolves to the first by path:
      name the vault (`[[dendron://vault/note]]`).""",
)

CASE_ONLY_LINK = Rule(
    code="KB109",
    name="case-only-link",
    default="warning",
    summary="a link names its page only when case is ignored (`[links] case_only`)",
    doc="""With a link resolution that ignores case (`[links] resolution = "obsidian"`),
      `[[revenue]]` finds `Revenue.md`, as Obsidian does; Quartz and most static hosts serve
      pages case-exactly, so the published link is a 404. This rule reports a link or embed
      whose page matches only when case is ignored: no id, file name, alias or path of it
      has the case the link is written with (a Markdown link too, when Obsidian resolves it
      by its file name: `[x](revenue.md)`). It is off unless `[links] case_only` is
      `"warning"` or `"error"` (its default, `"ignore"`, turns it off), or `[rules] KB109`
      sets a severity, which wins. The hint names the page as written. In `exact` mode such
      a link names no page and is KB103, whose hint says the name differs only in
      case.""",
)

RULES: tuple[Rule, ...] = (
    UNKNOWN_SL_REF,
    UNKNOWN_REF,
    BROKEN_LINK,
    INVISIBLE_TARGET,
    UNKNOWN_HEADING,
    UNKNOWN_DIRECTIVE_TARGET,
    UNBOUND_FINGERPRINT,
    AMBIGUOUS_LINK,
    CASE_ONLY_LINK,
)

HEADING_CUTOFF = 0.6
MAX_LEVEL = 6  # of a Markdown heading  # difflib's default, as heading hints always used


def check_references(ctx: RuleContext, pages: Iterable[Page] | None = None) -> Emitted:
    """The findings of `pages` (default: every page of the context)."""
    headings = _Headings(ctx)
    for page in ctx.pages if pages is None else pages:
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
        renamed = _renamed(ctx, ref.value)
        if renamed is not None:
            message += f"; {renamed[0]}"
            hint = renamed[1]
        elif ctx.git is not None and record is not None and record.removed_in is not None:
            message += f"; it was removed {_when(ctx, record.removed_in)}"
            hint = "run knowl fix to propose removing it (knowl fix --apply writes the change)"
        elif ctx.git is not None and ctx.git.history.unknown is not None:
            # It may have been removed where git cannot see (before a shallow clone's oldest
            # commit, in a version git could not read): say so, claim nothing.
            message += f"; whether and when it was removed is {ctx.git.history.unknown_text}"
        if hint is None:  # looked up only when shown: lookups count against the hint budget
            hint = ctx.entity_hint(ref.value)
        yield page.path, finding_at(UNKNOWN_SL_REF.code, ref.span, message, hint, subject=ref.value)


def _when(ctx: RuleContext, ref: str | None) -> str:
    """Where a change was made, for a message: a commit, or the working tree."""
    if ref == WORKING_TREE or ctx.git is None:
        return "by uncommitted changes in the working tree"
    if ref is None or ref not in ctx.git.history.commits:
        return ctx.git.history.unknown_text if ctx.git.history.unknown else "in an unknown commit"
    commit = ctx.git.history.commits[ref]
    return f'in commit {commit.sha[:12]} ({commit.date[:10]}, "{commit.subject}")'


def _renamed(ctx: RuleContext, name: str) -> tuple[str, str] | None:
    """When history shows `name` renamed to a live entity (removed in the commit that added
    one of the same kind and definition): what to say, and the hint."""
    if ctx.git is None:
        return None
    found = ctx.git.history.renamed(name, ctx.layer.entities)
    if found is None:
        return None
    new, ref = found
    return (
        f"it was renamed to '{new}' {_when(ctx, ref)}",
        f"did you mean '{new}'? run knowl fix to propose the rename (knowl fix --apply writes it)",
    )


def _hidden_message(item: str, hidden: list[Page], scope: str) -> str:
    where = ", ".join(p.path for p in hidden)
    return f"{item} names a page that is not visible from {scope_label(scope)} ({where})"


def _ambiguous(
    page: Page, item: str, resolution: Resolution, span: Span, mode: str = OBSIDIAN
) -> Emitted:
    if not resolution.ambiguous:
        return
    chosen = resolution.pages[0]
    others = ", ".join(p.path for p in resolution.ambiguous)
    if mode == DENDRON:
        vault = chosen.rel.rpartition("/")[0] or "<vault>"
        hint = f"name its vault: dendron://{vault}/{chosen.id}"
    else:
        hint = f"qualify it with its folder: {chosen.rel}"
    yield (
        page.path,
        finding_at(
            AMBIGUOUS_LINK.code,
            span,
            f"{item} fits several pages: it resolves to {chosen.path}, not {others}",
            hint,
        ),
    )


def _refs(ctx: RuleContext, page: Page) -> Emitted:
    for ref in page.parsed.fields.refs:
        resolution = ctx.index.resolve(ref.value, page.scope)
        if resolution.pages:
            yield from _ambiguous(page, f"ref '{ref.value}'", resolution, ref.span, ctx.index.mode)
            continue
        if resolution.hidden:
            yield (
                page.path,
                finding_at(
                    INVISIBLE_TARGET.code,
                    ref.span,
                    _hidden_message(f"ref '{ref.value}'", resolution.hidden, page.scope),
                    "global pages are read by everyone and must not depend on personal pages",
                ),
            )
        else:
            yield (
                page.path,
                finding_at(
                    UNKNOWN_REF.code,
                    ref.span,
                    f"ref '{ref.value}' names no page visible from {scope_label(page.scope)}",
                    _broken_hint(ctx, ref.value, page.scope),
                ),
            )


def _links(ctx: RuleContext, page: Page, headings: _Headings) -> Emitted:
    for link in page.parsed.links:
        if link.form == MARKDOWN:
            continue  # rules/mdlinks.py
        if not link.target:
            yield from _heading(ctx, page, link, [page], headings)
            continue
        if is_wildcard(link.target, ctx.index.mode):
            continue  # `![[a.b.*]]`: whatever it matches, Dendron shows
        resolution = ctx.index.resolve(link.target, page.scope)
        if resolution.pages:
            yield from _ambiguous(page, link.raw, resolution, link.span, ctx.index.mode)
            if resolution.case_only:
                yield from _case_only(page, link, resolution.pages[0])
            yield from _heading(ctx, page, link, resolution.pages, headings)
        elif is_file_target(link.target) and ctx.index.find_file(link.target, page.scope):
            continue
        elif (
            is_file_target(link.target)
            and not resolution.hidden
            and (hidden_files := ctx.index.hidden_files(link.target, page.scope))
        ):
            yield (
                page.path,
                finding_at(
                    INVISIBLE_TARGET.code,
                    link.span,
                    f"{link.raw} names a file that is not visible from "
                    f"{scope_label(page.scope)} ({', '.join(hidden_files)})",
                    "global pages are read by everyone and must not depend on personal files",
                ),
            )
        elif resolution.hidden:
            yield (
                page.path,
                finding_at(
                    INVISIBLE_TARGET.code,
                    link.span,
                    _hidden_message(link.raw, resolution.hidden, page.scope),
                    "global pages are read by everyone and must not depend on personal pages",
                ),
            )
        elif is_file_target(link.target) and not _note_name(ctx, link.target):
            yield (
                page.path,
                finding_at(
                    BROKEN_LINK.code,
                    link.span,
                    f"{link.raw} points at no page visible from {scope_label(page.scope)} "
                    "and no file under the knowledge folder",
                ),
            )
        else:
            yield (
                page.path,
                finding_at(
                    BROKEN_LINK.code,
                    link.span,
                    f"{link.raw} points at no page visible from {scope_label(page.scope)}",
                    _broken_hint(ctx, note_name(link.target), page.scope, link.target),
                ),
            )


def _case_only(page: Page, link: Link, target: Page, name: str | None = None) -> Emitted:
    """KB109 for a link that resolved to `target` only by ignoring case (off unless
    `[links] case_only` or `[rules]` turns it on: then it is dropped as any rule that is off,
    after suppressions have seen it). `name`: how the link should name it (default: its id,
    or its path under the scope folder for a link with `/`)."""
    if name is None:
        name = target.rel if "/" in link.target else target.id
    yield (
        page.path,
        finding_at(
            CASE_ONLY_LINK.code,
            link.span,
            f"{link.raw} names {target.path} only when case is ignored; a case-exact host "
            "(Quartz, most static sites) publishes it as a broken link",
            f"write it as '{name}'",
        ),
    )


def _broken_hint(
    ctx: RuleContext, target: str, scope: str, written: str | None = None
) -> str | None:
    """A broken name's hint: the page it names when case is ignored, if any, else the nearest
    id. `target` is the name looked up, `written` the link's target as written when it differs
    (`dendron://vault/note` looks up `note`). "Differs only in case" is said only when it does,
    and "links match case exactly" only in exact mode (Obsidian and Dendron ignore case)."""
    variants = ctx.index.case_variants(target, scope)
    if not variants:
        return ctx.page_hint(target, scope)
    names = " or ".join(f"'{name}'" for name in variants)
    as_written = written if written is not None else target
    if ctx.index.mode == EXACT and all(
        name != as_written and name.casefold() == as_written.strip("/").casefold()
        for name in variants
    ):
        return f"did you mean {names}? it differs only in case, and links match case exactly"
    return f"did you mean {names}?"


def _note_name(ctx: RuleContext, target: str) -> bool:
    """In Dendron mode a name without `/` (`dendron://vault/` aside) is a note's, whose dots
    are its hierarchy (`a.b.c`), not a file's extension."""
    return ctx.index.mode == DENDRON and "/" not in note_name(target)


# Obsidian's normalisation of a heading, in a link and in the page: these characters become
# spaces, runs of spaces one, the ends trimmed (then compared case-insensitively).
_OBSIDIAN_SEPARATORS = re.compile(r"[!\"#$%&()*+,.:;<=>?@^`{|}~/\[\]\\]")


def obsidian_heading_key(text: str) -> str:
    """How Obsidian compares headings: `hasTag()` and `hasTag` are one heading."""
    return " ".join(_OBSIDIAN_SEPARATORS.sub(" ", strip_inline(text)).split()).casefold()


def dendron_heading_keys(texts: list[str]) -> frozenset[str]:
    """How Dendron names the headings of a note: by their text, or by their slugs
    (`useful-extensions`; a second heading of one slug is `…-1`)."""
    return frozenset((*(heading_key(text) for text in texts), *dendron.slugs(texts)))


class _Headings:
    """The headings of the pages links point at, prepared once per run: each page's heading
    keys as a set (a link is a lookup, not a pass over the target's headings), and, for each
    set of target pages a broken link meets, the index its did-you-mean hints come from. The
    hints charge the run's hint budget like every other did-you-mean (support/hints.py), so a
    page of thousands of headings and thousands of `[[#…]]` links checks in linear time."""

    def __init__(self, ctx: RuleContext) -> None:
        self._ctx = ctx
        self._keys: dict[str, frozenset[str]] = {}  # page path -> its heading keys
        self._names: dict[tuple[str, ...], NearNames] = {}  # target paths -> heading texts
        self._hints: dict[tuple[tuple[str, ...], str], str | None] = {}
        self._outlines: dict[str, Outline] = {}  # page path -> its outline (nested links)
        # How a heading is named in this mode: by one key, or (Dendron) by its text and slug.
        self._key: Callable[[str], str] = (
            obsidian_heading_key if ctx.index.mode == OBSIDIAN else heading_key
        )
        self._named: Callable[[list[str]], frozenset[str]] = (
            dendron_heading_keys
            if ctx.index.mode == DENDRON
            else lambda texts: frozenset(self._key(text) for text in texts)
        )

    def has(self, targets: list[Page], heading: str) -> bool:
        wanted = self._named([heading])
        for target in targets:
            keys = self._keys.get(target.path)
            if keys is None:
                keys = self._keys[target.path] = self._named(
                    [h.text for h in target.parsed.headings]
                )
            if not wanted.isdisjoint(keys):
                return True
        if "#" in heading:  # `[[Page#A#B]]`: heading B within the section of heading A
            parts = [self._key(part) for part in heading.split("#")]
            return any(self._outline(target).holds(parts) for target in targets)
        return False

    def _outline(self, target: Page) -> Outline:
        outline = self._outlines.get(target.path)
        if outline is None:
            outline = self._outlines[target.path] = Outline(target.parsed.headings, self._key)
        return outline

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


class Outline:
    """A page's headings as sections, for `[[Page#A#B]]`: heading B within the section of
    heading A (a deeper heading before the next heading of A's level or higher), and so on,
    as Obsidian resolves nested links. Each step is a few binary searches, so a page of
    thousands of headings and thousands of nested links checks in n log n."""

    def __init__(
        self, headings: tuple[Heading, ...], key: Callable[[str], str] = heading_key
    ) -> None:
        self.levels = [h.level for h in headings]
        self.at: dict[tuple[str, int], list[int]] = defaultdict(list)
        for position, h in enumerate(headings):
            self.at[(key(h.text), h.level)].append(position)
        # section_end[i]: the position of the next heading of level <= headings[i]'s.
        self.section_end = [len(headings)] * len(headings)
        open_sections: list[int] = []
        for position, level in enumerate(self.levels):
            while open_sections and self.levels[open_sections[-1]] >= level:
                self.section_end[open_sections.pop()] = position
            open_sections.append(position)

    def holds(self, keys: list[str]) -> bool:
        start, end, level = 0, len(self.levels), 0
        for key in keys:
            found = end
            for deeper in range(level + 1, MAX_LEVEL + 1):
                positions = self.at.get((key, deeper))
                if positions:
                    i = bisect.bisect_left(positions, start)
                    if i < len(positions) and positions[i] < found:
                        found = positions[i]
            if found >= end:
                return False
            level, start, end = self.levels[found], found + 1, self.section_end[found]
        return True


def _heading(
    ctx: RuleContext, page: Page, link: Link, targets: list[Page], headings: _Headings
) -> Emitted:
    heading = link.heading
    if not heading:
        return
    name = link.target or page.id
    # Dendron: a note reference's range names up to two anchors (`#a:#^b`), or none.
    wanted = dendron.anchors(heading) if ctx.index.mode == DENDRON else [heading]
    for anchor in wanted:
        finding = _anchor(ctx, link, name, anchor, targets, headings)
        if finding is not None:
            yield page.path, finding
            return


def _anchor(
    ctx: RuleContext,
    link: Link,
    name: str,
    heading: str,
    targets: list[Page],
    headings: _Headings,
) -> Finding | None:
    """The KB105 of one heading or `^block` a link names in its targets, if any."""
    if heading.startswith("^"):
        block = heading[1:].strip()
        if ctx.index.mode == EXACT:
            return None  # `#^block` references are checked as Obsidian and Dendron do only
        if ctx.index.mode == OBSIDIAN and "_" in block:
            pass  # Obsidian's block ids have letters, digits and `-` only (Dendron's `_` too)
        elif any(block in t.parsed.blocks for t in targets):
            return None
        return finding_at(
            UNKNOWN_HEADING.code,
            link.span,
            f"{link.raw}: page '{name}' has no block '^{block}'",
            "a block id is `^id` at the end of a line of the target page",
        )
    if headings.has(targets, heading):
        return None
    return finding_at(
        UNKNOWN_HEADING.code,
        link.span,
        f"{link.raw}: page '{name}' has no heading '{heading}'",
        headings.hint(targets, heading),
    )


def _directives(ctx: RuleContext, page: Page) -> Emitted:
    for directive in page.parsed.directives:
        if ctx.layer.resolve_attribute(directive.name) is not None:
            continue
        entity_name, _, attribute = directive.name.rpartition(".")
        entity = ctx.layer.entities.get(entity_name)
        if entity is None:
            message = f"{directive.raw} names no semantic entity '{entity_name or directive.name}'"
            renamed = _renamed(ctx, entity_name) if entity_name else None
            hint: str | None
            if renamed is not None:
                message, hint = f"{message}; {renamed[0]}", renamed[1]
            elif entity_name:
                hint = ctx.entity_hint(entity_name)
            else:
                hint = "write << sl:<connection>.<source>[.<member>].<attribute> >>"
            yield (
                page.path,
                finding_at(UNKNOWN_DIRECTIVE_TARGET.code, directive.span, message, hint),
            )
        else:
            kinds = ctx.layer.members.get(entity_name, {entity.kind: entity})
            allowed = sorted({a for member in kinds.values() for a in member.attributes})
            yield (
                page.path,
                finding_at(
                    UNKNOWN_DIRECTIVE_TARGET.code,
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
                    UNBOUND_FINGERPRINT.code,
                    bound.key_span,
                    f"bound fingerprint '{bound.entity}' is not in the page's sl_refs",
                    "remove the entry or add the entity to sl_refs",
                ),
            )
