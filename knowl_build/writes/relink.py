"""Links to a moved page or file, rewritten in their own form (`knowl fix`).

A link the checker finds broken is rewritten when git shows where what it named went
(`history.moves`): the target was renamed or moved, or the linking page itself was (its
relative paths now start elsewhere). A Markdown link keeps its form: a relative path stays
relative, recomputed from the linking page; `%20` encoding, angle brackets, the `#fragment`,
the link text, a reference definition (rewritten once, where it is) all stay. A path written
without `.md` stays without it, a folder path (`setup/`) stays one. A wiki-link's name becomes
the new page's name (its id, or its path under the scope folder when it was written with a
`/` or the id alone would name another page); the heading and alias stay.

Site-absolute links (`/a/b/`) are not rewritten: what they mean depends on the site.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import NamedTuple

from knowl_build.config import EXACT
from knowl_build.linkpaths import (
    FILE,
    PAGE_SUFFIX,
    PRETTY_INDEXES,
    forms,
    leaves,
    relative_path,
    rewritten,
)
from knowl_build.model import MARKDOWN, Link, Page, TextIndex
from knowl_build.parse.text import decode
from knowl_build.pipeline.analysis import Analysis
from knowl_build.resolve import fold, place


class Relink(NamedTuple):
    start: int  # offset in the page's text
    old: str  # the text there now
    new: str


@dataclass(frozen=True, slots=True)
class Relinks:
    """The rewrites of one page's links, in the order of the page."""

    edits: list[Relink] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.edits)

    def shown(self) -> list[str]:
        """Each rewrite in a few words, for a page knowl does not edit."""
        return [f"relink {r.old} to {r.new}" for r in self.edits]


def moved_links(analysis: Analysis, page: Page, moves: dict[str, str]) -> Relinks:
    """The rewrites of the page's broken links whose target `moves` (old path -> new path)
    knows, on the page's text as it is on disk (each checked to hold what it replaces)."""
    if not moves or not page.parsed.links:
        return Relinks()
    try:
        text = decode((analysis.root / page.path).read_bytes())
    except OSError:
        return Relinks()
    if text is None:
        return Relinks()
    origin = {new: old for old, new in moves.items()}.get(page.path)
    index = TextIndex(text)
    places = _Places(analysis)
    found: dict[int, Relink] = {}
    for link in page.parsed.links:
        resolution = analysis.index.resolve_link(page, link)
        if (
            resolution.pages
            or resolution.hidden
            or resolution.file
            or resolution.unchecked
            or resolution.outside
        ):
            continue
        if link.form == MARKDOWN:
            relink = _markdown(places, page, link, text, moves, origin)
        else:
            relink = _wiki(analysis, places, page, link, text, index, moves)
        if relink is not None and relink.old != relink.new:
            found.setdefault(relink.start, relink)
    return Relinks([found[start] for start in sorted(found)])


class _Places:
    """The pages by path, and what else a Markdown path may name."""

    def __init__(self, analysis: Analysis) -> None:
        self.pages = {p.path: p for p in analysis.pages}
        self.settings = analysis.index.link_settings

    def exists(self, path: str) -> bool:
        return path in self.pages or self.settings.exists(path) == FILE


def apply_relinks(text: str, relinks: list[Relink]) -> str:
    """`text` with each rewrite made (each checked to hold what it replaces)."""
    pieces, at = [], 0
    for relink in sorted(relinks):
        if relink.start < at or text[relink.start : relink.start + len(relink.old)] != relink.old:
            continue
        pieces += [text[at : relink.start], relink.new]
        at = relink.start + len(relink.old)
    return "".join(pieces) + text[at:]


def _markdown(
    places: _Places,
    page: Page,
    link: Link,
    text: str,
    moves: dict[str, str],
    origin: str | None,
) -> Relink | None:
    if link.at < 0 or not link.destination or link.target.startswith("/"):
        return None
    if text[link.at : link.at + len(link.destination)] != link.destination:
        return None
    for base in (page.path, origin):
        if base is None:
            continue
        path = relative_path(base, link.target)
        if leaves(path):
            continue
        for candidate in forms(path, link.target, pretty=False):
            new = moves.get(candidate)
            if new is None and base != page.path and places.exists(candidate):
                new = candidate  # the page moved; what it linked did not
            if new is None:
                continue
            shown = _as_written(link.target, candidate, new)
            return Relink(link.at, link.destination, rewritten(link.destination, shown, page.path))
    return None


def _as_written(target: str, candidate: str, new: str) -> str:
    """The new path in the form the target was written: without `.md` when the target had
    no extension, as a folder (`x/`) when it named a folder's index page."""
    if target.endswith("/") and posixpath.basename(new) in PRETTY_INDEXES:
        return posixpath.dirname(new) + "/"
    if (
        candidate.endswith(PAGE_SUFFIX)
        and not posixpath.splitext(posixpath.basename(target))[1]
        and new.endswith(PAGE_SUFFIX)
    ):
        return new[: -len(PAGE_SUFFIX)]
    return new


def _wiki(
    analysis: Analysis,
    places: _Places,
    page: Page,
    link: Link,
    text: str,
    index: TextIndex,
    moves: dict[str, str],
) -> Relink | None:
    knowledge = analysis.config.knowledge_dir
    pages = places.pages
    exact = analysis.index.mode == EXACT
    visible = analysis.index.visible_scopes(page.scope)
    key = link.target if exact else fold(link.target)
    named: list[Page] = []
    for old, new in moves.items():
        was = place(old, knowledge) if old.endswith(PAGE_SUFFIX) else None
        target = pages.get(new)
        if was is None or target is None or was.scope not in visible:
            continue
        name = was.rel if "/" in link.target else was.id
        if (name if exact else fold(name)) == key:
            named.append(target)
    if len(named) != 1:
        return None
    target = named[0]
    name = target.rel if "/" in link.target else target.id
    if analysis.index.resolve(name, page.scope).pages != [target]:
        name = target.rel
        if analysis.index.resolve(name, page.scope).pages != [target]:
            return None
    start = index.starts[link.span.line - 1] + link.span.column - 1
    at = text.find(link.target, start, start + len(link.raw))
    if at == -1:
        return None
    return Relink(at, link.target, name)
