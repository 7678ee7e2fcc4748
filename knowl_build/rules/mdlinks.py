"""Markdown links and images (`[text](dest)`, `[text][label]`, `![alt](dest)`): the same
codes as wiki-links, each message quoting the link as written.

- KB103: the path names no page and no file of the project (a path to an image, a PDF or any
  other file must exist inside the project); in Obsidian mode, not as Obsidian resolves it
  either (from the vault root, or by file name);
- KB104: it names a page that is not visible from the linking page;
- KB105: its `#fragment` names no heading of the page it names, by GitHub's (or MkDocs')
  slug of the heading (in Obsidian mode also by the heading's text, or a `^block` id);
- KB008: the path leads outside the project;
- KB108: in Obsidian mode, the file name it falls back to fits several pages;
- KB109: in Obsidian mode, that file name names its page only when case is ignored.

Site-absolute links without `[links] site_root`, and destinations `[links] exclude` matches,
are not checked (`resolve.PageIndex.resolve_link`). The rules are declared where wiki-links'
are (rules/references.py, rules/file_findings.py); this module only emits them.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable

from knowl_build.core.config import OBSIDIAN
from knowl_build.core.linkpaths import heading_slugs, leaves, relative_path
from knowl_build.core.model import MARKDOWN, Link, Page
from knowl_build.core.resolve import Resolution, fold, scope_label
from knowl_build.rules.context import Emitted, RuleContext, finding_at
from knowl_build.rules.file_findings import SYMLINK_ESCAPE
from knowl_build.rules.references import (
    AMBIGUOUS_LINK,
    BROKEN_LINK,
    HEADING_CUTOFF,
    INVISIBLE_TARGET,
    UNKNOWN_HEADING,
    _case_only,
    _Headings,
)
from knowl_build.support.hints import SKIPPED, NearNames, suggestion

__all__ = ["check_markdown_links"]


def check_markdown_links(ctx: RuleContext, pages: Iterable[Page] | None = None) -> Emitted:
    """The findings of `pages`' Markdown links (default: every page of the context)."""
    checker = _Checker(ctx)
    for page in ctx.pages if pages is None else pages:
        for link in page.parsed.links:
            if link.form == MARKDOWN:
                yield from checker.link(page, link)


class _Checker:
    """The run's state: headings and slugs of the pages links point at, and the pages by
    file name for did-you-mean hints, each prepared once."""

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx
        self.headings = _Headings(ctx)
        self._slugs: dict[str, frozenset[str]] = {}
        self._by_name: dict[str, list[Page]] | None = None
        self._near: dict[str, NearNames] = {}

    def link(self, page: Page, link: Link) -> Emitted:
        ctx = self.ctx
        resolution = ctx.index.resolve_link(page, link)
        if resolution.unchecked or resolution.file:
            return
        if resolution.internal:
            folder = next(
                part for part in resolution.internal.split("/") if part in (".git", ".knowl")
            )
            yield (
                page.path,
                finding_at(
                    SYMLINK_ESCAPE.code,
                    link.span,
                    f"{link.raw} points into {folder}/, which is no part of the project's files",
                    f"knowl never reads or links {folder}/: link to a copy of the file in the "
                    "project, or drop the link",
                ),
            )
        elif resolution.outside:
            yield (
                page.path,
                finding_at(
                    SYMLINK_ESCAPE.code,
                    link.span,
                    f"{link.raw} points outside the project",
                    "knowl reads nothing outside the project root: link to a copy inside it, "
                    "or to its URL",
                ),
            )
        elif resolution.pages:
            yield from self._ambiguous(page, link, resolution)
            if resolution.case_only:  # Obsidian's fallback by file name ignored case (KB109)
                target = resolution.pages[0]
                path = posixpath.relpath(target.path, posixpath.dirname(page.path))
                yield from _case_only(page, link, target, path)
            yield from self._fragment(page, link, resolution.pages)
        elif resolution.hidden or resolution.hidden_files:
            where = ", ".join(p.path for p in resolution.hidden) or ", ".join(
                resolution.hidden_files
            )
            what = "a page" if resolution.hidden else "a file"
            yield (
                page.path,
                finding_at(
                    INVISIBLE_TARGET.code,
                    link.span,
                    f"{link.raw} names {what} that is not visible from "
                    f"{scope_label(page.scope)} ({where})",
                    "global pages are read by everyone and must not depend on personal pages "
                    "or files",
                ),
            )
        else:
            yield (
                page.path,
                finding_at(
                    BROKEN_LINK.code,
                    link.span,
                    f"{link.raw} points at no page or file: {self._where(page, link)}",
                    self._hint(page, link),
                ),
            )

    def _where(self, page: Page, link: Link) -> str:
        """What the path was looked for as, in the message."""
        if link.target.startswith("/"):
            root = self.ctx.index.link_settings.site_root or ""
            return f"nothing at {link.target} under {root or 'the project root'}/"
        path = relative_path(page.path, link.target)
        if leaves(path):
            return f"{link.target} is outside the project"
        return f"{path or '.'} does not exist"

    def _hint(self, page: Page, link: Link) -> str | None:
        """A page of the same file name elsewhere, as a path from the linking page."""
        if self._by_name is None:
            by_name: dict[str, list[Page]] = defaultdict(list)
            for other in self.ctx.pages:
                by_name[fold(posixpath.basename(other.path))].append(other)
            self._by_name = dict(by_name)
        name = posixpath.basename(link.target.rstrip("/"))
        if not name.endswith(".md"):
            name += ".md"
        visible = self.ctx.index.visible_scopes(page.scope)
        found = [p for p in self._by_name.get(fold(name), ()) if p.scope in visible]
        if len(found) != 1:
            return None
        where = posixpath.relpath(found[0].path, posixpath.dirname(page.path))
        return f"did you mean '{where}'?"

    def _ambiguous(self, page: Page, link: Link, resolution: Resolution) -> Emitted:
        if not resolution.ambiguous:
            return
        chosen = resolution.pages[0]
        others = ", ".join(p.path for p in resolution.ambiguous)
        where = posixpath.relpath(chosen.path, posixpath.dirname(page.path))
        yield (
            page.path,
            finding_at(
                AMBIGUOUS_LINK.code,
                link.span,
                f"{link.raw} fits several pages: it resolves to {chosen.path}, not {others}",
                f"write the path from this page: {where}",
            ),
        )

    def slugs(self, target: Page) -> frozenset[str]:
        found = self._slugs.get(target.path)
        if found is None:
            found = self._slugs[target.path] = heading_slugs(
                (h.text, h.anchor) for h in target.parsed.headings
            )
        return found

    def _fragment(self, page: Page, link: Link, targets: list[Page]) -> Emitted:
        fragment = link.heading
        if not fragment:
            return
        obsidian = self.ctx.index.mode == OBSIDIAN
        name = posixpath.basename(targets[0].path)
        if fragment.startswith("^"):
            block = fragment[1:].strip()
            if not obsidian or any(block in t.parsed.blocks for t in targets):
                return  # `#^block` is checked as Obsidian resolves it only
            message = f"{link.raw}: page '{name}' has no block '^{block}'"
            hint: str | None = "a block id is `^id` at the end of a line of the target page"
        else:
            wanted = fragment.strip()
            if any(wanted in self.slugs(t) or wanted.casefold() in self.slugs(t) for t in targets):
                return
            if obsidian and self.headings.has(targets, wanted):
                return
            message = f"{link.raw}: page '{name}' has no heading '#{fragment}'"
            hint = self._slug_hint(targets, wanted)
        yield page.path, finding_at(UNKNOWN_HEADING.code, link.span, message, hint)

    def _slug_hint(self, targets: list[Page], fragment: str) -> str | None:
        """The nearest heading slug of the targets (charged to the run's hint budget)."""
        key = "\0".join(t.path for t in targets)
        names = self._near.get(key)
        if names is None:
            names = self._near[key] = NearNames(
                sorted({slug for t in targets for slug in self.slugs(t)})
            )
        budget = self.ctx._hint_budget
        found = names.closest(fragment, HEADING_CUTOFF, budget)
        if found is SKIPPED:
            return budget.notice()
        return suggestion(found if found is None else f"#{found}")
