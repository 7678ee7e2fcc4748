"""Scanning a page body: wiki-links, live-definition directives, headings, code regions.

Code is text: links inside CommonMark code (fenced and indented blocks, code spans) are not
links. markdown-it-py finds the block structure; code spans are found with CommonMark's
backtick-run rule on the raw lines of each inline region, so positions stay exact.
Directives are found everywhere, code included, because that is where expressions are shown.
Hugo shortcodes (parse/shortcodes.py) hold no links, and the bodies of code shortcodes are code:
their regions join the code spans, and hold no suppression, heading or block id either.

Suppressions are HTML comments that Markdown renders as comments (issue 21): an HTML block that
starts with `<!--` (CommonMark's kind 2: the comments it holds one after another), or inline
raw HTML, as markdown-it-py's own tokens say. The same text shown in code, in a link's title
or destination, in an image's description, after a backslash (`\\<!--`) or inside another HTML
block is text, and suppresses nothing.
"""

from __future__ import annotations

import bisect
import functools
import gc
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from knowl_build.core.config import CODE_SHORTCODES as BUILT_IN_CODE_SHORTCODES
from knowl_build.core.model import Directive, Heading, Link, Span, Suppression, TextIndex, UrlRef
from knowl_build.parse import mdlinks
from knowl_build.parse.shortcodes import front_matter as toml_front_matter
from knowl_build.parse.shortcodes import regions as shortcode_regions

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token

WIKI_LINK = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")
DIRECTIVE = re.compile(
    r"(\\?)(?:<<[ \t]*sl:([A-Za-z0-9_.-]+)[ \t]*>>|\{\{[ \t]*sl:([A-Za-z0-9_.-]+)[ \t]*\}\})"
)
# The same two, found from their brackets: a pattern that starts with an optional character
# (`!?`, `\\?`) is tried at every position of the body, one that starts with a literal is
# searched for it (several times faster on a page of prose). The character before says
# whether a link is an embed and a directive escaped, as the optional one did.
_WIKI_BRACKETS = re.compile(r"\[\[([^\[\]\n]*)\]\]")
_DIRECTIVE_BRACKETS = re.compile(
    r"<<[ \t]*sl:([A-Za-z0-9_.-]+)[ \t]*>>|\{\{[ \t]*sl:([A-Za-z0-9_.-]+)[ \t]*\}\}"
)
_BACKTICKS = re.compile(r"`+")
# A body holds a code block or a heading only if it holds one of these: fences, ATX and setext
# headings, and indentation (at a line start, or four spaces after a container's marker, as
# in `>     code` or `1.     code`).
_BLOCK_MARKS = ("`", "~", "#", "\t", "=", "-", "\n ", "    ")

_COMMENTS = "knowl-comments"
_SOURCE = "knowl-source"


@functools.cache
def _parsers() -> tuple[MarkdownIt, MarkdownIt]:
    """The block parser, and the inline parser for the few inline regions that may hold a
    suppression: its raw HTML rule also says where each comment it takes starts and ends in
    the region's text. Only a comment of that text counts; an image's description is parsed
    as a text of its own, and is shown as plain text (a comment there is dropped, not
    rendered). Made when a page is first parsed: a run whose pages all come from the parse
    cache makes none."""
    # Made when first needed, not at import (start-up time of `knowl check`).
    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import html_inline

    blocks = MarkdownIt("commonmark").disable(["inline", "text_join"], ignoreInvalid=True)
    # Where each reference definition's destination is, for Markdown links (parse/mdlinks.py).
    mdlinks.note_definitions(blocks)

    def noting_comments(state: StateInline, silent: bool) -> bool:
        start = state.pos
        if not html_inline(state, silent):
            return False
        if (
            not silent
            and state.src is state.env.get(_SOURCE)
            and state.src.startswith("<!--", start)
        ):
            state.env[_COMMENTS].append((start, state.pos))
        return True

    inline = MarkdownIt("commonmark")
    inline.inline.ruler.at("html_inline", noting_comments)
    return blocks, inline


class _CollectorPaused:
    """markdown-it makes a few objects per line (and we a heading per heading), none of which
    form cycles; the cyclic collector, run again and again over them as they pile up,
    doubled the time of a 200 kB page of 100,000 one-character headings. Reference counting
    still frees everything. A class, not a `contextmanager`: entered twice for every page,
    whose generator machinery cost more than the pause itself."""

    __slots__ = ("enabled",)

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()


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
    blocks: tuple[str, ...] = ()
    urls: tuple[UrlRef, ...] = ()


# An Obsidian or Dendron block id: `^id` at the end of a line, after a space or alone on its
# line (Obsidian's have letters, digits and `-`; Dendron's `_` too).
BLOCK_ID = re.compile(r"(?:^|[ \t])\^([A-Za-z0-9_-]+)[ \t]*$", re.MULTILINE)


def suppression(
    match: re.Match[str], base: int, index: TextIndex, *, frontmatter: bool = False
) -> Suppression:
    """A suppression comment from its match (`base`: offset of the matched text)."""
    start = base + match.start() + (match.group(0).find("#") if frontmatter else 0)
    return _suppression(match, start, base + match.end(), index, frontmatter=frontmatter)


def _suppression(
    match: re.Match[str], start: int, end: int, index: TextIndex, *, frontmatter: bool = False
) -> Suppression:
    """The suppression `match` says, the comment spanning offsets `start` to `end`."""
    kind, rest = match.group(1), match.group(2)
    words = [w for w in re.split(r"[\s,]+", rest.split("--", 1)[0]) if w]
    # Words that are not rule codes make a suppression that matches nothing (KB011), never
    # one that silently hides every code.
    codes = tuple(w.upper() if _CODE_TOKEN.fullmatch(w) else w for w in words)
    return Suppression(
        next_line=kind == "disable-next-line",
        codes=codes,
        span=_span(index, start, end),
        whole_file=frontmatter and kind == "disable",
    )


def _block_comments(content: str) -> Iterator[tuple[int, int]]:
    """The comments of an HTML block of CommonMark's kind 2 (it starts with `<!--`), one
    after another with only white space between them: (start, end) in `content`."""
    pos = 0
    while True:
        while pos < len(content) and content[pos] in " \t\n":
            pos += 1
        if not content.startswith("<!--", pos):
            return
        if content.startswith("<!-->", pos):
            end = pos + 5
        elif content.startswith("<!--->", pos):
            end = pos + 6
        else:
            close = content.find("-->", pos + 4)
            if close == -1:
                return  # never closed: a comment to the end, which no suppression is
            end = close + 3
        yield pos, end
        pos = end


def _inline_comments(content: str, env: dict[str, object]) -> list[tuple[int, int]]:
    """The comments markdown-it takes as inline raw HTML in `content`: (start, end)."""
    found: list[tuple[int, int]] = []
    env[_SOURCE], env[_COMMENTS] = content, found
    try:
        inline = _parsers()[1]
        inline.inline.parse(content, inline, env, [])
    finally:
        del env[_SOURCE], env[_COMMENTS]
    return found


class _Lines:
    """From a token's content (its lines without their container's markers and indentation,
    as markdown-it gives them) back to offsets in the body."""

    def __init__(self, normalized: str, starts: list[int]) -> None:
        self.lines = normalized.split("\n")
        self.starts = starts

    def mapper(self, content: str, first: int) -> _Mapper:
        """How `content`, whose first line is body line `first`, maps onto the body."""
        mapper = _Mapper()
        pos = 0
        for number, line in enumerate(content.split("\n"), first):
            mapper.starts.append(pos)
            pos += len(line) + 1
            source = self.lines[number].rstrip(" \t") if number < len(self.lines) else ""
            text = line.rstrip(" \t")
            core = text.lstrip(" ")  # markdown-it pads a tab it splits with spaces
            at = -1
            if core:
                at = len(source) - len(core) if source.endswith(core) else source.rfind(core)
            pad = len(text) - len(core)
            mapper.shifts.append(self.starts[number] + at - pad if at >= 0 else None)
        return mapper


class _Mapper:
    """Each line of a token's content: where it starts in the content, and the body offset
    of its column 0 (None when that line is not found in the body)."""

    __slots__ = ("shifts", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.shifts: list[int | None] = []

    def offset(self, at: int) -> int | None:
        """The body offset of the content's character `at`."""
        line = bisect.bisect_right(self.starts, at) - 1
        shift = self.shifts[line]
        return None if shift is None else shift + at - self.starts[line]


def _comment_suppressions(
    tokens: list[Token],
    env: dict[str, object],
    lines: _Lines,
    body_offset: int,
    index: TextIndex,
) -> list[Suppression]:
    """Each suppression that is a real comment: in an HTML block of comments, or inline."""
    found: list[Suppression] = []
    for token in tokens:
        if token.map is None or "knowl:" not in token.content:
            continue
        if token.type == "html_block" and token.content.lstrip(" ").startswith("<!--"):
            comments = list(_block_comments(token.content))
        elif token.type == "inline" and "<!--" in token.content:
            comments = _inline_comments(token.content, env)
        else:
            continue
        mapper: _Mapper | None = None
        for start, end in comments:
            match = SUPPRESSION.match(token.content, start, end)
            if match is None or match.end() != end:
                continue
            if mapper is None:
                mapper = lines.mapper(token.content, token.map[0])
            at, last = mapper.offset(start), mapper.offset(end - 1)
            if at is None or last is None:
                continue  # not found where markdown-it read it: no suppression
            found.append(_suppression(match, body_offset + at, body_offset + last + 1, index))
    return found


def _code_spans(text: str, base: int, out: list[tuple[int, int]]) -> None:
    """CommonMark code spans: a run of n backticks up to the next run of exactly n.

    The runs are indexed by width, so finding the closing run is a bisection: a region of
    many runs without a partner (of many widths) costs O(runs log runs), not runs squared."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    by_width: dict[int, list[int]] = {}
    for number, (start, end) in enumerate(runs):
        by_width.setdefault(end - start, []).append(number)
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
        same = by_width.get(end - start, [])
        after = bisect.bisect_right(same, i)
        if after < len(same):
            j = same[after]
            out.append((base + start, base + runs[j][1]))
            i = j + 1
        else:
            i += 1  # no closing run: these backticks are text


def _disjoint(spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """The union of `spans` as sorted, disjoint (starts, ends), for `_inside`."""
    starts: list[int] = []
    ends: list[int] = []
    for lo, hi in sorted(spans):
        if starts and lo <= ends[-1]:
            ends[-1] = max(ends[-1], hi)
        else:
            starts.append(lo)
            ends.append(hi)
    return starts, ends


def _inside(starts: list[int], ends: list[int], offset: int) -> bool:
    """True when `offset` lies in one of the spans `_disjoint` returned: a bisection, so a page
    of many code spans and many links costs O(links log spans)."""
    k = bisect.bisect_right(starts, offset) - 1
    return k >= 0 and offset < ends[k]


# Inline markup removed from headings. Each pattern reads, from where it starts, all the text
# a failed attempt there would read, and the callback keeps that text when it is not markup:
# the engine never reads one character twice. (The backtracking forms, `<[^>\n]+>` and
# `!?\[\[([^\]|#]*)…\]\]`, read the rest of a line once per `<` or `[`: a 200 kB heading of
# `[` took half an hour.) Every attempt that starts inside the text read would fail the same
# way, so the result is exactly what those forms give (tests/test_trust_body_limits.py).
_WIKI_MARKUP = re.compile(r"!?\[\[([^\]]*)(\]\]?)?")
_LINK_MARKUP = re.compile(r"!?\[([^\]]*)(?:\](?:\([^)]*(\))?)?)?")
_HTML_TAG = re.compile(r"<[^>\n]*>?")
_EMPHASIS = re.compile(r"\*+|~~|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_SPACES = re.compile(r"\s+")


def _wiki_text(match: re.Match[str]) -> str:
    """`[[id#Heading|alias]]` shows its alias, else its id; not closed by `]]`, it is text."""
    if match.group(2) != "]]":
        return match.group(0)
    inner = match.group(1)
    bar = inner.find("|")
    if bar != -1 and bar + 1 < len(inner):
        return inner[bar + 1 :]
    ends = [at for at in (bar, inner.find("#")) if at != -1]
    return inner[: min(ends)] if ends else inner


def _link_text(match: re.Match[str]) -> str:
    """`[text](url)` shows its text; without `](…)` it is text."""
    return match.group(1) if match.group(2) else match.group(0)


def _tag_text(match: re.Match[str]) -> str:
    """An HTML tag `<…>` (not `<>`, not across a line end) is removed."""
    tag = match.group(0)
    return "" if len(tag) > 2 and tag.endswith(">") else tag


_MARKUP_CHARS = re.compile(r"[\[<`*_~\\]")  # every pass below needs one of these


def strip_inline(text: str) -> str:
    """Heading text with inline markup removed and whitespace collapsed; linear time."""
    if _MARKUP_CHARS.search(text) is None:
        return _SPACES.sub(" ", text).strip()
    text = _WIKI_MARKUP.sub(_wiki_text, text)
    text = _LINK_MARKUP.sub(_link_text, text)
    text = _HTML_TAG.sub(_tag_text, text)
    text = text.replace("`", "")
    text = _EMPHASIS.sub("", text)
    text = _ESCAPE.sub(r"\1", text)
    return _SPACES.sub(" ", text).strip()


# A heading's trailing attribute list (MkDocs' attr_list, Hugo's heading attributes):
# `{ #id .class key=value }` or `{: #id }`, after a space, at the end of the heading.
_ATTRIBUTE = r"""(?:[#.][^\s{}#.="']+|[\w-]+=(?:"[^"\n]*"|'[^'\n]*'|[^\s{}"']+))"""
_ATTRIBUTES = re.compile(rf"\{{:?[ \t]*{_ATTRIBUTE}(?:[ \t]+{_ATTRIBUTE})*[ \t]*\}}[ \t]*")
_ID = re.compile(r"(?:^|[ \t:{])#([^\s{}#.=\"']+)")


def heading_attributes(content: str) -> tuple[str, str | None]:
    """A heading's source text without its trailing attribute list, and the list's id:
    `Links { #custom-links }` is `("Links", "custom-links")`. Text without such a list (one
    not after a space, or holding anything but `#id`, `.class` and `key=value`) is itself,
    with no id. Linear time: only the text after the last `{` is matched."""
    brace = content.rfind("{")
    if brace == -1 or (brace > 0 and content[brace - 1] not in " \t"):
        return content, None
    tail = content[brace:]
    if _ATTRIBUTES.fullmatch(tail) is None:
        return content, None
    found = _ID.search(tail[1:])
    return content[:brace].rstrip(), found.group(1) if found else None


def heading_key(text: str) -> str:
    """How headings are compared: markup removed, whitespace collapsed, case folded."""
    return strip_inline(text).casefold()


CODE_SHORTCODES = frozenset(BUILT_IN_CODE_SHORTCODES)


def scan_body(
    text: str, body_offset: int, index: TextIndex, code_shortcodes: frozenset[str] = CODE_SHORTCODES
) -> BodyScan:
    body = text[body_offset:]
    first_line = index.position(body_offset)[0]
    scan = _Scan(body, first_line, _body_starts(index, body, body_offset, first_line))
    # Hugo's regions: its TOML front matter (only where no YAML frontmatter came first),
    # then its shortcodes.
    hugo = toml_front_matter(body) if body_offset == 0 else []
    hugo += shortcode_regions(body, code_shortcodes)
    scan.hugo = _disjoint(hugo)
    links: list[Link] = []
    urls: tuple[UrlRef, ...] = ()
    with _CollectorPaused():  # one pause for the block parse and the links
        markdown = _parse_blocks(scan) if _may_hold_blocks(body) else None
        if markdown is not None:
            scan.read_blocks(*markdown, body_offset, index)
        span_starts, span_ends = _disjoint(scan.spans + hugo)
        links = _wiki_links(scan, span_starts, span_ends, body_offset, index)
        if markdown is not None:
            found = mdlinks.body_links(
                *markdown,
                scan.lines(),
                scan.normalized,
                scan.lines_start,
                body_offset,
                index,
                lambda at: bool(span_starts) and _inside(span_starts, span_ends, at),
            )
            links = mdlinks.merged(links, found.links)
            urls = tuple(found.urls)
    return BodyScan(
        tuple(links),
        _directives(body, body_offset, index),
        tuple(scan.headings),
        scan.h1,
        tuple(scan.suppressions),
        _block_ids(scan),
        urls,
    )


def _body_starts(index: TextIndex, body: str, body_offset: int, first_line: int) -> list[int]:
    """Where each line of the body starts, in the body: the page's own line starts when the
    body starts a line (as it does after frontmatter), else counted again."""
    if body_offset == 0:
        return index.starts
    starts = index.starts
    if starts[first_line - 1] != body_offset:
        return TextIndex(body).starts
    return [start - body_offset for start in starts[first_line - 1 :]]


def _may_hold_blocks(body: str) -> bool:
    """Only code, headings, comments and Markdown links need the block parse; a body without
    these characters has none of them (every comment holds a `-`)."""
    return (
        body[:1] in (" ", "\t")
        or any(mark in body for mark in _BLOCK_MARKS)
        or mdlinks.may_have_links(body)
    )


class _Scan:
    """What the block parse of a body says: the lines of code blocks, code spans, headings,
    the h1 and suppressions; and the body's lines, for the scans after it."""

    def __init__(self, body: str, first_line: int, lines_start: list[int]) -> None:
        self.body = body
        self.first_line = first_line
        self.lines_start = lines_start
        # markdown-it normalises line ends; keep the line count identical to ours.
        self.normalized = body.replace("\r\n", "\n").replace("\r", " ")
        self.hugo: tuple[list[int], list[int]] = ([], [])
        self.excluded_lines: set[int] = set()  # 0-based body lines inside code blocks
        self.spans: list[tuple[int, int]] = []  # body offsets of code spans
        self.headings: list[Heading] = []
        self.h1: str | None = None
        self.suppressions: list[Suppression] = []
        self._lines: _Lines | None = None

    def lines(self) -> _Lines:
        if self._lines is None:
            self._lines = _Lines(self.normalized, self.lines_start)
        return self._lines

    def in_hugo(self, offset: int) -> bool:
        return bool(self.hugo[0]) and _inside(*self.hugo, offset)

    def read_blocks(
        self, tokens: list[Token], env: dict[str, object], body_offset: int, index: TextIndex
    ) -> None:
        lines_start, body = self.lines_start, self.body
        for pos, token in enumerate(tokens):
            if token.map is None:
                continue
            kind = token.type
            if kind == "inline":
                lo = lines_start[token.map[0]]
                hi = lines_start[token.map[1]] if token.map[1] < len(lines_start) else len(body)
                if "`" in body[lo:hi]:
                    _code_spans(body[lo:hi], lo, self.spans)
            elif kind == "fence" or kind == "code_block":
                self.excluded_lines.update(range(token.map[0], token.map[1]))
            elif kind == "heading_open" and not self.in_hugo(lines_start[token.map[0]]):
                # (a heading in a Hugo region is a `# comment` of the TOML in a code shortcode)
                self._heading(token, tokens[pos + 1], token.map[0])
        if "knowl:" in body:
            found = _comment_suppressions(tokens, env, self.lines(), body_offset, index)
            self.suppressions = [
                s
                for s in found
                if not self.in_hugo(lines_start[s.span.line - self.first_line] + s.span.column - 1)
            ]

    def _heading(self, token: Token, inline: Token, line: int) -> None:
        level = int(token.tag[1])
        content, anchor = heading_attributes(inline.content)
        title = strip_inline(content)
        self.headings.append(Heading(level, title, self.first_line + line, anchor))
        if self.h1 is None and level == 1 and token.markup == "#":
            self.h1 = title or None


def _parse_blocks(scan: _Scan) -> tuple[list[Token], dict[str, object]]:
    env: dict[str, object] = {}  # link reference definitions, for the inline parse
    return _parsers()[0].parse(scan.normalized, env), env


def _wiki_links(
    scan: _Scan, span_starts: list[int], span_ends: list[int], body_offset: int, index: TextIndex
) -> list[Link]:
    """The wiki-links of the body outside code (spans and blocks) and Hugo's regions."""
    links: list[Link] = []
    body = scan.body
    if "[[" not in body:
        return links
    for match in _WIKI_BRACKETS.finditer(body):
        embed = match.start() > 0 and body[match.start() - 1] == "!"
        start = match.start() - embed
        if span_starts and _inside(span_starts, span_ends, start):
            continue
        if scan.excluded_lines and _line_of(scan.lines_start, start) in scan.excluded_lines:
            continue
        link = _make_link(body, start, match.end(), match.group(1), embed, body_offset, index)
        if link is not None:
            links.append(link)
    return links


def _directives(body: str, body_offset: int, index: TextIndex) -> tuple[Directive, ...]:
    """Live-definition directives, everywhere (code included); not an escaped one (`\\<<`,
    `\\{{`)."""
    if "sl:" not in body:
        return ()
    directives: list[Directive] = []
    for match in _DIRECTIVE_BRACKETS.finditer(body):
        if match.start() > 0 and body[match.start() - 1] == "\\":
            continue
        start = body_offset + match.start()
        end = body_offset + match.end()
        directives.append(
            Directive(
                raw=match.group(0),
                name=match.group(1) or match.group(2),
                start=start,
                end=end,
                span=_span(index, start, end),
            )
        )
    return tuple(directives)


def _block_ids(scan: _Scan) -> tuple[str, ...]:
    """Block ids outside code blocks and Hugo's regions."""
    if "^" not in scan.body:
        return ()
    return tuple(
        match.group(1)
        for match in BLOCK_ID.finditer(scan.body)
        if _line_of(scan.lines_start, match.start(1)) not in scan.excluded_lines
        and not scan.in_hugo(match.start(1))
    )


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


def _span(index: TextIndex, start: int, end: int) -> Span:
    line, column = index.position(start)
    end_line, end_column = index.position(max(start, end - 1))
    return Span(line, column, end_line, end_column)


def wiki_target(written: str) -> tuple[str, str | None] | None:
    """A wiki link's page part and heading, from what names them (`id#Heading`, `id.md`):
    the page part without `.md`, both stripped; None when both are empty (`[[]]`, `[[|x]]`).
    Every reading of a `[[link]]` (the scan, Dendron's label-first order, the site) splits
    it here."""
    target, heading = written, None
    hash_at = target.find("#")
    if hash_at != -1:
        heading = target[hash_at + 1 :].strip()
        target = target[:hash_at]
    target = target.strip()
    if target.endswith(".md"):
        target = target[:-3].rstrip()
    if not target and not heading:
        return None
    return target, heading


def _make_link(
    body: str, start: int, end: int, inner: str, embed: bool, base: int, index: TextIndex
) -> Link | None:
    """The wiki-link `body[start:end]` (`![[inner]]` or `[[inner]]`)."""
    bar = inner.find("|")
    target = inner if bar == -1 else inner[:bar]
    if bar != -1 and target.endswith("\\"):
        target = target[:-1]  # `\|` separates the alias inside Markdown tables
    named = wiki_target(target)
    if named is None:
        return None  # `[[]]`, `[[|x]]`
    target, heading = named
    return Link(
        raw=body[start:end],
        target=target,
        heading=heading,
        embed=embed,
        span=_span(index, base + start, base + end),
    )
