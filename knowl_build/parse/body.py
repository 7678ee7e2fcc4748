"""Scanning a page body: wiki-links, live-definition directives, headings, code regions.

Code is text: links inside CommonMark code (fenced and indented blocks, code spans) are not
links. markdown-it-py finds the block structure; code spans are found with CommonMark's
backtick-run rule on the raw lines of each inline region, so positions stay exact.
Directives are found everywhere, code included, because that is where expressions are shown.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

from knowl_build.model import Directive, Heading, Link, Span, Suppression, TextIndex

WIKI_LINK = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")
DIRECTIVE = re.compile(
    r"(\\?)(?:<<[ \t]*sl:([A-Za-z0-9_.-]+)[ \t]*>>|\{\{[ \t]*sl:([A-Za-z0-9_.-]+)[ \t]*\}\})"
)
_BACKTICKS = re.compile(r"`+")
_BLOCK_MARKS = ("`", "~", "#", "\t", "=", "-", "\n ")

_md = MarkdownIt("commonmark").disable(["inline", "text_join"], ignoreInvalid=True)


# `<!-- knowl: disable-next-line KB401 KB103 -- a reason -->`; bounded, so that a page of
# unclosed comments costs linear time.
SUPPRESSION = re.compile(
    r"<!--[ \t\r\n]{0,20}knowl:[ \t]{0,20}(disable-next-line|disable)(?![\w-])([^>]{0,400}?)-->"
)
# The same in frontmatter, as a YAML comment: `# knowl: disable KB006`.
FM_SUPPRESSION = re.compile(
    r"(?:^|[ \t])#[ \t]{0,20}knowl:[ \t]{0,20}(disable-next-line|disable)(?![\w-])([^\n]{0,400})",
    re.MULTILINE,
)
_CODE_TOKEN = re.compile(r"[A-Za-z]{2}[0-9]{3}")


@dataclass(frozen=True, slots=True)
class BodyScan:
    links: tuple[Link, ...]
    directives: tuple[Directive, ...]
    headings: tuple[Heading, ...]
    h1: str | None
    suppressions: tuple[Suppression, ...] = ()


def suppression(
    match: re.Match[str], base: int, index: TextIndex, *, frontmatter: bool = False
) -> Suppression:
    """A suppression comment from its match (`base`: offset of the matched text)."""
    kind, rest = match.group(1), match.group(2)
    words = [w for w in re.split(r"[\s,]+", rest.split("--", 1)[0]) if w]
    # Words that are not rule codes make a suppression that matches nothing (KB011), never
    # one that silently hides every code.
    codes = tuple(w.upper() if _CODE_TOKEN.fullmatch(w) else w for w in words)
    start = base + match.start() + (match.group(0).find("#") if frontmatter else 0)
    return Suppression(
        next_line=kind == "disable-next-line",
        codes=codes,
        span=_span(index, start, base + match.end()),
        whole_file=frontmatter and kind == "disable",
    )


def _code_spans(text: str, base: int, out: list[tuple[int, int]]) -> None:
    """CommonMark code spans: a run of n backticks up to the next run of exactly n."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    i = 0
    while i < len(runs):
        start, end = runs[i]
        # A backslash before the run escapes its first backtick (outside code spans).
        slashes = 0
        k = start - 1
        while k >= 0 and text[k] == "\\":
            slashes += 1
            k -= 1
        if slashes % 2:
            start += 1
            if start == end:
                i += 1
                continue
        width = end - start
        for j in range(i + 1, len(runs)):
            if runs[j][1] - runs[j][0] == width:
                out.append((base + start, base + runs[j][1]))
                i = j + 1
                break
        else:
            i += 1


_LINK_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_WIKI_MARKUP = re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_HTML_TAG = re.compile(r"<[^>\n]+>")
_EMPHASIS = re.compile(r"\*+|~~|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_SPACES = re.compile(r"\s+")


def strip_inline(text: str) -> str:
    """Heading text with inline markup removed and whitespace collapsed."""
    text = _WIKI_MARKUP.sub(lambda m: m.group(2) or m.group(1), text)
    text = _LINK_MARKUP.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = text.replace("`", "")
    text = _EMPHASIS.sub("", text)
    text = _ESCAPE.sub(r"\1", text)
    return _SPACES.sub(" ", text).strip()


def heading_key(text: str) -> str:
    """How headings are compared: markup removed, whitespace collapsed, case folded."""
    return strip_inline(text).casefold()


def scan_body(text: str, body_offset: int, index: TextIndex) -> BodyScan:
    body = text[body_offset:]
    first_line = index.position(body_offset)[0]
    # markdown-it normalises line ends; keep the line count identical to ours.
    normalized = body.replace("\r\n", "\n").replace("\r", " ")
    lines_start = TextIndex(body).starts

    excluded_lines: set[int] = set()  # 0-based body lines inside code blocks
    spans: list[tuple[int, int]] = []  # body offsets of code spans
    headings: list[Heading] = []
    h1: str | None = None
    # Only code and headings matter here; a body without these characters has neither.
    if body[:1] in (" ", "\t") or any(mark in body for mark in _BLOCK_MARKS):
        tokens = _md.parse(normalized)
        for pos, token in enumerate(tokens):
            if token.map is None:
                continue
            if token.type in ("fence", "code_block"):
                excluded_lines.update(range(token.map[0], token.map[1]))
            elif token.type == "inline":
                lo = lines_start[token.map[0]]
                hi = lines_start[token.map[1]] if token.map[1] < len(lines_start) else len(body)
                if "`" in body[lo:hi]:
                    _code_spans(body[lo:hi], lo, spans)
            elif token.type == "heading_open":
                inline = tokens[pos + 1]
                level = int(token.tag[1])
                title = strip_inline(inline.content)
                headings.append(Heading(level, title, first_line + token.map[0]))
                if h1 is None and level == 1 and token.markup == "#":
                    h1 = title or None

    links: list[Link] = []
    for match in WIKI_LINK.finditer(body):
        start = match.start()
        if spans and any(lo <= start < hi for lo, hi in spans):
            continue
        line_no = first_line + _line_of(lines_start, start)
        if excluded_lines and (line_no - first_line) in excluded_lines:
            continue
        link = _make_link(match, body_offset, index)
        if link is not None:
            links.append(link)

    directives: list[Directive] = []
    if "sl:" in body:
        for match in DIRECTIVE.finditer(body):
            if match.group(1):
                continue  # escaped: `\<<` or `\{{`
            start = body_offset + match.start()
            end = body_offset + match.end()
            directives.append(
                Directive(
                    raw=match.group(0),
                    name=match.group(2) or match.group(3),
                    start=start,
                    end=end,
                    span=_span(index, start, end),
                )
            )
    suppressions: list[Suppression] = []
    if "knowl:" in body:
        for match in SUPPRESSION.finditer(body):
            start = match.start()
            line = _line_of(lines_start, start)
            if line in excluded_lines or any(lo <= start < hi for lo, hi in spans):
                continue  # code is text: a comment shown in code suppresses nothing
            suppressions.append(suppression(match, body_offset, index))
    return BodyScan(tuple(links), tuple(directives), tuple(headings), h1, tuple(suppressions))


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


def _span(index: TextIndex, start: int, end: int) -> Span:
    line, column = index.position(start)
    end_line, end_column = index.position(max(start, end - 1))
    return Span(line, column, end_line, end_column)


def _make_link(match: re.Match[str], base: int, index: TextIndex) -> Link | None:
    inner = match.group(2)
    bar = inner.find("|")
    target = inner if bar == -1 else inner[:bar]
    if bar != -1 and target.endswith("\\"):
        target = target[:-1]  # `\|` separates the alias inside Markdown tables
    heading: str | None = None
    hash_at = target.find("#")
    if hash_at != -1:
        heading = target[hash_at + 1 :].strip()
        target = target[:hash_at]
    target = target.strip()
    if target.endswith(".md"):
        target = target[:-3].rstrip()
    if not target and not heading:
        return None  # `[[]]`, `[[|x]]`
    start = base + match.start()
    return Link(
        raw=match.group(0),
        target=target,
        heading=heading,
        embed=bool(match.group(1)),
        span=_span(index, start, base + match.end()),
    )
