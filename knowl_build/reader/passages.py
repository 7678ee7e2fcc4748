"""The passage of a page that a query matched: its best-matching section and, in it, the line
with most of the query's terms, those terms marked. Search hits carry it (`section`,
`snippet`), and `get_context` cites the same line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from knowl_build.artifacts.schema import Heading, MixedSearchAnswer, PageRecord, SearchAnswer
from knowl_build.reader.view import ArtifactView

PASSAGE_CHARS = 240  # of the passage's line, at most
# A heading's anchor as the site makes it (site/markup.py's `slug`): markup left out, case
# folded, runs of spaces and dashes as one `-`.
_MARKUP = re.compile(r"[\[\]`*~\\<>]|!?\[\[|\]\]")
_NOT_SLUG = re.compile(r"[^\w\- ]+")
_DASHES = re.compile(r"[\s-]+")
_TOKEN = re.compile(r"[^\W_]+")


class Passage(NamedTuple):
    line: int  # in the page's file, frontmatter included
    text: str
    matches: list[tuple[int, int]]  # [start, end) of each matched word in `text`
    heading: Heading | None  # the section's heading (None: before the first heading)
    anchor: str | None


def slug(text: str) -> str:
    words = _NOT_SLUG.sub("", " ".join(_MARKUP.sub("", text).split()).casefold())
    return _DASHES.sub("-", words).strip("-") or "section"


def anchors(record: PageRecord) -> list[str]:
    """Each heading's anchor as the site gives it: its explicit id (`{ #id }`) or its slug,
    unique within the page (`x`, `x-1`, ...), the title taking the first; a first `# heading`
    equal to the title is the title's."""
    seen: dict[str, int] = {}

    def take(text: str, explicit: str | None = None) -> str:
        base = explicit or slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        return base if count == 0 else f"{base}-{count}"

    title = take(record.title)
    found = []
    for number, heading in enumerate(record.headings):
        if number == 0 and heading.level == 1 and slug(heading.text) == slug(record.title):
            found.append(title)
        else:
            explicit = heading.anchor if isinstance(heading.anchor, str) else None
            found.append(take(heading.text, explicit))
            if explicit is not None and slug(heading.text) != explicit:
                take(heading.text)  # the site anchors its text too
    return found


class _Line(NamedTuple):
    number: int  # in the body
    text: str
    spans: list[tuple[int, int]]
    terms: frozenset[str]


def _line(number: int, text: str, terms: set[str]) -> _Line:
    # Whoosh's stemmer, loaded only when a query runs (start-up time of the reader).
    from knowl_build.index.fields import _stem

    spans, found = [], set()
    for m in _TOKEN.finditer(text):
        term = _stem(m.group(0).lower())  # a token's `query_terms`, its one term
        if term in terms:
            spans.append(m.span())
            found.add(term)
    return _Line(number, text, spans, frozenset(found))


def _cut(text: str, matches: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """At most PASSAGE_CHARS of the line, from a little before its first match."""
    text = text.rstrip()
    start = len(text) - len(text.lstrip())
    if matches and matches[0][0] - start > PASSAGE_CHARS // 3:
        start = max(start, text.rfind(" ", 0, matches[0][0] - PASSAGE_CHARS // 6) + 1)
    end = min(len(text), start + PASSAGE_CHARS)
    prefix = "…" if start > 0 and text[:start].strip() else ""
    suffix = "…" if end < len(text) else ""
    shift = len(prefix) - start
    kept = [(a + shift, b + shift) for a, b in matches if a >= start and b <= end]
    return prefix + text[start:end] + suffix, kept


def passage(record: PageRecord, terms: set[str]) -> Passage | None:
    """The best-matching section (most distinct query terms in its heading and its lines
    together, the first of equals) and its line with most of them (the first of equals; the
    heading's when none of its lines has as many); None when no line and no heading has a query term."""
    first = record.body_line if isinstance(record.body_line, int) else 1
    # The rendered body (live definitions filled in) when it keeps the lines of the file.
    lines = record.raw_body.splitlines()
    rendered = record.body.splitlines()
    if len(rendered) == len(lines):
        lines = rendered
    headings = {h.line - first: (n, h) for n, h in enumerate(record.headings)}
    # Sections: (heading number or None: before the first heading, their lines).
    sections: list[tuple[int | None, list[_Line]]] = [(None, [])]
    for number, raw in enumerate(lines):
        if number in headings:
            at, heading = headings[number]
            sections.append((at, [_line(number, heading.text, terms)]))
        elif raw.strip():
            sections[-1][1].append(_line(number, raw, terms))
    best: tuple[int, int | None, _Line] | None = None
    for section, rows in sections:
        count = len(frozenset().union(*(row.terms for row in rows)))
        if count and (best is None or count > best[0]):
            # A line of the section before its heading, of as many terms.
            top = max(
                rows, key=lambda row: (len(row.terms), row.number not in headings, -row.number)
            )
            best = (count, section, top)
    if best is None:
        return None
    _count, section, top = best
    text, spans = _cut(top.text, top.spans)
    if section is None:
        return Passage(first + top.number, text, spans, None, None)
    heading = record.headings[section]
    return Passage(first + top.number, text, spans, heading, anchors(record)[section])


def attach(views: Sequence[ArtifactView], answer: SearchAnswer | MixedSearchAnswer) -> None:
    """Each page hit of the answer given its `section` and `snippet` (null when only its
    summary or tags matched), from the record of the repository it came from (`views`: the artifact first,
    then its peers)."""
    # Imported here: start-up time (the stemmer loads only when passages are made).
    from knowl_build.index.fields import query_terms

    terms = set(query_terms(answer["query"]))
    by_repo: dict[str, ArtifactView] = {}
    for view in views:
        by_repo.setdefault(view.repo, view)
    for hit in answer["hits"]:
        if hit["kind"] != "page":
            continue  # an entity: its description is its passage
        source = by_repo.get(hit["repo"])
        entry = None if source is None else source.entry_of_hit(hit)
        found = None if source is None or entry is None else passage(source.record(entry), terms)
        hit["section"] = None
        hit["snippet"] = None
        if found is not None:
            if found.heading is not None and found.anchor is not None:
                hit["section"] = {
                    "heading": found.heading.text,
                    "anchor": found.anchor,
                    "line": found.heading.line,
                }
            hit["snippet"] = {
                "text": found.text,
                "line": found.line,
                "matches": [[a, b] for a, b in found.matches],
            }
