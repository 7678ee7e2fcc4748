"""The records of a build, one type each, shared by the writer and the reader.

Every JSON file of a build is one of these types. The writer builds them and `encode` writes
them (sorted keys, compact, UTF-8: the same records, the same bytes); a reader decodes a file
into its type with `decode`, which checks every key and value on the way (msgspec validates
while it parses, several times faster than `json` plus a check by hand, measured in the
closing note of the change that introduced it). A record that does not have its shape is an
`ArtifactError` that says which file and where, never a KeyError later.

Keys a later minor version adds are ignored on read. Fields that are written only sometimes
default to `UNSET` and are then left out on write. Messages name keys and positions from the
schema, never a value from the file (which could be huge, hold a secret, or span lines).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, NotRequired, TypedDict, TypeVar

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from knowl_build.core.errors import ArtifactError
from knowl_build.core.vocabulary import MAX_BOOST, MAX_CAVEATS

Count = Annotated[int, Meta(ge=0, le=1 << 53)]
Hex64 = Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]
Boost = Annotated[float, Meta(gt=0, le=MAX_BOOST)]
Severity = Literal["error", "warning", "info"]


# --- the manifest ------------------------------------------------------------------------------


class SearchSettings(Struct, frozen=True):
    boosts: dict[str, Boost]
    max_caveats: Annotated[int, Meta(ge=0, le=MAX_CAVEATS)]


class RecordCounts(Struct, frozen=True):
    reused: Count
    built: Count


class IndexUpdateCounts(Struct, frozen=True):
    added: Count
    updated: Count
    deleted: Count
    merged: bool
    incremental: bool


class Manifest(Struct, frozen=True):
    format: str
    schema_version: str
    tool_version: str
    build_id: str
    commit: str | None
    dirty: bool
    inputs_sha256: str
    config_sha256: str
    built_at: str
    repo: str
    counts: dict[str, Count]
    error_count: Count
    search: SearchSettings
    files: dict[str, Hex64]
    records: RecordCounts | UnsetType = UNSET
    index: IndexUpdateCounts | UnsetType = UNSET
    vectors: dict[str, Any] | UnsetType = UNSET
    sizes: dict[str, Count] | UnsetType = UNSET


# --- pages.jsonl.gz and catalog.json ------------------------------------------------------------


class CommitInfo(Struct, frozen=True):
    """A commit (`commit`, `date`, `author`, `subject`), or uncommitted changes
    (`commit` null, `working_tree` true)."""

    commit: str | None
    date: str | UnsetType = UNSET
    author: str | UnsetType = UNSET
    subject: str | UnsetType = UNSET
    working_tree: bool | UnsetType = UNSET


class Conflict(Struct, frozen=True):
    key: str
    normalized_key: str
    scope: dict[str, Any]
    exclusive: bool


class PageFields(Struct, frozen=True):
    summary: str
    tags: list[str]
    sl_refs: list[str]
    refs: list[str]
    usage_mode: str
    category: str | None
    status: str
    superseded_by: str | None
    freshness: str
    confidence: float
    source: str | None
    source_commit: str | None
    affected_paths: list[str]
    conflict: Conflict | None
    visibility: str
    reasoning: str | None
    alternatives: list[str]
    steps: list[str]
    provenance: str
    last_validated_at: str | None
    bound_fingerprints: dict[str, str]
    frozen: bool


class Reason(Struct, frozen=True):
    code: str
    message: str


class Freshness(Struct, frozen=True):
    value: str
    reasons: list[Reason]


class Heading(Struct, frozen=True):
    level: Count
    text: str
    line: Count
    # Since 2.2: an explicit id (`## Links { #custom-links }`), the heading's anchor.
    anchor: str | UnsetType = UNSET


class LinkRecord(Struct, frozen=True):
    target: str
    kind: str
    heading: str | None
    line: Count
    column: Count
    to: str | UnsetType = UNSET  # the path of the page it resolves to, as the checker did
    # A Markdown link (`[text](dest)`, `[text][label]`, `![alt](dest)`): "markdown", where it
    # ends, and its text; left out for wiki-links and refs.
    form: str | UnsetType = UNSET
    end_line: Count | UnsetType = UNSET
    end_column: Count | UnsetType = UNSET
    text: str | UnsetType = UNSET


class Drift(Struct, frozen=True):
    entity: str
    bound: str
    live: str
    changed_in: CommitInfo | None  # the first change after the bound version
    bound_expr: str | UnsetType | None = UNSET  # the definitions as text (None: not in history)
    live_expr: str | UnsetType | None = UNSET
    changes: list[CommitInfo] | UnsetType = UNSET  # every change since, oldest first
    diff: str | UnsetType = UNSET  # the lines that differ, when a definition spans lines


class PageRecord(Struct, frozen=True):
    """One line of pages.jsonl.gz: everything the build knows of one page."""

    id: str
    scope: str
    owner: str | None
    path: str
    title: str
    frontmatter: dict[str, Any]
    fields: PageFields
    body: str
    raw_body: str
    headings: list[Heading]
    links: list[LinkRecord]
    freshness: Freshness
    drift: list[Drift]
    last_commit: CommitInfo | None
    node: str | UnsetType = UNSET  # its graph node's name, when not its id (a shared id)
    body_line: Count | UnsetType = UNSET  # the file's line where the body starts


class CatalogEntry(Struct, frozen=True):
    """A page in catalog.json: what search filters and ranks on, and where its record is."""

    key: str  # the page's path: unique in a build
    id: str
    scope: str
    owner: str | None
    title: str
    summary: str
    tags: list[str]
    sl_refs: list[str]
    usage_mode: str
    category: str | None
    status: str
    superseded_by: str | None
    visibility: str
    freshness: str
    drift_flag: bool
    offset: Count  # of its gzip member in pages.jsonl.gz
    node: str | UnsetType = UNSET  # as PageRecord.node


class Bind(Struct, frozen=True):
    """What entity search needs of a catalog entry binding an entity: the entities it binds,
    and what decides whether it is a hit (its status, whether it is a caveat)."""

    sl_refs: list[str]
    status: str
    usage_mode: str


class Catalog(Struct, frozen=True):
    pages: list[CatalogEntry]
    # Since 1.1: `catalog.catalog_caveats(pages)`, so that a reader finds the caveats about a
    # hit's entities without decoding every entry.
    caveats: dict[str, list[Count]] | UnsetType = UNSET


class CatalogHeads(Struct, frozen=True):
    """catalog-heads.json (since schema 2.3): what a search needs of every catalog entry at
    once, in the catalog's order (each entry's key, id, scope, status and usage mode, and
    where its bytes are in catalog.json: `starts[i]` to `ends[i]`), the catalog's caveats,
    and the entries binding each entity (`catalog.catalog_binding`). A reader decodes this small
    file and each entry it answers with, never the whole catalog."""

    keys: list[str]
    ids: list[str]
    scopes: list[str]
    statuses: list[str]
    usage_modes: list[str]
    starts: list[Count]
    ends: list[Count]
    caveats: dict[str, list[Count]]
    binding: dict[str, list[Count]]


# --- entities.json, graph.json, diagnostics.json, signatures.json -----------------------------


class Entity(Struct, frozen=True):
    name: str
    kind: str
    connection: str
    source: str
    member: str | None
    definition: dict[str, Any]
    file: str
    line: Count
    fingerprint: str
    introduced_in: CommitInfo | None
    changed_in: CommitInfo | None


class Entities(Struct, frozen=True):
    entities: list[Entity]


class PageNode(Struct, frozen=True, tag_field="type", tag="page"):
    id: str
    label: str
    scope: str
    page_id: str
    path: str
    usage_mode: str
    status: str


class EntityNode(Struct, frozen=True, tag_field="type", tag="entity"):
    id: str
    label: str
    kind: str


class Edge(Struct, frozen=True):
    source: str
    target: str
    kind: str
    kinds: list[str]


class GraphData(Struct, frozen=True):
    """networkx's node-link data of the reference graph (a DiGraph)."""

    directed: Literal[True]
    multigraph: Literal[False]
    graph: dict[str, str | int | float | bool | None]
    nodes: list[PageNode | EntityNode]
    edges: list[Edge]


class DiagnosticRecord(Struct, frozen=True):
    code: str
    severity: Severity
    path: str
    line: Count
    column: Count
    end_line: Count | None
    end_column: Count | None
    message: str
    hint: str | None
    subject: str | UnsetType | None = UNSET


class SeverityCounts(Struct, frozen=True):
    error: Count
    warning: Count
    info: Count


class DiagnosticsFile(Struct, frozen=True):
    version: Count
    diagnostics: list[DiagnosticRecord]
    summary: SeverityCounts


class Signatures(Struct, frozen=True):
    graph: str
    pages: dict[str, str]


# --- index/ and vectors/ -------------------------------------------------------------------------


class FieldLengths(Struct, frozen=True):
    title: Count
    summary: Count
    tags: Count
    body: Count


class ScopeStats(Struct, frozen=True):
    doc_count: Count
    length_sums: FieldLengths


class IndexStats(Struct, frozen=True):
    doc_count: Count
    length_sums: FieldLengths
    scopes: dict[str, ScopeStats] | UnsetType = UNSET


class VectorsMeta(Struct, frozen=True):
    model: dict[str, Any]
    keys: list[str]
    digests: list[str]
    dim: Annotated[int, Meta(ge=1, le=65536)]


# --- answers -------------------------------------------------------------------------------------
#
# What the reader answers (the JSON of `--json` and of the MCP tools): plain dicts, typed here
# so that the reader, the front ends and the renderers agree on one shape.


class BuildRef(TypedDict):
    id: str
    commit: str | None


class PageRef(TypedDict):
    page: str
    scope: str


class SearchHit(TypedDict):
    kind: Literal["page"]  # a search may find entities too (`EntityHit`)
    page: str
    scope: str
    repo: str
    title: str
    summary: str
    usage_mode: str
    category: str | None
    status: str
    score: float
    matched_on: list[str]
    sl_refs: list[str]
    freshness: str
    drift_flag: bool
    annotations: list[PageRef]
    # Since 2.2: the best-matching section and the line of it with most query terms.
    section: NotRequired[HitSection | None]
    snippet: NotRequired[Snippet | None]


class EntityHit(TypedDict):
    """A semantic entity found by a search (`knowl search --kind entity|all`)."""

    kind: Literal["entity"]
    entity: str
    entity_kind: str  # measure, dimension, metric, source, column...
    repo: str
    connection: str
    source: str
    member: str | None
    label: str | None
    description: str | None
    expression: str | None
    score: float
    matched_on: list[str]
    pages: list[PageRef]  # the pages binding it (sl_refs) the caller may see, by id


class HitSection(TypedDict):
    heading: str
    anchor: str  # the heading's anchor on the page's site page
    line: int  # the heading's line in the page's file


class Snippet(TypedDict):
    text: str
    line: int  # in the page's file
    matches: list[list[int]]  # [start, end) of each matched word in `text`, in characters


class TriggeredCaveat(TypedDict):
    page: str
    scope: str
    summary: str
    triggered_by: list[str]


class SearchAnswer(TypedDict):
    query: str
    user: str | None
    build: BuildRef
    lexical_only: bool
    hits: list[SearchHit]
    caveats: list[TriggeredCaveat]
    # Without a hit: up to 3 index terms nearest each query term ("did you mean").
    suggestions: NotRequired[dict[str, list[str]]]


class MixedSearchAnswer(TypedDict):
    """`SearchAnswer` whose hits may be entities too (`knowl search --kind entity|all`)."""

    query: str
    user: str | None
    build: BuildRef
    lexical_only: bool
    hits: list[SearchHit | EntityHit]
    caveats: list[TriggeredCaveat]
    suggestions: NotRequired[dict[str, list[str]]]


class Backlink(TypedDict):
    page: str
    scope: str
    kind: str
    path: str  # which page, where pages share an id (Obsidian resolution)


class BoundCaveat(TypedDict):
    page: str
    scope: str
    summary: str
    entities: list[str]


class ShowMeta(TypedDict):
    provenance: str
    last_validated_at: str | None
    drift_flag: bool
    frozen: bool


class AtRevision(TypedDict):
    rev: str
    commit: str


class ShowAnswer(TypedDict):
    page_id: str
    scope: str
    title: str
    summary: str
    body: str
    tags: list[str]
    sl_refs: list[str]
    refs: list[str]
    usage_mode: str
    category: str | None
    status: str
    superseded_by: str | None
    meta: ShowMeta
    freshness: dict[str, Any]
    drift: list[dict[str, Any]]
    annotations: list[PageRef]
    backlinks: list[Backlink]
    caveats: list[BoundCaveat]
    path: str
    repo: str
    at: NotRequired[AtRevision]  # `show --at REV`: the page as it was at that revision


# How traverse reached a page: from which page, over which kind of edge (and entity).
Via = TypedDict("Via", {"from": str, "kind": str, "entity": NotRequired[str]})


class Reached(TypedDict):
    page: str
    scope: str
    depth: int
    via: Via | None


class EntitySummary(TypedDict):
    entity: str
    kind: str
    fingerprint: str
    expr: Any


class TraverseAnswer(TypedDict):
    seeds: list[str]
    pages: list[Reached]
    entities: list[EntitySummary]
    max_nodes: int  # the limit of the walk, seeds included
    truncated: bool  # it stopped at max_nodes while more pages were within reach


class StaleRow(TypedDict):
    page: str
    scope: str
    path: str
    freshness: str
    reasons: list[dict[str, str]]


class StaleAnswer(TypedDict):
    pages: list[StaleRow]


# --- reading and writing ---------------------------------------------------------------------------

# The JSON files of a build and their types (the records are read member by member).
FILES: dict[str, type[Any]] = {
    "manifest.json": Manifest,
    "catalog.json": Catalog,
    "catalog-heads.json": CatalogHeads,
    "entities.json": Entities,
    "graph.json": GraphData,
    "diagnostics.json": DiagnosticsFile,
    "signatures.json": Signatures,
    "index/stats.json": IndexStats,
    "index/docs.json": dict[str, Hex64],
    "vectors/meta.json": VectorsMeta,
}

T = TypeVar("T")
_ENCODER = msgspec.json.Encoder(order="sorted")
_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}
_WHERE = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_VALUE = re.compile(r"Invalid enum value .*", re.S)


def encode(record: Any) -> bytes:
    """Sorted keys, compact, UTF-8, ending in a new line: the same data, the same bytes."""
    return _ENCODER.encode(record) + b"\n"


def decoder(kind: type[T]) -> msgspec.json.Decoder[T]:
    found = _DECODERS.get(kind)
    if found is None:
        found = _DECODERS[kind] = msgspec.json.Decoder(kind)
    return found


def problem(exc: msgspec.DecodeError) -> str:
    """msgspec's reason without any value from the file: what is wrong, then where."""
    text = str(exc)
    match = _WHERE.search(text)
    what = text[: match.start()] if match else text
    if _VALUE.match(what):
        what = "Invalid value"  # msgspec would quote the value
    elif not isinstance(exc, msgspec.ValidationError):
        what = "not valid JSON"
    where = match.group("path").lstrip(".") if match else ""
    return f"'{where}': {what}" if where else what


def decode(name: str, data: bytes | memoryview, kind: type[T]) -> T:
    """`data`, the file `name` of a build, as a `kind`; an ArtifactError says where it is not."""
    try:
        return decoder(kind).decode(data)
    except msgspec.DecodeError as exc:
        raise ArtifactError(f"{name}: {problem(exc)}") from None
    except RecursionError:
        raise ArtifactError(f"{name}: nested too deeply") from None
