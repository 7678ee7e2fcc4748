"""What is at a position of a page: a link, an entity (in `sl_refs`, a directive or
`bound_fingerprints`), a `refs` entry or a heading. Positions are 1-based (line, column) in
characters, as the checker's spans are; `end_column` is inclusive."""

from __future__ import annotations

from typing import NamedTuple

from knowl_build.core.model import Heading, Link, Located, Page, Span
from knowl_build.core.resolve import PageIndex, Resolution


class At(NamedTuple):
    """One thing under the cursor: `kind` is link, entity, ref or heading."""

    kind: str
    span: Span
    link: Link | None = None
    name: str = ""  # the entity's or the referenced page's name
    heading: Heading | None = None


def inside(span: Span, line: int, column: int) -> bool:
    if line < span.line or line > span.end_line:
        return False
    if line == span.line and column < span.column:
        return False
    # One past the end still counts: a cursor right after `]]` is on the link.
    return not (line == span.end_line and column > span.end_column + 1)


def at(page: Page, line: int, column: int) -> At | None:
    parsed = page.parsed
    for link in parsed.links:
        if inside(link.span, line, column):
            return At("link", link.span, link=link)
    for directive in parsed.directives:
        if inside(directive.span, line, column):
            return At("entity", directive.span, name=directive.name)
    fields = parsed.fields
    for ref in fields.sl_refs:
        if inside(ref.span, line, column):
            return At("entity", ref.span, name=ref.value)
    for bound in fields.bound_fingerprints:
        if inside(bound.key_span, line, column):
            return At("entity", bound.key_span, name=bound.entity)
    for ref in fields.refs:
        if inside(ref.span, line, column):
            return At("ref", ref.span, name=ref.value)
    for heading in parsed.headings:
        if heading.line == line:
            return At("heading", Span(line, 1, line, 1), heading=heading)
    return None


def target_of(index: PageIndex, page: Page, found: At) -> Resolution | None:
    """What a link or a `refs` entry resolves to."""
    if found.link is not None:
        if not found.link.target:
            return Resolution([page], [])
        return index.resolve_link(page, found.link)
    if found.kind == "ref":
        return index.resolve(found.name, page.scope)
    return None


def heading_line(target: Page, heading: str | None) -> int:
    """The 1-based line of the heading a link names on its target (1: the page's top)."""
    if not heading:
        return 1
    wanted = heading.strip().lstrip("#").casefold()
    from_slug = wanted.replace("-", " ")
    for item in target.parsed.headings:
        text = item.text.casefold()
        if wanted in (text, (item.anchor or "").casefold()) or from_slug == text:
            return item.line
    for item in target.parsed.headings:  # a slug that collapsed punctuation
        if _letters(item.text) == _letters(wanted):
            return item.line
    return 1


def _letters(text: str) -> str:
    return "".join(char for char in text.casefold() if char.isalnum())


def located_names(values: tuple[Located, ...]) -> list[str]:
    return [v.value for v in values]
