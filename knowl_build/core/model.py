"""The records every stage passes along: pages, links, directives, entities, positions."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from knowl_build.core.diagnostics import Finding

# The vocabularies of page fields (SPEC 2.2), kept in `vocabulary` and named here too.
from knowl_build.core.vocabulary import CATEGORIES as CATEGORIES
from knowl_build.core.vocabulary import DRAFT as DRAFT
from knowl_build.core.vocabulary import FRESHNESS as FRESHNESS
from knowl_build.core.vocabulary import PROVENANCES as PROVENANCES
from knowl_build.core.vocabulary import STATUSES as STATUSES
from knowl_build.core.vocabulary import USAGE_MODES as USAGE_MODES
from knowl_build.core.vocabulary import VISIBILITIES as VISIBILITIES


class TextIndex:
    """Turns character offsets into 1-based (line, column). Only `\\n` ends a line."""

    __slots__ = ("starts",)

    def __init__(self, text: str) -> None:
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        self.starts = starts

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1


class Span(NamedTuple):
    """A 1-based source range; `end_column` is inclusive of the last character."""

    line: int
    column: int
    end_line: int
    end_column: int


class Located(NamedTuple):
    """A string value from frontmatter with the span of its value."""

    value: str
    span: Span


# The forms of a Link.
WIKI = "wiki"
MARKDOWN = "markdown"


class Link(NamedTuple):
    """A link or embed in a body.

    A wiki-link (`form` WIKI), `[[target#heading|alias]]` or `![[…]]`: `target` is the page
    part ("" for `[[#Heading]]`). A Markdown link or image (`form` MARKDOWN), `[text](dest)`,
    `[text][label]` with `[label]: dest`, `![alt](dest)`: `target` is the destination's path
    as CommonMark reads it (angle brackets removed, escapes and entities resolved) and then
    `%`-decoded, without its `?query` and `#fragment`; `heading` is the decoded fragment
    ("" target: `[x](#local)`, the page itself). `destination` is the destination exactly as
    written and `at` its offset in the page's text (in the definition, for a reference-style
    link), so `knowl fix` can rewrite it in place; `text` is the link's text, plain."""

    raw: str
    target: str
    heading: str | None
    embed: bool
    span: Span
    form: str = WIKI
    destination: str = ""
    at: int = -1
    text: str = ""


class UrlRef(NamedTuple):
    """An `http://` or `https://` target of a Markdown link, image or autolink in a body: the
    URL as CommonMark reads it (angle brackets removed, backslash escapes and entities
    resolved, nothing percent-encoded), and the span of the link that holds it."""

    url: str
    span: Span


class Directive(NamedTuple):
    """A live-definition directive `<< sl:NAME >>` or `{{ sl:NAME }}` (absolute offsets)."""

    raw: str
    name: str
    start: int
    end: int
    span: Span


@dataclass(frozen=True, slots=True)
class Conflict:
    key: str  # as written
    normalized_key: str
    scope: tuple[tuple[str, str], ...]  # sorted, values as strings
    exclusive: bool


class BoundFingerprint(NamedTuple):
    entity: str
    fingerprint: str
    key_span: Span
    # False for a value that is no `sha256:<hex>` (`sha256:old`): KB002, and drift all the
    # same, since it matches no version of the definition (as Canonic reads it).
    valid: bool = True


@dataclass(frozen=True, slots=True)
class Fields:
    """The known frontmatter fields that passed validation, typed; defaults otherwise."""

    summary: str = ""
    tags: tuple[str, ...] = ()
    sl_refs: tuple[Located, ...] = ()
    refs: tuple[Located, ...] = ()
    usage_mode: str = "reference"
    title: str | None = None
    category: str | None = None
    status: str = "active"
    superseded_by: Located | None = None
    freshness: str = "fresh"
    confidence: float = 1.0
    source: str | None = None
    source_commit: str | None = None
    affected_paths: tuple[Located, ...] = ()
    conflict: Conflict | None = None
    visibility: str = "repo"
    reasoning: str | None = None
    alternatives: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    provenance: str = "inferred"
    last_validated_at: str | None = None  # ISO-8601 in UTC
    bound_fingerprints: tuple[BoundFingerprint, ...] = ()
    frozen: bool = False
    # Where governance findings point: keys and values by dotted name.
    anchors: dict[str, Span] = field(default_factory=dict)


class Suppression(NamedTuple):
    """An inline suppression comment: `<!-- knowl: disable-next-line CODE... -->` hides the
    listed findings (every code when none is listed) on the line after the comment; `disable`
    hides them from the comment's line to the end of the file, or in the whole file when the
    comment is in the frontmatter (`# knowl: disable CODE`)."""

    next_line: bool
    codes: tuple[str, ...]  # empty: every code
    span: Span  # the comment itself (where KB011 points when it hides nothing)
    whole_file: bool = False

    def covers(self, code: str, line: int) -> bool:
        if self.codes and code not in self.codes:
            return False
        if self.next_line:
            return line == self.span.end_line + 1
        return self.whole_file or line >= self.span.line


class Heading(NamedTuple):
    level: int
    text: str  # inline markup and a trailing attribute list `{ #id }` removed
    line: int
    # An explicit id (`## Links { #custom-links }`, MkDocs' attr_list and Hugo's heading
    # attributes): the heading's anchor instead of its slug.
    anchor: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """Everything derived from a page's bytes alone: cacheable by content hash."""

    frontmatter: dict[str, Any]  # as written, JSON-safe
    fields: Fields
    body_offset: int  # character offset of the body in the decoded text
    links: tuple[Link, ...]
    directives: tuple[Directive, ...]
    headings: tuple[Heading, ...]
    h1: str | None  # text of the first level-1 ATX heading outside code
    findings: tuple[Finding, ...]  # page-local findings (syntax, fields, secrets, sizes)
    text_ok: bool = True  # False: KB007, the file is not UTF-8 text
    suppressions: tuple[Suppression, ...] = ()
    blocks: tuple[str, ...] = ()  # Obsidian block ids (`^id` ending a line), outside code
    urls: tuple[UrlRef, ...] = ()  # http(s) targets of Markdown links, images, autolinks


@dataclass(frozen=True, slots=True)
class Page:
    """A page at its place: identity and scope come from the path."""

    path: str  # relative to the project root, `/` separators
    id: str  # NFC-normalised file name without `.md`
    scope: str  # "global" or "user:<owner>"
    owner: str | None
    rel: str  # path under the scope folder without `.md` (for `[[Sub/Page]]` links)
    parsed: ParsedPage

    @property
    def title(self) -> str:
        return self.parsed.fields.title or self.parsed.h1 or self.id

    @property
    def key(self) -> str:
        return f"{self.scope}:{self.id}"


@dataclass(frozen=True, slots=True)
class Entity:
    """A semantic entity: a source, or a member of one (column, measure, dimension; and for
    dbt also entity and metric)."""

    name: str  # "<connection>.<source>" or "<connection>.<source>.<member>"
    kind: str  # source | column | measure | dimension | entity | metric
    connection: str
    source: str
    member: str | None
    definition: dict[str, Any]  # the mapping as written (dbt: with the effective expr), JSON-safe
    path: str
    line: int
    fingerprint: str
    origin: str = "canonic"  # canonic | dbt
    # What the fingerprint covers, as text (semantic.fingerprint): what drift shows.
    fingerprinted: str = ""

    @property
    def attributes(self) -> tuple[str, ...]:
        return ATTRIBUTES[(self.origin, self.kind)]


# Live-definition attributes by origin and kind (SPEC 2.3; dbt's extend it, see docs/concepts/live-definitions.md).
ATTRIBUTES: dict[tuple[str, str], tuple[str, ...]] = {
    ("canonic", "measure"): ("expr", "description", "additivity", "fingerprint"),
    ("canonic", "dimension"): ("column", "granularity", "label", "description"),
    ("canonic", "column"): ("type", "nullable", "description"),
    ("canonic", "source"): ("table", "description", "grain"),
    ("dbt", "measure"): ("expr", "agg", "description", "label", "fingerprint"),
    ("dbt", "dimension"): ("expr", "type", "granularity", "label", "description"),
    ("dbt", "entity"): ("expr", "type", "description"),
    ("dbt", "metric"): ("type", "expr", "agg", "label", "description", "fingerprint"),
    ("dbt", "source"): ("table", "description", "grain"),
}
