"""Backlinks in context: the sentence around a link, in the page that holds it.

A link's record has its file position (line and column, 1-based) and the record the line where
the body starts, so the link is found in the raw body exactly where the scan found it. The
sentence is read from the rendered body (live definitions filled in) when the rendering kept
the lines and the link is on its line, else from the raw body. Markup is dropped: the result
is three strings of plain text (before, the link's own text, after), escaped by the template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from msgspec import UnsetType

from knowl_build.artifacts.schema import LinkRecord, PageRecord
from knowl_build.core.model import MARKDOWN
from knowl_build.parse.body import strip_inline
from knowl_build.site.markup import WIKI, parse_wiki

# A line that starts a block of its own: a list item, a heading, a quote, a table row, a fence.
_BLOCK_START = re.compile(r"^\s{0,3}(?:[-*+]\s|\d{1,9}[.)]\s|#{1,6}(?:\s|$)|>|\||```|~~~)")
_MARKER = re.compile(r"^\s{0,3}(?:[-*+]\s+|\d{1,9}[.)]\s+|#{1,6}\s+|>\s?)+")
_SENTENCE_END = re.compile(r"[.!?][\"'’”)\]]*(?=\s)")
MAX_LINES = 6  # of the paragraph on each side of the link's line
SIDE_CHARS = 160  # of the sentence on each side of the link


@dataclass(frozen=True, slots=True)
class Snippet:
    before: str
    text: str
    after: str


def _label(match: re.Match[str]) -> str:
    """A Dendron `[[label|note]]` as a reader sees it: its label."""
    found = parse_wiki(match.group(2), bool(match.group(1)), label_first=True)
    return match.group(0) if found is None else found.text


def _plain(text: str, label_first: bool = False) -> str:
    """Inline markup dropped, white space collapsed; a space kept at either end if there was
    one, so the pieces join as they were written. `label_first`: wiki-links are Dendron's
    and read as their labels."""
    if label_first and "[[" in text:
        text = WIKI.sub(_label, text)
    inner = strip_inline(text)
    if not inner:
        return " " if text[:1].isspace() or text[-1:].isspace() else ""
    lead = " " if text[:1].isspace() else ""
    trail = " " if text[-1:].isspace() else ""
    return lead + inner + trail


def _clip_start(text: str) -> str:
    if len(text) <= SIDE_CHARS:
        return text
    cut = text.find(" ", len(text) - SIDE_CHARS)
    return "…" + text[cut if cut != -1 else len(text) - SIDE_CHARS :]


def _clip_end(text: str) -> str:
    if len(text) <= SIDE_CHARS:
        return text
    cut = text.rfind(" ", 0, SIDE_CHARS)
    return text[: cut if cut > 0 else SIDE_CHARS] + "…"


def _lines(record: PageRecord, index: int, column: int, raw: str) -> tuple[list[str], int]:
    """The body's lines to read from, and the link's column in its line: the rendered body's
    when it has the same lines and the link is found on its line, else the raw body's."""
    raw_lines = record.raw_body.split("\n")
    rendered = record.body.split("\n")
    if len(rendered) != len(raw_lines):
        return raw_lines, column
    line = raw_lines[index]
    if rendered[index] == line:
        return rendered, column
    # Live definitions filled in before the link move it: the same occurrence of its text.
    at = -1
    for _ in range(line.count(raw, 0, column) + 1):
        at = rendered[index].find(raw, at + 1)
        if at == -1:
            return raw_lines, column
    return rendered, at


def snippet(record: PageRecord, link: LinkRecord, label_first: bool = False) -> Snippet | None:
    """The sentence of `record`'s body around `link` (None for a frontmatter `refs` item, or a
    link not found where its record says). `label_first`: Dendron's `[[label|note]]`."""
    if link.kind not in ("link", "embed"):
        return None
    first = record.body_line if not isinstance(record.body_line, UnsetType) else 1
    raw_lines = record.raw_body.split("\n")
    index = link.line - first
    if not 0 <= index < len(raw_lines):
        return None
    raw_line = raw_lines[index]
    column = link.column - 1
    if link.form == MARKDOWN:
        # `[text](dest)` as far as its line holds it, read as its text.
        end = link.end_column if link.end_line == link.line else len(raw_line)
        raw = raw_line[column : end if isinstance(end, int) else len(raw_line)]
        text = link.text if isinstance(link.text, str) else strip_inline(raw)
        if not raw.startswith(("[", "![")):
            return None
    else:
        match = WIKI.match(raw_line, column)
        if match is None:
            return None
        found = parse_wiki(match.group(2), bool(match.group(1)), label_first)
        if found is None:
            return None
        raw, text = match.group(0), found.text
    lines, column = _lines(record, index, column, raw)

    start = index
    while (
        start > 0
        and index - start < MAX_LINES
        and lines[start - 1].strip()
        and not _BLOCK_START.match(lines[start])
        and not lines[start - 1].lstrip().startswith("#")
    ):
        start -= 1
    end = index
    while (
        end + 1 < len(lines)
        and end - index < MAX_LINES
        and lines[end + 1].strip()
        and not _BLOCK_START.match(lines[end + 1])
    ):
        end += 1
    paragraph = " ".join(lines[start : end + 1])
    at = sum(len(line) + 1 for line in lines[start:index]) + column
    stop = at + len(raw)

    begin = 0
    for mark in _SENTENCE_END.finditer(paragraph, 0, at):
        begin = mark.end()
    finish = len(paragraph)
    mark_after = _SENTENCE_END.search(paragraph, stop)
    if mark_after is not None:
        finish = mark_after.end()
    before = paragraph[begin:at]
    if begin == 0:
        before = _MARKER.sub("", before)
    # Other links and markup in the sentence read as their text.
    before = _plain(before, label_first).lstrip()
    after = _plain(paragraph[stop:finish], label_first).rstrip()
    return Snippet(_clip_start(before), text, _clip_end(after))
