"""Links to a moved page or file, rewritten in their own form (`knowl fix`).

A link the checker finds broken is rewritten when git shows where what it named went
(`history.moves`): the target was renamed or moved, or the linking page itself was (its
relative paths now start elsewhere). A Markdown link keeps its form: a relative path stays
relative, recomputed from the linking page; `%20` encoding, angle brackets, the `#fragment`,
the link text, a reference definition (rewritten once, where it is) all stay. A path written
without `.md` stays without it, a folder path (`setup/`) stays one, a leading `./` stays. The
path part of the destination, as written (escapes and character references included), is
replaced whole; the `#fragment` and `?query` stay byte for byte. The new path is written so
that it parses in the link's form: in a plain destination, characters that would end it or
change what it means (a space, a control character, `(`, `)`, `<`, `>`, `\\`, `|`, `#`, `?`,
`%XX`, `&` starting a character reference) are percent-encoded, in `<angle brackets>` `<`,
`>` and `\\` are escaped; a character the old destination percent-encoded is encoded again.
In Obsidian mode a link by file name ("shortest path when possible") is rewritten by file
name: the shortest tail of the new path that names it alone. In Dendron mode a
`dendron://vault/note` link keeps its vault, and `[[label|note]]`'s note is the one
rewritten.

Every rewrite is checked by scanning the rewritten page again: the link must read as exactly
the target meant, else that rewrite is not made and `knowl fix` says why (a broken link is
never written).

A wiki-link's name becomes the new page's name (its id, or its path under the scope folder
when it was written with a `/` or the id alone would name another page); the heading and
alias stay.

Site-absolute links (`/a/b/`) are not rewritten: what they mean depends on the site.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import quote, unquote

from markdown_it.common.utils import unescapeAll

from knowl_build.core.config import DENDRON, EXACT, OBSIDIAN
from knowl_build.core.linkpaths import (
    FILE,
    PAGE_SUFFIX,
    PRETTY_INDEXES,
    forms,
    leaves,
    relative_path,
)
from knowl_build.core.model import MARKDOWN, Link, Page, TextIndex
from knowl_build.core.resolve import DENDRON_SCHEME, fold, place
from knowl_build.parse.body import scan_body
from knowl_build.parse.dendron import label_first
from knowl_build.parse.frontmatter import split
from knowl_build.parse.text import decode
from knowl_build.pipeline.analysis import Analysis


class Relink(NamedTuple):
    start: int  # offset in the page's text
    old: str  # the text there now
    new: str


@dataclass(frozen=True, slots=True)
class Relinks:
    """The rewrites of one page's links, in the order of the page."""

    edits: list[Relink] = field(default_factory=list)
    # Rewrites not made, as the link would not parse as meant (one line each).
    refused: list[str] = field(default_factory=list)

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
    meant: dict[int, tuple[Link, str]] = {}  # start -> the link, the target it is to read
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
            made = _markdown(analysis, places, page, link, text, moves, origin)
        else:
            made = _wiki(analysis, places, page, link, text, index, moves)
        if made is not None and made[0].old != made[0].new and made[0].start not in found:
            found[made[0].start] = made[0]
            meant[made[0].start] = (link, made[1])
    return _verified(analysis, page, text, [found[start] for start in sorted(found)], meant)


def _verified(
    analysis: Analysis,
    page: Page,
    text: str,
    edits: list[Relink],
    meant: dict[int, tuple[Link, str]],
) -> Relinks:
    """The rewrites whose link, in the page scanned again with them made, reads as the
    target meant with the fragment it had; the others refused, each with a line saying so."""
    refused: list[str] = []
    while edits:
        after = apply_relinks(text, edits)
        links, index = _scanned(analysis, page, after), TextIndex(after)
        bad = next((e for e, at in _shifted(edits) if not _reads(links, index, e, at, meant)), None)
        if bad is None:
            break
        link = meant[bad.start][0]
        refused.append(
            f"{page.path}:{link.span.line}:{link.span.column}: not relinked: {bad.old} to "
            f"{bad.new} would not read as a link to {meant[bad.start][1]}; edit it by hand"
        )
        edits = [e for e in edits if e is not bad]
    return Relinks(edits, refused)


def _shifted(edits: list[Relink]) -> list[tuple[Relink, int]]:
    """Each rewrite with its start in the rewritten text."""
    out, delta = [], 0
    for edit in edits:
        out.append((edit, edit.start + delta))
        delta += len(edit.new) - len(edit.old)
    return out


def _scanned(analysis: Analysis, page: Page, text: str) -> list[Link]:
    """The links of the page's `text`, read as the check reads them."""
    parts = split(text)
    scan = scan_body(text, parts.body_offset, TextIndex(text), analysis.config.code_names)
    if analysis.index.mode != DENDRON:
        return list(scan.links)
    return list(label_first(dataclasses.replace(page.parsed, links=scan.links)).links)


def _reads(
    links: list[Link], index: TextIndex, edit: Relink, at: int, meant: dict[int, tuple[Link, str]]
) -> bool:
    old, target = meant[edit.start]
    for link in links:
        if link.form != old.form or link.heading != old.heading or link.embed != old.embed:
            continue
        if link.form == MARKDOWN:
            if link.at == at:
                return link.destination == edit.new and link.target == target
            continue
        start = index.starts[link.span.line - 1] + link.span.column - 1
        end = index.starts[link.span.end_line - 1] + link.span.end_column
        if start <= at < end:
            return link.target == target
    return False


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
    analysis: Analysis,
    places: _Places,
    page: Page,
    link: Link,
    text: str,
    moves: dict[str, str],
    origin: str | None,
) -> tuple[Relink, str] | None:
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
            folder = posixpath.dirname(page.path) or "."
            relative = posixpath.relpath(shown, folder) + ("/" if shown.endswith("/") else "")
            written, meant = destination(link.destination, relative)
            return Relink(link.at, link.destination, written), meant
    if analysis.index.mode == OBSIDIAN and not link.target.startswith("../"):
        return _by_file_name(analysis, places, page, link, moves)
    return None


def _by_file_name(
    analysis: Analysis, places: _Places, page: Page, link: Link, moves: dict[str, str]
) -> tuple[Relink, str] | None:
    """Obsidian's link by file name or path tail (`Note.md`, `Folder/Note`) to what moved:
    the shortest tail of the new path, from as many folders as the link named, that names
    it alone."""
    name = link.target.removeprefix("./")
    bare = not posixpath.splitext(posixpath.basename(name))[1]
    tail = fold(name + PAGE_SUFFIX if bare else name)
    moved = [old for old in moves if fold("/" + old).endswith("/" + tail)]
    if len(moved) != 1:
        return None
    new = moves[moved[0]]
    parts = new.removeprefix(analysis.config.layout.prefix).split("/")
    for count in range(name.count("/") + 1, len(parts) + 1):
        shown = "/".join(parts[-count:])
        if bare and new.endswith(PAGE_SUFFIX):
            shown = shown[: -len(PAGE_SUFFIX)]
        if _names_alone(analysis, places, page, link._replace(target=shown), new):
            written, meant = destination(link.destination, shown)
            return Relink(link.at, link.destination, written), meant
    return None


def _names_alone(analysis: Analysis, places: _Places, page: Page, link: Link, new: str) -> bool:
    """Whether `link` (its target the new one) names the page or file at `new`, and only it."""
    resolution = analysis.index.resolve_link(page, link)
    target = places.pages.get(new)
    if target is not None:
        return resolution.pages == [target] and not resolution.ambiguous
    if not resolution.file:
        return False
    relative = relative_path(page.path, link.target)
    if places.exists(relative):
        return relative == new
    knowledge = analysis.config.layout.prefix
    named = analysis.index.files_by_name.get(posixpath.basename(link.target), [])
    tail = "/" + link.target
    return [p for p in named if ("/" + p).endswith(tail)] == [new.removeprefix(knowledge)]


# A character reference, as CommonMark reads one in a destination.
_REFERENCE = re.compile(r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
_ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")
_ENCODED = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_HEX = re.compile(r"%[0-9A-Fa-f]{2}")
_BREAKS_PLAIN = frozenset(" <>()\\|#?")
_BREAKS_ANGLE = frozenset("|#?")


def destination(written: str, path: str) -> tuple[str, str]:
    """The destination `written` (as written) pointing at `path` (decoded, as the link is
    to read it) instead, and the target it then reads as. The path part as written is
    replaced whole (escapes and character references included: a `#` from `&#35;` is the
    fragment's start only where CommonMark reads one); the fragment and query stay as
    written; a leading `./` and the percent-encoding of the characters the old path encoded
    stay."""
    angle = written.startswith("<") and written.endswith(">")
    inner = written[1:-1] if angle else written
    old, rest = _path_part(inner)
    if old.startswith("./") and not path.startswith("./"):
        path = "./" + path
    if angle:
        return f"<{_encoded(path, old, True)}{rest}>", path
    return _encoded(path, old, False) + rest, path


def _path_part(inner: str) -> tuple[str, str]:
    """A destination (without angle brackets) cut where its decoded value's path ends: at
    the first `#` or `?` CommonMark reads (not one inside `&#32;`, say)."""
    at = 0
    while at < len(inner):
        match = _REFERENCE.match(inner, at) or _ESCAPE.match(inner, at)
        piece = match.group(0) if match else inner[at]
        if any(char in "#?" for char in unescapeAll(piece)):
            return inner[:at], inner[at:]
        at += len(piece)
    return inner, ""


def _encoded(path: str, old: str, angle: bool) -> str:
    """`path` written so that a destination of the form reads it back as `path`."""
    style = {char for run in _ENCODED.findall(old) for char in unquote(run)}
    wide = any(ord(char) > 127 for char in style)
    out = []
    for at, char in enumerate(path):
        code = ord(char)
        if char == "/":
            out.append(char)
        elif (
            code < 0x20
            or code == 0x7F
            or char in (_BREAKS_ANGLE if angle else _BREAKS_PLAIN)
            or char in style
            or (wide and code > 127)
            or (char == "%" and _HEX.match(path, at))
            or (char == "&" and _REFERENCE.match(path, at))
        ):
            out.append(quote(char, safe=""))
        elif angle and char in "<>\\":
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


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
) -> tuple[Relink, str] | None:
    knowledge = analysis.config.layout
    pages = places.pages
    mode = analysis.index.mode
    exact = mode == EXACT
    visible = analysis.index.visible_scopes(page.scope)
    written, prefix = link.target, ""
    if mode == DENDRON and fold(written).startswith(DENDRON_SCHEME):
        # `dendron://vault/note`: the vault stays, the note is renamed.
        vault, slash, note = written[len(DENDRON_SCHEME) :].partition("/")
        if not (vault and slash and note):
            return None
        written, prefix = note, written[: len(written) - len(note)]
    key = written if exact else fold(written)
    named: list[Page] = []
    for old, new in moves.items():
        was = place(old, knowledge) if old.endswith(PAGE_SUFFIX) else None
        target = pages.get(new)
        if was is None or target is None or was.scope not in visible:
            continue
        name = was.rel if "/" in written else was.id
        if (name if exact else fold(name)) == key:
            named.append(target)
    if len(named) != 1:
        return None
    target = named[0]
    name = target.rel if "/" in written else target.id
    if analysis.index.resolve(prefix + name, page.scope).pages != [target]:
        name = target.rel
        if analysis.index.resolve(prefix + name, page.scope).pages != [target]:
            return None
    start = index.starts[link.span.line - 1] + link.span.column - 1
    end = start + len(link.raw)
    inner = text.find("[[", start, end) + 2
    if mode == DENDRON and "|" in link.raw:
        inner = text.find("|", inner, end) + 1  # Dendron writes the label first
    at = text.find(link.target, inner, end)
    if at == -1 or inner < 2:
        return None
    return Relink(at + len(prefix), written, name), prefix + name
