"""Markdown links in a body: `[text](dest)`, `[text][label]`, `[label][]` and `[label]` with
`[label]: dest`, images `![alt](dest)`, and the http(s) URLs of autolinks `<https://…>`.

markdown-it-py says what is a link: CommonMark's rules for labels, destinations, reference
definitions, escapes and nesting, and code spans, autolinks and raw HTML (comments included)
taking precedence. Its rules are wrapped only to say where: each link's start and end in the
text of its inline region, and where its destination is (the last destination parsed by the
link's own rule, which lies after every destination parsed inside its label), or, for a
reference-style link, where its definition's destination is. `_Lines` of the body scan maps
those back to the page, so positions are exact. A `[[wiki-link]]` is read first, as the site
renders it: `[[a]](b)` is a wiki-link and text.

Only inline regions that can hold a link are parsed (`may_hold_links`), a plain region's
plain links are read without the parser (`plain_links`), and markdown-it's inline parser is
linear: each position's token is found once (its `cache`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, NamedTuple, Protocol

from markdown_it import MarkdownIt
from markdown_it.common.utils import unescapeAll
from markdown_it.helpers import parseLinkDestination, parseLinkTitle
from markdown_it.helpers.parse_link_destination import _Result
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.autolink import autolink as _autolink
from markdown_it.rules_inline.image import image as _image
from markdown_it.rules_inline.link import link as _link
from markdown_it.token import Token

from knowl_build.core.linkpaths import PATH, URL, classify, split_path
from knowl_build.core.model import MARKDOWN, Link, Span, TextIndex, UrlRef

# The same form parse/body.py scans for (a wiki-link is read before a Markdown link).
_WIKI = re.compile(r"!?\[\[([^\[\]\n]*)\]\]")
_AUTOLINK = re.compile(r"<[A-Za-z][A-Za-z0-9+.-]{1,31}:")
_SPACES = re.compile(r"\s+")
# How much of a link its message quotes; the rest is `…`.
QUOTED_CHARS = 200

_SOURCE = "knowl-md-source"  # the inline region being scanned
_FOUND = "knowl-md-found"  # what the wrapped rules found in it
_DEFINITIONS = "knowl-md-definitions"  # label -> where its destination is (the block parse)


class _Destination(NamedTuple):
    start: int  # in the string it was parsed from
    end: int
    ok: bool
    value: str  # escapes and entities resolved


class _Seen(NamedTuple):
    start: int
    end: int
    embed: bool
    destination: _Destination | None  # an inline link's, in the region
    label: str | None  # a reference-style link's (normalised)
    text: str
    url_only: bool = False  # an autolink


class Definition(NamedTuple):
    line: int  # 0-based body line of its destination
    offset: int  # of the destination in the block parser's source
    raw: str  # as written
    value: str


# Every destination parsed while a region is scanned, in order (one scan at a time: a page
# is parsed by one thread of one process).
_parsed: list[_Destination] = []
_current: list[str] = [""]


_MAX_PARENS = 32  # markdown-it's bound on nested parentheses in a destination
# In a destination without angle brackets: the characters its parse stops at or looks at
# (a space or a control character, `\\`, `)`), and `n` more `(` before any of those, which
# is more nesting than markdown-it allows (possessive: the match never backtracks).
_DESTINATION_STOPS = re.compile(r"[\x00-\x20\x7f\\)]")
_OPENINGS = [re.compile(rf"(?:[^\x00-\x20\x7f\\()]*+\(){{{n}}}") for n in range(_MAX_PARENS + 2)]


def link_destination(string: str, pos: int, maximum: int) -> Any:
    """markdown-it's `parseLinkDestination`, the same result for every input, in fewer steps:
    a destination without angle brackets jumps from one character that matters to the next,
    counting the `(` between, where markdown-it looks at each character in Python (a page
    of `[a](` repeated read ~130 per link attempt)."""
    if pos >= maximum or string[pos] == "<":
        return parseLinkDestination(string, pos, maximum)
    start, level = pos, 0
    while True:
        if _OPENINGS[_MAX_PARENS + 1 - level].match(string, pos, maximum):
            return _Result()  # deeper than markdown-it allows before anything else
        stop = _DESTINATION_STOPS.search(string, pos, maximum)
        end = maximum if stop is None else stop.start()
        level += string.count("(", pos, end)
        pos = end
        if stop is None:
            break
        char = string[pos]
        if char == "\\" and pos + 1 < maximum:
            if string[pos + 1] == " ":
                break
            pos += 2  # an escaped character, a parenthesis too, counts for nothing
        elif char == "\\":
            pos += 1
        elif char == ")":
            if level == 0:
                break
            level -= 1
            pos += 1
        else:
            break  # a space or a control character
    result = _Result()
    if start == pos or level != 0:
        return result
    result.str, result.pos, result.ok = unescapeAll(string[start:pos]), pos, True
    return result


def link_label(state: StateInline, start: int, disable_nested: bool = False) -> int:
    """markdown-it's `parseLinkLabel`, the same result and the same cache, with a position
    already skipped once (`state.cache`) looked up here instead of through `skipToken`: a
    label's walk over such positions was most of the time a page of `[` took."""
    old_pos, level, found = state.pos, 1, False
    src, cache, maximum = state.src, state.cache, state.posMax
    skip = state.md.inline.skipToken
    state.pos = start + 1
    while state.pos < maximum:
        pos = state.pos
        marker = src[pos]
        if marker == "]":
            level -= 1
            if level == 0:
                found = True
                break
        after = cache.get(pos)
        if after is None:
            skip(state)
            after = state.pos
        else:
            state.pos = after
        if marker == "[":
            if after == pos + 1:
                level += 1
            elif disable_nested:
                state.pos = old_pos
                return -1
    end = state.pos if found else -1
    state.pos = old_pos
    return end


def _recorded_destination(string: str, pos: int, maximum: int) -> Any:
    result = link_destination(string, pos, maximum)
    if string is _current[0]:
        _parsed.append(_Destination(pos, result.pos, result.ok, result.str))
    return result


def _plain(tokens: list[Token] | None) -> str:
    """The text a reader sees of inline tokens, white space collapsed."""
    out: list[str] = []
    for token in tokens or ():
        if token.type in ("text", "code_inline"):
            out.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif token.type == "image":
            out.append(_plain(token.children))
    return _SPACES.sub(" ", "".join(out)).strip()


def _recording(rule: Callable[[StateInline, bool], bool], embed: bool) -> Any:
    """`rule` (markdown-it's link or image rule), also noting each link it makes in the
    region being scanned."""

    def wrapped(state: StateInline, silent: bool) -> bool:
        found = state.env.get(_FOUND)
        if silent or found is None or state.src is not state.env.get(_SOURCE):
            return rule(state, silent)
        start, before, count = state.pos, len(_parsed), len(state.tokens)
        if not rule(state, silent):
            return False
        end = state.pos
        at = count
        kind = "image" if embed else "link_open"
        while at < len(state.tokens) and state.tokens[at].type != kind:
            at += 1
        if at == len(state.tokens):
            return True
        opening = state.tokens[at]
        label = opening.meta.get("label")
        destination = None
        if label is None:
            inside = [d for d in _parsed[before:] if d.start < end]
            destination = max(inside, key=lambda d: d.start) if inside else None
        text = _plain(opening.children if embed else state.tokens[at + 1 : -1])
        found.append(_Seen(start, end, embed, destination, label, text))
        return True

    return wrapped


def _autolinks(state: StateInline, silent: bool) -> bool:
    start = state.pos
    if not _autolink(state, silent):
        return False
    found = state.env.get(_FOUND)
    if not silent and found is not None and state.src is state.env.get(_SOURCE):
        url = state.src[start + 1 : state.pos - 1]
        found.append(_Seen(start, state.pos, False, _Destination(0, 0, True, url), None, "", True))
    return True


def _wiki_first(state: StateInline, silent: bool) -> bool:
    """`[[…]]` is a wiki-link, never the label of a Markdown link."""
    src, pos = state.src, state.pos
    if not (src.startswith("[[", pos) or src.startswith("![[", pos)):
        return False
    match = _WIKI.match(src, pos, state.posMax)
    if match is None:
        return False
    if not silent:
        state.pending += match.group(0)
    state.pos = match.end()
    return True


def _inline_parser(*, fast: bool = True) -> MarkdownIt:
    """The inline parser of the scan. `fast=False` keeps markdown-it's own label and
    destination parsers and its rule loop: the same links, slower (the tests compare)."""
    md = MarkdownIt("commonmark", {"store_labels": True})
    # Every destination as written (no percent-encoding) and accepted whatever its scheme:
    # which ones are checked is decided later (linkpaths.classify), never here.
    md.normalizeLink = lambda url: url  # type: ignore[method-assign]
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    if fast:
        md.helpers = SimpleNamespace(  # type: ignore[assignment]
            parseLinkDestination=_recorded_destination,
            parseLinkLabel=link_label,
            parseLinkTitle=parseLinkTitle,
        )
    md.inline.ruler.before("link", "knowl_wiki", _wiki_first)
    md.inline.ruler.at("link", _recording(_link, embed=False))
    md.inline.ruler.at("image", _recording(_image, embed=True))
    md.inline.ruler.at("autolink", _autolinks)
    # Emphasis never decides what is a link; its pairing is work for nothing here.
    md.disable(["emphasis", "strikethrough", "balance_pairs"], ignoreInvalid=True)
    if fast:
        _dispatch_by_character(md)
    return md


# The characters each inline rule can start at (its first test); the text rule takes any other.
_STARTS = {
    "newline": "\n",
    "escape": "\\",
    "backticks": "`",
    "knowl_wiki": "[!",
    "link": "[",
    "image": "!",
    "autolink": "<",
    "html_inline": "<",
    "entity": "&",
}


def _dispatch_by_character(md: MarkdownIt) -> None:
    """One rule in place of the enabled ones, calling those that can start at the character
    at hand, in their order. markdown-it tries every rule at every position (and a link's
    label is read position by position): ten calls where one or two can match, which made a
    paragraph of 200 kB of `[` take seconds. The same rules run in the same order, so what
    is a link does not change."""
    ruler = md.inline.ruler
    enabled = [(rule.name, rule.fn) for rule in ruler.__rules__ if rule.enabled]
    unknown = [name for name, _ in enabled if name != "text" and name not in _STARTS]
    if unknown:  # pragma: no cover - a markdown-it that adds rules keeps them all
        return
    text = dict(enabled)["text"]
    by_char: dict[str, tuple[Callable[[StateInline, bool], bool], ...]] = {}
    for char in set("".join(_STARTS.values())):
        by_char[char] = tuple(fn for name, fn in enabled if char in _STARTS.get(name, ""))

    def dispatch(state: StateInline, silent: bool) -> bool:
        rules = by_char.get(state.src[state.pos])
        if rules is None:
            return text(state, silent)
        for rule in rules:  # noqa: SIM110 (a generator costs more, at every position)
            if rule(state, silent):
                return True
        return False

    ruler.before(enabled[0][0], "knowl_dispatch", dispatch)
    ruler.enableOnly(["knowl_dispatch"])


_md = _inline_parser()


# --- reference definitions, noted by the block parse -----------------------------------------


def _definition(state: StateBlock, first: int) -> Definition | None:
    """Where the destination of the definition starting on line `first` is: (line, offset in
    the block source, as written, value), found as markdown-it's reference rule finds it."""
    pieces: list[tuple[int, int, int]] = []  # (offset in the string, in the source, line)
    string = ""
    for line in range(first, min(state.line, state.lineMax)):
        begin = state.bMarks[line] + state.tShift[line]
        pieces.append((len(string), begin, line))
        string += state.src[begin : state.eMarks[line] + 1]
    pos = 1
    while pos < len(string) and string[pos] != "]":
        pos += 2 if string[pos] == "\\" else 1
    pos += 2  # `]:`
    while pos < len(string) and string[pos] in " \t\n":
        pos += 1
    result = parseLinkDestination(string, pos, len(string))
    if not result.ok:
        return None
    for at, begin, line in reversed(pieces):
        if at <= pos:
            return Definition(line, begin + pos - at, string[pos : result.pos], result.str)
    return None


def note_definitions(md: MarkdownIt) -> None:
    """Make `md`'s block parser note where each reference definition's destination is, in
    `env[_DEFINITIONS]` (the first definition of a label is the one links use)."""
    rule = md.block.ruler.__rules__[md.block.ruler.__find__("reference")].fn

    def wrapped(state: StateBlock, start: int, end: int, silent: bool) -> bool:
        first = state.bMarks[start] + state.tShift[start]
        if state.src[first : first + 1] != "[":
            return False  # what the rule answers too, asked at every block's first line
        references = state.env.get("references") or {}
        count = len(references)
        if not rule(state, start, end, silent):
            return False
        references = state.env.get("references") or {}
        if not silent and len(references) > count:
            found = _definition(state, start)
            if found is not None:
                state.env.setdefault(_DEFINITIONS, {})[next(reversed(references))] = found
        return True

    md.block.ruler.at("reference", wrapped)


# --- the scan --------------------------------------------------------------------------------


class Mapper(Protocol):
    def offset(self, at: int) -> int | None: ...


def may_hold_links(content: str, env: dict[str, Any]) -> bool:
    """Whether an inline region can hold a Markdown link, image or autolink at all."""
    if "](" in content or "][" in content:
        return True
    if "]" in content and env.get("references"):
        return True
    return "<" in content and _AUTOLINK.search(content) is not None


def _quoted(raw: str) -> str:
    """A link as a message quotes it: on one line, at most QUOTED_CHARS characters."""
    one = _SPACES.sub(" ", raw)
    return one if len(one) <= QUOTED_CHARS else one[: QUOTED_CHARS - 1] + "…"


class Found(NamedTuple):
    links: list[Link]
    urls: list[UrlRef]


class Lines(Protocol):
    def mapper(self, content: str, first: int) -> Mapper: ...


def may_have_links(body: str) -> bool:
    """Whether a body can hold a Markdown link, image, definition or autolink at all."""
    return "](" in body or "][" in body or "]:" in body or _AUTOLINK.search(body) is not None


def body_links(
    tokens: list[Token],
    env: dict[str, Any],
    lines: Lines,
    normalized: str,
    lines_start: list[int],
    base: int,
    index: TextIndex,
    skip: Callable[[int], bool],
) -> Found:
    """The Markdown links and URLs of a body whose block parse gave `tokens` and `env`
    (`note_definitions` noted its definitions): `lines` maps a region's offsets back to the
    body, `base` is the body's offset in the page, and `skip` says which body offsets hold
    no links (code spans, Hugo shortcodes)."""
    definitions: dict[str, Definition] = env.get(_DEFINITIONS) or {}
    starts = TextIndex(normalized).starts if definitions else []

    def definition(label: str) -> tuple[int, Definition] | None:
        found = definitions.get(label)
        if found is None:
            return None
        return base + lines_start[found.line] + found.offset - starts[found.line], found

    found = Found([], [])
    for token in tokens:
        if token.type != "inline" or token.map is None or not may_hold_links(token.content, env):
            continue
        mapper = lines.mapper(token.content, token.map[0])
        scan_region(token.content, mapper, env, definition, base, index, skip, found)
    return found


# A wiki-link (read first, as `_wiki_first` reads it), or an inline link or image whose text
# holds no bracket and whose destination no space, control character, parenthesis, bracket,
# `<` or a backslash (so no title either).
_PLAIN_LINK = re.compile(r"!?\[\[[^\[\]\n]*\]\]|(!?)\[([^\[\]]*)\]\(([^\x00-\x20\x7f()<\[\]\\]+)\)")
# The characters that start an inline rule other than text, links and images (escapes, code
# spans, autolinks, raw HTML, entities).
_OTHER_RULES = re.compile(r"[\\`<&]")


def plain_links(content: str, env: dict[str, Any]) -> list[_Seen] | None:
    """The links of an inline region as markdown-it reads them, without running it, when the
    region is plain: none of `_OTHER_RULES`' characters, no reference definitions in the
    body, and every bracket inside a `_PLAIN_LINK` (found from the left, as markdown-it's
    rules stop at each `[` and `!`). None when it is not: markdown-it reads it
    (`parsed_links`). Most regions of a documentation page are plain, and the inline parser
    costs more than the rest of a link's reading (tests/test_markdown_links.py compares the
    two)."""
    if env.get("references") or _OTHER_RULES.search(content) is not None:
        return None
    seen: list[_Seen] = []
    brackets = 0
    for match in _PLAIN_LINK.finditer(content):
        destination = match.group(3)
        if destination is None:  # a wiki-link: text to markdown-it
            brackets += 4
            continue
        brackets += 2
        end = match.end()
        start = end - len(destination) - 1
        seen.append(
            _Seen(
                match.start(),
                end,
                bool(match.group(1)),
                _Destination(start, end - 1, True, destination),
                None,
                _SPACES.sub(" ", match.group(2)).strip(),
            )
        )
    if brackets != content.count("[") + content.count("]"):
        return None
    return seen


def parsed_links(content: str, env: dict[str, Any]) -> list[_Seen]:
    """The links of an inline region, in order, as markdown-it's inline parser reads them."""
    seen: list[_Seen] = []
    env[_SOURCE], env[_FOUND] = content, seen
    _current[0] = content
    try:
        _md.inline.parse(content, _md, env, [])
    finally:
        del env[_SOURCE], env[_FOUND]
        _current[0] = ""
        _parsed.clear()
    return sorted(seen, key=lambda s: s.start)


def scan_region(
    content: str,
    mapper: Mapper,
    env: dict[str, Any],
    definitions: Callable[[str], tuple[int, Definition] | None],
    base: int,
    index: TextIndex,
    skip: Callable[[int], bool],
    found: Found,
) -> None:
    """The Markdown links and URLs of one inline region, `content` as markdown-it gives it,
    added to `found`. `mapper` maps its offsets to body offsets, `base` is the body's offset
    in the page, and `definitions` gives a label's definition with its destination's offset
    in the page."""
    seen = plain_links(content, env)
    if seen is None:
        seen = parsed_links(content, env)
    for item in seen:
        start, last = mapper.offset(item.start), mapper.offset(item.end - 1)
        if start is None or last is None or skip(start):
            continue  # not found where markdown-it read it, or in a Hugo shortcode
        span = _span(index, base + start, base + last + 1)
        written, value, at = "", "", -1
        if item.label is not None:
            definition = definitions(item.label)
            if definition is None:
                continue
            at, written, value = definition[0], definition[1].raw, definition[1].value
        elif item.destination is not None and item.destination.ok:
            value = item.destination.value
            written = content[item.destination.start : item.destination.end]
            where = mapper.offset(item.destination.start) if written else None
            at = -1 if where is None else base + where
        kind = classify(value)
        if kind == URL:
            found.urls.append(UrlRef(value, span))
            continue
        if kind != PATH or item.url_only:
            continue
        target, fragment = split_path(value)
        if not target and not fragment:
            continue  # `[x]()`, `[x](#)`: the page itself, nothing to check
        found.links.append(
            Link(
                raw=_quoted(content[item.start : item.end]),
                target=target,
                heading=fragment or None,
                embed=item.embed,
                span=span,
                form=MARKDOWN,
                destination=written,
                at=at,
                text=item.text,
            )
        )


def merged(wiki: list[Link], markdown: list[Link]) -> list[Link]:
    """Wiki-links and Markdown links in the order of the body."""
    if not markdown:
        return wiki
    return sorted([*wiki, *markdown], key=lambda link: (link.span.line, link.span.column))


def _span(index: TextIndex, start: int, end: int) -> Span:
    line, column = index.position(start)
    end_line, end_column = index.position(max(start, end - 1))
    return Span(line, column, end_line, end_column)
