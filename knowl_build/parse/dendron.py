"""Dendron's link syntax, for `[links] resolution = "dendron"`.

Dendron writes the label first, `[[label|note]]`, where Obsidian and knowl write it last. The
body scan reads every link the one way (parse/body.py), so its parse, cached by content,
depends on no configuration; `label_first` reads the links of a parsed page again the
Dendron way once the mode is known, after the cache, as the allowed keys are applied.

A note reference's anchor may be a range, `#start:#end`, either end a heading (by its text
or its slug, `#useful-extensions`), a block `^id`, Dendron's positions `^begin` and `^end`,
or `*` (up to the next heading), and the start may skip lines, `#start,1`: `anchors` gives
the ones there are to check.
"""

from __future__ import annotations

import dataclasses
import re

from knowl_build.core.model import WIKI, Link, ParsedPage
from knowl_build.parse.body import strip_inline, wiki_target

_OFFSET = re.compile(r",\s*\d+\s*$")  # `#heading,1`: skip a line of the referenced text
POSITIONS = frozenset({"^begin", "^end"})  # Dendron's reserved block anchors
_NOT_SLUG = re.compile(r"[^\w\- ]")


def label_first(parsed: ParsedPage) -> ParsedPage:
    """The page with its `[[a|b]]` links read as Dendron reads them: `b` is the target."""
    if not any(link.form == WIKI and "|" in link.raw for link in parsed.links):
        return parsed
    links = tuple(_relabel(link) for link in parsed.links)
    return dataclasses.replace(parsed, links=tuple(link for link in links if link is not None))


def _relabel(link: Link) -> Link | None:
    """`[[label|target#heading]]` read label first; the same checks as the body scan's, so
    `[[label|]]` is no link (nor is `[[|x]]` in any mode: the scan made none)."""
    if link.form != WIKI:
        return link  # a Markdown link: `[text](target)` has no such order
    inner = link.raw[link.raw.index("[[") + 2 : -2]
    bar = inner.find("|")
    if bar == -1:
        return link
    named = wiki_target(inner[bar + 1 :])
    if named is None:
        return None
    return link._replace(target=named[0], heading=named[1])


def anchors(heading: str) -> list[str]:
    """The anchors of a Dendron link's `#…` part to check, each without its `,N` offset:
    `start,1:#*` -> [`start`]; `^begin:#^end` -> []; `a:#^b` -> [`a`, `^b`]."""
    found = []
    for part in heading.split(":#"):
        part = _OFFSET.sub("", part).strip()
        if part and part != "*" and part not in POSITIONS:
            found.append(part)
    return found


def slug(text: str) -> str:
    """A heading's anchor as Dendron (GitHub's slugger) writes it: its text without markup,
    lower case, every character but letters, digits, `_`, `-` and spaces dropped, each space
    a `-` (`Useful Extensions` -> `useful-extensions`, `Header 2.2` -> `header-22`)."""
    return _NOT_SLUG.sub("", strip_inline(text).lower()).replace(" ", "-")


def slugs(texts: list[str]) -> list[str]:
    """The anchors of a note's headings in order, as GitHub's slugger numbers them: a slug
    already taken gets `-1`, `-2`, … (`addBehavior` twice: `addbehavior`, `addbehavior-1`)."""
    taken: dict[str, int] = {}
    out = []
    for text in texts:
        base = found = slug(text)
        while found in taken:
            taken[base] += 1
            found = f"{base}-{taken[base]}"
        taken[found] = 0
        out.append(found)
    return out
