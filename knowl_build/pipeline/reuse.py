"""Reusing the previous artifact for what did not change.

A page's record is a function of the page's bytes, its path, the values its live-definition
directives render, its freshness assessment (drift included) and its last commit. Each
record is stored with a signature of those inputs (`signatures.json`); an incremental build
copies the gzip member, catalog entry and index digest of every page whose signature is
unchanged, and builds only the others. The reference graph is reused whole when nothing it
is made of changed. The incremental-equals-full property test holds this to byte identity.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from knowl_build.artifacts.layout import RECORDS
from knowl_build.artifacts.records import pack, spans, unpack
from knowl_build.artifacts.schema import (
    Catalog,
    CatalogEntry,
    PageRecord,
    Signatures,
    decode,
    encode,
)
from knowl_build.core.errors import ArtifactError
from knowl_build.core.model import Page
from knowl_build.index.analysis import DOCS_FILE
from knowl_build.index.writer import IndexDocument
from knowl_build.pipeline.records import catalog_entry, index_document, page_record, record_pages
from knowl_build.pipeline.stages.values import Analysis
from knowl_build.semantic.render import attribute_value

SIGNATURES = "signatures.json"
# Sorted keys: the same data, the same digest (msgspec: several times faster than json here,
# where every page's inputs are digested on every build).
_encode = msgspec.json.Encoder(order="sorted").encode


def _resolved(analysis: Analysis, page: Page) -> bytes:
    """The page's references as the checker resolved them, encoded: what the graph's edges
    and the record's links are made of (a name can resolve elsewhere when another page
    changes). Encoded once per page, for its signature and for the graph's digest."""
    return _encode(
        [[kind, [p.path for p in found]] for _, kind, found in analysis.index.targets(page)]
    )


def graph_digest(analysis: Analysis, pages: list[Page], resolved: dict[str, bytes]) -> str:
    """Everything the reference graph is made of: pages, their references, the entities; a
    fold of one digest per page (`resolved`: each page's `_resolved`, as `assemble` made it)."""
    index = analysis.index
    fold = hashlib.sha256()
    for page in pages:
        f = page.parsed.fields
        row = [
            page.scope,
            index.node_name(page),
            page.path,
            page.title,
            f.usage_mode,
            f.status,
            [r.value for r in f.sl_refs],
        ]
        fold.update(hashlib.sha256(_encode(row) + resolved[page.path]).digest())
    entities = [
        [n, e.kind, e.connection, e.source, e.member]
        for n, e in sorted(analysis.layer.entities.items())
    ]
    fold.update(_encode(entities))
    return fold.hexdigest()


@dataclass(slots=True)
class Previous:
    """The previous artifact, as far as reuse needs it."""

    folder: Path
    graph: str
    signatures: dict[str, str]
    catalog: dict[str, CatalogEntry]
    index_digests: dict[str, str]
    ends: dict[int, int]  # where the member at each offset of the records ends

    @classmethod
    def load(cls, folder: Path) -> Previous | None:
        try:
            signatures = decode(SIGNATURES, (folder / SIGNATURES).read_bytes(), Signatures)
            catalog = decode("catalog.json", (folder / "catalog.json").read_bytes(), Catalog)
            index_digests = decode(
                DOCS_FILE, (folder / "index" / DOCS_FILE).read_bytes(), dict[str, str]
            )
            size = (folder / RECORDS).stat().st_size
        except (OSError, ArtifactError):
            return None  # nothing to reuse: build everything
        # The validated catalog lists every member of the records.
        return cls(
            folder,
            signatures.graph,
            signatures.pages,
            {entry.key: entry for entry in catalog.pages},
            index_digests,
            spans((entry.offset for entry in catalog.pages), size),
        )

    @property
    def source(self) -> Path:
        return self.folder / RECORDS

    def member(self, path: str) -> Span:
        """Where the page's member of the previous records is: a build copies it from
        there, never holding it in memory."""
        start = self.catalog[path].offset
        return start, self.ends[start]


# A member of the previous records, by its start and end.
Span = tuple[int, int]


def read_member(source: Path, span: Span) -> bytes:
    """The record line the member at `span` of `source` holds."""
    with source.open("rb") as handle:
        handle.seek(span[0])
        return unpack(handle.read(span[1] - span[0]), span[0])


@dataclass(slots=True)
class Rows:
    """The records of this build, in artifact order, reused or new."""

    pages: list[Page]
    # Each record's gzip member: new bytes, or a span of `source`, the previous records.
    members: list[bytes | Span] = field(default_factory=list)
    source: Path | None = None
    catalog: list[CatalogEntry] = field(default_factory=list)
    signatures: dict[str, str] = field(default_factory=dict)
    index_digests: dict[str, str] = field(default_factory=dict)
    fresh: dict[str, PageRecord] = field(default_factory=dict)
    reused: int = 0
    positions: dict[str, int] = field(default_factory=dict)
    resolved: dict[str, bytes] = field(default_factory=dict)  # each page's `_resolved`

    def record(self, index: int) -> PageRecord:
        path = self.pages[index].path
        row = self.fresh.get(path)
        if row is not None:
            return row
        # A record not built here is a member of the previous records.
        span = self.members[index]
        assert isinstance(span, tuple) and self.source is not None
        return decode(path, read_member(self.source, span), PageRecord)

    def records(self) -> list[PageRecord]:
        return [self.record(i) for i in range(len(self.pages))]

    def index_document(self, path: str) -> IndexDocument:
        row = self.fresh.get(path)
        return index_document(row if row is not None else self.record(self.positions[path]))


def assemble(
    analysis: Analysis,
    texts: Mapping[str, str],
    content: dict[str, str],
    previous: Previous | None,
) -> Rows:
    """Every page's record member, catalog entry and index digest; from `previous` when the
    page's signature is unchanged."""
    layer = analysis.layer
    values: dict[str, Any] = {}  # many pages render the same few definitions

    def value_of(name: str) -> Any:
        if name not in values:
            values[name] = attribute_value(layer, name)
        return values[name]

    rows = Rows(record_pages(analysis, texts), source=previous.source if previous else None)
    rows.positions = {page.path: i for i, page in enumerate(rows.pages)}
    offset = 0
    for page in rows.pages:
        assessment = analysis.assessments.get(page.path)
        history = analysis.history
        last = history.page_commits.get(page.path) if history else None
        # The layer enters a record only through the values its directives render.
        rendered = [value_of(d.name) for d in page.parsed.directives]
        resolved = rows.resolved[page.path] = _resolved(analysis, page)
        inputs = [
            content[page.path],
            page.path,
            analysis.index.node_name(page),
            rendered,
            assessment.to_json() if assessment else None,
            assessment.drift if assessment else None,
            history.commit_json(last[0]) if history and last else None,
        ]
        signature = hashlib.sha256(_encode(inputs) + resolved).hexdigest()
        rows.signatures[page.path] = signature
        if (
            previous is not None
            and previous.signatures.get(page.path) == signature
            and page.path in previous.catalog
            and page.path in previous.index_digests
        ):
            member: bytes | Span = previous.member(page.path)
            entry = replace(previous.catalog[page.path], offset=offset)
            rows.index_digests[page.path] = previous.index_digests[page.path]
            rows.reused += 1
        else:
            row = page_record(analysis, page, texts[page.path])
            rows.fresh[page.path] = row
            member = pack(encode(row))
            entry = catalog_entry(row, offset)
            rows.index_digests[page.path] = index_document(row).digest
        rows.members.append(member)
        rows.catalog.append(entry)
        offset += member[1] - member[0] if isinstance(member, tuple) else len(member)
    return rows


def signatures_record(rows: Rows, graph: str) -> Signatures:
    return Signatures(graph=graph, pages=rows.signatures)
