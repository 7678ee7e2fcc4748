"""A page's rendered body as HTML that cannot run anything, its wiki-links pointing where the
checker resolved them.

Page text is untrusted. markdown-it renders it with raw HTML off (`<script>` and `<img
onerror>` come out as text), and every URL passes `safe_url` twice: when markdown-it parses a
link and again before it is written. External links (`http`, `https`, `mailto`) keep their
URL; relative ones point into the source tree, which the site does not have, so they become
text; images load only over https. Nothing else reaches an attribute.

`[[target#heading|alias]]` and `![[embed]]` are found by an inline rule, so code spans and
code blocks keep them as text, exactly where the body scan (parse/body.py) skipped them. The
scan's links are in the record in the order of the body, each with `to`, the path of the page
it resolved to: the n-th wiki-link found here is matched to the next record with the same
target, heading and kind (a token the scan did not count, such as one after a backslash,
matches none and stays text). A link that resolved to no page of the site is text too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from knowl_build.artifacts.schema import LinkRecord, PageRecord
from knowl_build.core.linkpaths import split_path
from knowl_build.core.model import MARKDOWN
from knowl_build.parse.body import CODE_SHORTCODES, heading_attributes, heading_key, wiki_target
from knowl_build.parse.shortcodes import front_matter, regions

WIKI = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_NOT_SLUG = re.compile(r"[^\w\- ]+")
_SPACES = re.compile(r"[\s-]+")
# How far ahead of the last match a wiki-link looks for its record.
_LOOKAHEAD = 64


@dataclass(frozen=True, slots=True)
class WikiLink:
    """A `[[...]]` as the body scan reads it (parse/body.py `_make_link`), with its alias."""

    target: str
    heading: str | None
    alias: str | None
    embed: bool

    @property
    def kind(self) -> str:
        return "embed" if self.embed else "link"

    @property
    def text(self) -> str:
        """What a reader sees: the alias, else the target and heading as written."""
        if self.alias:
            return self.alias
        if self.heading:
            return f"{self.target} › {self.heading}" if self.target else self.heading
        return self.target

    def matches(self, record: LinkRecord) -> bool:
        return (
            record.kind == self.kind
            and record.target == self.target
            and record.heading == self.heading
            and record.form != MARKDOWN
        )


def _markdown_match(href: str, embed: bool, record: LinkRecord) -> bool:
    """Whether a Markdown link's token (its `href` as markdown-it encoded it) is the link
    `record` holds: the same kind, decoded path and fragment."""
    target, heading = split_path(href)
    return (
        record.form == MARKDOWN
        and record.kind == ("embed" if embed else "link")
        and record.target == target
        and record.heading == (heading or None)
    )


def parse_wiki(inner: str, embed: bool = False, label_first: bool = False) -> WikiLink | None:
    """The inside of `[[...]]`: None where the scan makes no link (`[[]]`, `[[|x]]`).
    `label_first`: Dendron's `[[label|note]]` (`[links] resolution = "dendron"`), read as
    `parse.dendron.label_first` reads it for the checker."""
    bar = inner.find("|")
    if bar != -1 and not inner[:bar]:
        return None  # `[[|x]]` is no link in any mode (the scan made none)
    if label_first and bar != -1:
        label = inner[:bar]
        target, alias = inner[bar + 1 :], label.removesuffix("\\").strip() or None
    else:
        target = inner if bar == -1 else inner[:bar]
        alias = None if bar == -1 else inner[bar + 1 :].strip() or None
        if bar != -1 and target.endswith("\\"):
            target = target[:-1]  # `\|` separates the alias inside Markdown tables
    named = wiki_target(target)
    if named is None:
        return None
    return WikiLink(named[0], named[1], alias, embed)


def safe_url(url: str) -> bool:
    """An absolute URL with a scheme a browser only ever navigates with (http, https, mailto),
    or a relative one (no scheme: never `javascript:`, `data:`, `vbscript:`, `file:`)."""
    cleaned = "".join(ch for ch in url if ch > " " and ch != "\x7f")
    match = _SCHEME.match(cleaned)
    return match is None or match.group(1).lower() in SAFE_SCHEMES


def _external(url: str) -> bool:
    match = _SCHEME.match(url.strip())
    return match is not None and match.group(1).lower() in SAFE_SCHEMES


def slug(text: str) -> str:
    """A heading's anchor: its text without markup, case-folded, runs of spaces and dashes as
    one `-` (what `[[page#Heading]]` points at)."""
    words = _NOT_SLUG.sub("", heading_key(text))
    return _SPACES.sub("-", words).strip("-") or "section"


# The ids the templates give elements of a page: a heading never takes one (it gets `-1`).
RESERVED = frozenset(
    {
        "content",
        "graph",
        "graph-heading",
        "site-search",
        "search-query",
        "search-results",
        "search-status",
        *(
            f"{name}-heading"
            for name in (
                "backlinks",
                "caveats",
                "definition",
                "drift",
                "drifted",
                "facts",
                "freshness",
                "history",
                "members",
                "supersedes",
                "usage",
            )
        ),
    }
)


def fragment(heading: str) -> str:
    """The link to a heading of a page, as `Headings` names its first heading of that text
    (Obsidian nests headings, `[[page#A#B]]`: the last one is the target)."""
    name = slug(heading.rsplit("#", 1)[-1])
    return "#" + quote(f"{name}-1" if name in RESERVED else name, safe="-_.~")


def _wiki_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] == "!":
        if not src.startswith("![[", pos):
            return False
    elif not src.startswith("[[", pos):
        return False
    match = WIKI.match(src, pos, state.posMax)
    if match is None:
        return False
    link = parse_wiki(match.group(2), bool(match.group(1)), bool(state.env.get("label_first")))
    if link is None:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.meta = {"link": link}
        token.content = match.group(0)
    state.pos = match.end()
    return True


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = safe_url  # type: ignore[method-assign]
    md.inline.ruler.before("link", "wikilink", _wiki_rule)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("image", _render_image)
    return md


def _render_wikilink(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    link: WikiLink = token.meta["link"]
    href: str | None = token.meta.get("href")
    text = escapeHtml(link.text)
    css = "wikilink embed" if link.embed else "wikilink"
    if href is None:
        return f'<span class="{css} unresolved">{text}</span>'
    return f'<a class="{css}" href="{escapeHtml(href)}">{text}</a>'


def _render_image(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children, options, env)
    src = str(token.attrGet("src") or "")
    if not src.lower().startswith("https://") or not safe_url(src):
        # The source tree's files are not in the site, and other schemes could run or track.
        return f'<span class="image-omitted">{escapeHtml(alt or src)}</span>'
    return (
        f'<img src="{escapeHtml(src)}" alt="{escapeHtml(alt)}" loading="lazy" '
        'referrerpolicy="no-referrer">'
    )


_MD = _markdown()


class Headings:
    """Anchors of one page's headings, unique within it (`x`, `x-1`, `x-2`), none of them an
    id the templates use. The page's title (its `<h1>`) takes the first."""

    def __init__(self, title: str) -> None:
        self.seen: dict[str, int] = dict.fromkeys(RESERVED, 1)
        self.title = self.anchor(title)

    def anchor(self, text: str, explicit: str | None = None) -> str:
        """The next heading's anchor: its explicit id (`{ #id }`) if it has one, else the
        slug of its text; numbered when taken."""
        base = explicit or slug(text)
        count = self.seen.get(base, 0)
        self.seen[base] = count + 1
        return base if count == 0 else f"{base}-{count}"


def _first_heading_is_title(tokens: list[Token], title: str) -> bool:
    return (
        len(tokens) >= 3
        and tokens[0].type == "heading_open"
        and tokens[0].tag == "h1"
        and heading_key(heading_attributes(tokens[1].content)[0]) == heading_key(title)
    )


def _text_anchor(inline: Token, anchor: str) -> None:
    """A second anchor inside a heading that has an explicit id, by its text's slug: a
    wiki-link names a heading by its text (`[[t#Links]]` links `t.html#links`, `fragment`),
    a Markdown link by the id (`#custom-links`); both reach it."""
    mark = Token("html_inline", "", 0)
    mark.content = f'<span id="{escapeHtml(anchor)}"></span>'
    inline.children = [mark, *(inline.children or [])]


def _drop_attributes(inline: Token) -> tuple[str, str | None]:
    """A heading's text without its trailing attribute list (`## Links { #custom-links }`
    shows "Links"), taken off the inline token, and the list's id, as the body scan reads
    them (`parse.body.heading_attributes`)."""
    content, explicit = heading_attributes(inline.content)
    removed = inline.content[len(content) :].strip()
    if removed:
        inline.content = content
        last = inline.children[-1] if inline.children else None
        if last is not None and last.type == "text" and last.content.endswith(removed):
            last.content = last.content[: -len(removed)].rstrip()
    return content, explicit


def _links(
    tokens: list[Token], records: list[LinkRecord], resolve: Callable[[str], str | None]
) -> None:
    """Give each wiki-link token the page it resolved to (see the module's docstring), and
    make links that are not external or in-page text."""
    cursor = 0
    for block in tokens:
        if block.type != "inline" or not block.children:
            continue
        inside = 0  # inside a Markdown link: a nested wiki-link stays text
        for token in block.children:
            if token.type == "link_open":
                href = str(token.attrGet("href") or "")
                if href.startswith("#") or (_external(href) and safe_url(href)):
                    if not href.startswith("#"):
                        token.attrSet("rel", "nofollow noopener noreferrer")
                    inside += 1
                    continue
                at = _next_markdown(records, cursor, href, embed=False)
                if at is not None:
                    cursor = at + 1
                    to = records[at].to
                    href_to = resolve(to) if isinstance(to, str) and not inside else None
                    if href_to is not None:
                        heading = records[at].heading
                        token.attrSet("href", href_to + (fragment(heading) if heading else ""))
                        token.attrSet("class", "mdlink")
                        inside += 1
                        continue
                # A path of the source tree: the site does not have it.
                token.tag = "span"
                token.attrs = {"class": "link-omitted", "title": href}
                token.meta["omitted"] = True
                inside += 1
            elif token.type == "link_close":
                inside -= 1
            elif token.type == "image":
                at = _next_markdown(records, cursor, str(token.attrGet("src") or ""), embed=True)
                cursor = cursor if at is None else at + 1
            elif token.type == "wikilink":
                link: WikiLink = token.meta["link"]
                for j in range(cursor, min(cursor + _LOOKAHEAD, len(records))):
                    if link.matches(records[j]):
                        cursor = j + 1
                        to = records[j].to
                        href_to = resolve(to) if isinstance(to, str) and not inside else None
                        if href_to is not None and link.heading:
                            href_to += fragment(link.heading)
                        token.meta["href"] = href_to
                        break
        _close_omitted(block.children)


def _next_markdown(records: list[LinkRecord], cursor: int, href: str, embed: bool) -> int | None:
    """The record of the Markdown link or image whose token has `href`: the next one that
    matches, within the lookahead."""
    if not href or href.startswith("#") or _external(href):
        return None
    for j in range(cursor, min(cursor + _LOOKAHEAD, len(records))):
        if _markdown_match(href, embed, records[j]):
            return j
    return None


def _close_omitted(children: list[Token]) -> None:
    """The closing tag of each link made text: `</span>`, matched by nesting."""
    stack: list[Token] = []
    for token in children:
        if token.type == "link_open":
            stack.append(token)
        elif token.type == "link_close" and stack and stack.pop().meta.get("omitted"):
            token.tag = "span"


# ASCII punctuation, each written with a backslash to be read as itself (CommonMark).
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_BACKTICKS = re.compile(r"`+")


def _literal(text: str) -> str:
    """Markdown that renders as `text` itself: a shortcode's delimiters hold parameters,
    never a link, a wiki-link or emphasis."""
    return _PUNCTUATION.sub(r"\\\1", text)


def _fenced(code: str) -> str:
    """`code` as a fenced code block, its fence longer than any run of backticks in it."""
    fence = "`" * max(3, 1 + max((len(m) for m in _BACKTICKS.findall(code)), default=0))
    return f"\n\n{fence}\n{code.strip(chr(10))}\n{fence}\n\n"


def _right_end(text: str) -> int:
    """Where the opening shortcode of a region (`{{< … >}}`, `{{% … %}}`, Hugo's escape
    `{{</* … */>}}`) ends."""
    right = ("*/" if text.startswith("/*", 3) else "") + text[2].replace("<", ">") + "}}"
    at = text.find(right, 3)
    return len(text) if at == -1 else at + len(right)


def hugo_source(body: str, code: frozenset[str], toml: bool) -> str:
    """The body as Hugo's pages read, for markdown-it: its TOML front matter (`toml`: the
    page has no YAML frontmatter) left out, each code shortcode's body (`code-toggle`,
    `highlight`, `code`, `[links] code_shortcodes`) a fenced code block, and the text inside
    shortcode delimiters plain text. These are the regions the body scan reads no links or
    headings in (`parse.shortcodes`), so the site's headings and their anchors are the
    checker's. Shortcodes inside a code block are left as written (already text)."""
    if toml:
        skipped = front_matter(body)
        if skipped:
            body = body[skipped[0][1] :]
    found = regions(body, code)
    if not found:
        return body
    code_lines: set[int] = set()
    for token in _MD.parse(body):
        if token.type in ("fence", "code_block") and token.map is not None:
            code_lines.update(range(token.map[0], token.map[1]))
    out: list[str] = []
    pos = 0
    for start, end in found:
        out.append(body[pos:start])
        text = body[start:end]
        if body.count("\n", 0, start) in code_lines:
            out.append(text)
        else:
            opening = _right_end(text)
            closing = text.rfind("{{", opening) if opening < len(text) else -1
            if closing == -1:
                out.append(_literal(text))
            else:  # a code shortcode with its body and closing
                out.append(_literal(text[:opening]))
                out.append(_fenced(text[opening:closing]))
                out.append(_literal(text[closing:]))
        pos = end
    out.append(body[pos:])
    return "".join(out)


def render_body(
    record: PageRecord,
    resolve: Callable[[str], str | None],
    *,
    title: str | None = None,
    label_first: bool = False,
    code_shortcodes: frozenset[str] = CODE_SHORTCODES,
) -> str:
    """The record's rendered body as HTML. `resolve` gives the link (relative to the page) of
    a page of the site by its path, or None. A first `# heading` that repeats the title is
    left out (the page shows the title, anchored `Headings(title).title`), and headings move
    one level down under it. `label_first`: wiki-links are Dendron's, `[[label|note]]`;
    Hugo's regions are read as `hugo_source` says, with the project's `code_shortcodes`."""
    title = record.title if title is None else title
    env: dict[str, Any] = {"label_first": label_first}
    toml = not isinstance(record.body_line, int) or record.body_line == 1
    tokens = _MD.parse(hugo_source(record.body, code_shortcodes, toml), env)
    if _first_heading_is_title(tokens, title):
        tokens = tokens[3:]
    anchors = Headings(title)
    for i, token in enumerate(tokens):
        if token.type in ("heading_open", "heading_close"):
            level = min(int(token.tag[1]) + 1, 6)
            token.tag = f"h{level}"
            if token.type == "heading_open":
                inline = tokens[i + 1]
                text, explicit = _drop_attributes(inline)
                token.attrSet("id", anchors.anchor(text, explicit))
                if explicit is not None and slug(text) != explicit:
                    _text_anchor(inline, anchors.anchor(text))
    body_links = [link for link in record.links if link.kind in ("link", "embed")]
    _links(tokens, body_links, resolve)
    html: str = _MD.renderer.render(tokens, _MD.options, env)
    return html
