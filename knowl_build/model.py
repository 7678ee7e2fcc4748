"""The records every stage passes along: pages, links, directives, entities, positions."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from dataclasses import fields as fields_of
from typing import Any, NamedTuple

from knowl_build.diagnostics import Finding

# The vocabularies of page fields (SPEC 2.2), kept in `vocabulary` and named here too.
from knowl_build.vocabulary import CATEGORIES as CATEGORIES
from knowl_build.vocabulary import DRAFT as DRAFT
from knowl_build.vocabulary import FRESHNESS as FRESHNESS
from knowl_build.vocabulary import PROVENANCES as PROVENANCES
from knowl_build.vocabulary import STATUSES as STATUSES
from knowl_build.vocabulary import USAGE_MODES as USAGE_MODES
from knowl_build.vocabulary import VISIBILITIES as VISIBILITIES


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

    def to_list(self) -> list[int]:
        return [self.line, self.column, self.end_line, self.end_column]

    @classmethod
    def from_list(cls, row: list[int]) -> Span:
        return cls(*row)


class Located(NamedTuple):
    """A string value from frontmatter with the span of its value."""

    value: str
    span: Span

    def to_list(self) -> list[Any]:
        return [self.value, *self.span.to_list()]

    @classmethod
    def from_list(cls, row: list[Any]) -> Located:
        return cls(row[0], Span(*row[1:5]))


class Link(NamedTuple):
    """A wiki-link or embed in a body. `target` is the page part ("" for `[[#Heading]]`)."""

    raw: str
    target: str
    heading: str | None
    embed: bool
    span: Span

    def to_list(self) -> list[Any]:
        return [self.raw, self.target, self.heading, self.embed, *self.span.to_list()]

    @classmethod
    def from_list(cls, row: list[Any]) -> Link:
        return cls(row[0], row[1], row[2], row[3], Span(*row[4:8]))


class Directive(NamedTuple):
    """A live-definition directive `<< sl:NAME >>` or `{{ sl:NAME }}` (absolute offsets)."""

    raw: str
    name: str
    start: int
    end: int
    span: Span

    def to_list(self) -> list[Any]:
        return [self.raw, self.name, self.start, self.end, *self.span.to_list()]

    @classmethod
    def from_list(cls, row: list[Any]) -> Directive:
        return cls(row[0], row[1], row[2], row[3], Span(*row[4:8]))


@dataclass(frozen=True, slots=True)
class Conflict:
    key: str  # as written
    normalized_key: str
    scope: tuple[tuple[str, str], ...]  # sorted, values as strings
    exclusive: bool

    def to_list(self) -> list[Any]:
        return [self.key, self.normalized_key, [list(p) for p in self.scope], self.exclusive]

    @classmethod
    def from_list(cls, row: list[Any]) -> Conflict:
        return cls(row[0], row[1], tuple((k, v) for k, v in row[2]), row[3])


class BoundFingerprint(NamedTuple):
    entity: str
    fingerprint: str
    key_span: Span

    def to_list(self) -> list[Any]:
        return [self.entity, self.fingerprint, *self.key_span.to_list()]

    @classmethod
    def from_list(cls, row: list[Any]) -> BoundFingerprint:
        return cls(row[0], row[1], Span(*row[2:6]))


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

    def to_json(self) -> dict[str, Any]:
        """Only the fields that differ from their defaults (the parse cache stays small)."""
        out: dict[str, Any] = {}
        for name in _FIELD_NAMES:
            value = getattr(self, name)
            if value == _DEFAULTS[name]:
                continue
            if name in ("sl_refs", "refs", "affected_paths", "bound_fingerprints"):
                value = [x.to_list() for x in value]
            elif name in ("superseded_by", "conflict"):
                value = value.to_list()
            elif name == "anchors":
                value = {k: v.to_list() for k, v in value.items()}
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Fields:
        kwargs: dict[str, Any] = {}
        for name, value in d.items():
            if name in ("sl_refs", "refs", "affected_paths"):
                value = tuple(Located.from_list(x) for x in value)
            elif name == "bound_fingerprints":
                value = tuple(BoundFingerprint.from_list(x) for x in value)
            elif name == "superseded_by":
                value = Located.from_list(value)
            elif name == "conflict":
                value = Conflict.from_list(value)
            elif name == "anchors":
                value = {k: Span.from_list(v) for k, v in value.items()}
            elif isinstance(value, list):
                value = tuple(value)
            kwargs[name] = value
        return cls(**kwargs)


_FIELD_NAMES = tuple(f.name for f in fields_of(Fields))
_DEFAULTS = {name: getattr(Fields(), name) for name in _FIELD_NAMES}


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

    def to_list(self) -> list[Any]:
        return [self.next_line, list(self.codes), *self.span.to_list(), self.whole_file]

    @classmethod
    def from_list(cls, row: list[Any]) -> Suppression:
        return cls(row[0], tuple(row[1]), Span(*row[2:6]), row[6])


class Heading(NamedTuple):
    level: int
    text: str  # inline markup removed
    line: int


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

    def to_json(self) -> dict[str, Any]:
        return {
            "fm": self.frontmatter,
            "fields": self.fields.to_json(),
            "body_offset": self.body_offset,
            "links": [x.to_list() for x in self.links],
            "directives": [x.to_list() for x in self.directives],
            "headings": [[h.level, h.text, h.line] for h in self.headings],
            "h1": self.h1,
            "findings": [f.to_list() for f in self.findings],
            "text_ok": self.text_ok,
            "suppressions": [x.to_list() for x in self.suppressions],
            "blocks": list(self.blocks),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ParsedPage:
        return cls(
            frontmatter=d["fm"],
            fields=Fields.from_json(d["fields"]),
            body_offset=d["body_offset"],
            links=tuple(Link.from_list(x) for x in d["links"]),
            directives=tuple(Directive.from_list(x) for x in d["directives"]),
            headings=tuple(Heading(*h) for h in d["headings"]),
            h1=d["h1"],
            findings=tuple(Finding.from_list(f) for f in d["findings"]),
            text_ok=d["text_ok"],
            suppressions=tuple(Suppression.from_list(x) for x in d["suppressions"]),
            blocks=tuple(d["blocks"]),
        )


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
