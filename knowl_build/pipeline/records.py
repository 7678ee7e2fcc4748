"""What the artifact says: page and entity records, the reference graph, index documents.

Everything here is plain data from an Analysis; nothing reads files or runs git.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType, convert

from knowl_build.artifacts.schema import (
    CatalogEntry,
    CommitInfo,
    Conflict,
    Drift,
    Entities,
    Entity,
    Freshness,
    Heading,
    LinkRecord,
    PageFields,
    PageRecord,
)
from knowl_build.core.model import MARKDOWN, Page
from knowl_build.history.records import History
from knowl_build.index.fields import NAMES_FIELD, name_key
from knowl_build.index.writer import IndexDocument
from knowl_build.pipeline.stages.values import Analysis
from knowl_build.secrets.scanner import redact
from knowl_build.semantic.layer import SemanticLayer
from knowl_build.semantic.render import render_body

if TYPE_CHECKING:
    import networkx as nx


def _fields(page: Page) -> PageFields:
    f = page.parsed.fields
    return PageFields(
        summary=f.summary,
        tags=list(f.tags),
        sl_refs=[r.value for r in f.sl_refs],
        refs=[r.value for r in f.refs],
        usage_mode=f.usage_mode,
        category=f.category,
        status=f.status,
        superseded_by=f.superseded_by.value if f.superseded_by else None,
        freshness=f.freshness,
        confidence=f.confidence,
        source=f.source,
        source_commit=f.source_commit,
        affected_paths=[a.value for a in f.affected_paths],
        conflict=(
            Conflict(
                key=f.conflict.key,
                normalized_key=f.conflict.normalized_key,
                scope=dict(f.conflict.scope),
                exclusive=f.conflict.exclusive,
            )
            if f.conflict
            else None
        ),
        visibility=f.visibility,
        reasoning=f.reasoning,
        alternatives=list(f.alternatives),
        steps=list(f.steps),
        provenance=f.provenance,
        last_validated_at=f.last_validated_at,
        bound_fingerprints={b.entity: b.fingerprint for b in f.bound_fingerprints},
        frozen=f.frozen,
    )


def page_record(analysis: Analysis, page: Page, text: str) -> PageRecord:
    """The artifact's record of one page (a line of pages.jsonl.gz)."""
    raw_body = text[page.parsed.body_offset :]
    assessment = analysis.assessments.get(page.path)
    resolved = [_first_path(found) for _, _, found in analysis.index.targets(page)]
    links = [
        LinkRecord(
            target=r.value,
            kind="ref",
            heading=None,
            line=r.span.line,
            column=r.span.column,
            to=resolved[i],
        )
        for i, r in enumerate(page.parsed.fields.refs)
    ]
    for link in page.parsed.links:
        markdown = link.form == MARKDOWN
        links.append(
            LinkRecord(
                target=link.target,
                kind="embed" if link.embed else "link",
                heading=link.heading,
                line=link.span.line,
                column=link.span.column,
                to=resolved[len(links)],
                form=MARKDOWN if markdown else UNSET,
                end_line=link.span.end_line if markdown else UNSET,
                end_column=link.span.end_column if markdown else UNSET,
                text=link.text if markdown else UNSET,
            )
        )
    node = analysis.index.node_name(page)
    return PageRecord(
        id=page.id,
        scope=page.scope,
        owner=page.owner,
        path=page.path,
        title=page.title,
        frontmatter=page.parsed.frontmatter,
        fields=_fields(page),
        body=render_body(raw_body, analysis.layer),
        raw_body=raw_body,
        headings=[
            Heading(level=h.level, text=h.text, line=h.line, anchor=h.anchor or UNSET)
            for h in page.parsed.headings
        ],
        links=links,
        freshness=convert(
            assessment.to_json() if assessment else {"value": "fresh", "reasons": []}, Freshness
        ),
        drift=convert(assessment.drift if assessment else [], list[Drift]),
        last_commit=_last_commit(analysis.history, page.path),
        node=UNSET if node == page.id else node,
        body_line=text.count("\n", 0, page.parsed.body_offset) + 1,
    )


def _first_path(found: list[Page]) -> str | UnsetType:
    return found[0].path if found else UNSET


def record_pages(analysis: Analysis, texts: Mapping[str, str]) -> list[Page]:
    """The pages that get a record, in artifact order: scope, then id, then path."""
    pages = [p for p in analysis.pages if p.parsed.text_ok and p.path in texts]
    pages.sort(key=lambda p: (p.scope, p.id, p.path))
    return pages


def _commit(history: History | None, ref: str | None) -> CommitInfo | None:
    found = history.commit_json(ref) if history is not None else None
    return None if found is None else convert(found, CommitInfo)


def _last_commit(history: History | None, path: str) -> CommitInfo | None:
    if history is None or not history.page_commits.get(path):
        return None
    return _commit(history, history.page_commits[path][0])


def entity_records(analysis: Analysis) -> Entities:
    history = analysis.history
    rows = []
    for name in sorted(analysis.layer.entities):
        entity = analysis.layer.entities[name]
        record = history.entities.get(name) if history else None
        rows.append(
            Entity(
                name=name,
                kind=entity.kind,
                connection=entity.connection,
                source=entity.source,
                member=entity.member,
                definition=entity.definition,
                # A semantic file's name is no identity here, only where to look: redacted.
                file=redact(entity.path),
                line=entity.line,
                fingerprint=entity.fingerprint,
                introduced_in=_commit(history, record.introduced_in) if record else None,
                changed_in=_commit(history, record.changed_in) if record else None,
            )
        )
    return Entities(entities=rows)


def reference_graph(analysis: Analysis) -> nx.DiGraph:
    # networkx loads only when the graph is built anew (start-up time of an incremental
    # build, which mostly copies it).
    from knowl_build.artifacts.graph import entity_node, make_graph, page_node

    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    layer = analysis.layer
    for name, entity in layer.entities.items():
        nodes[entity_node(name)] = {"type": "entity", "kind": entity.kind, "label": name}
        if entity.member is not None:
            source = f"{entity.connection}.{entity.source}"
            if source in layer.entities:
                edges[(entity_node(name), entity_node(source))].add("member_of")
    index = analysis.index
    for page in analysis.pages:
        if not page.parsed.text_ok:
            continue
        me = page_node(page.scope, index.node_name(page))
        nodes[me] = {
            "type": "page",
            "scope": page.scope,
            "page_id": page.id,
            "path": page.path,
            "label": page.title,
            "usage_mode": page.parsed.fields.usage_mode,
            "status": page.parsed.fields.status,
        }
        for _, kind, found in index.targets(page):
            for other in found:
                if other.parsed.text_ok and other is not page:
                    edge = "link" if kind == "embed" else kind
                    edges[(me, page_node(other.scope, index.node_name(other)))].add(edge)
        for ref in page.parsed.fields.sl_refs:
            if ref.value in layer.entities:
                edges[(me, entity_node(ref.value))].add("sl_ref")
    return make_graph(nodes, edges)


def page_document(page: Page, text: str, layer: SemanticLayer) -> IndexDocument:
    """`index_document` of the page's record, from the page alone: what the index holds
    needs nothing the rules find, so a build can write it while they run."""
    f = page.parsed.fields
    return IndexDocument(
        page.path,
        {
            "page_id": page.id,
            "scope": page.scope,
            "status": f.status,
            "category": f.category or "",
            "usage_mode": f.usage_mode,
            "visibility": f.visibility,
            "summary": f.summary,
            "tags": " ".join(f.tags),
            "body": render_body(text[page.parsed.body_offset :], layer),
            **_name_fields(page.title, page.path, page.parsed.frontmatter),
            "headings": "\n".join(h.text for h in page.parsed.headings),
        },
    )


def index_document(row: PageRecord) -> IndexDocument:
    f = row.fields
    return IndexDocument(
        row.path,
        {
            "page_id": row.id,
            "scope": row.scope,
            "status": f.status,
            "category": f.category or "",
            "usage_mode": f.usage_mode,
            "visibility": f.visibility,
            "summary": f.summary,
            "tags": " ".join(f.tags),
            "body": row.body,
            **_name_fields(row.title, row.path, row.frontmatter),
            "headings": "\n".join(h.text for h in row.headings),
        },
    )


def _name_fields(title: str, path: str, frontmatter: Mapping[str, Any]) -> dict[str, str]:
    """The index's fields of a page's names: its title, its file name and its `aliases`,
    each once (by `name_key`), as the ranked `title` field and as whole keys (`names`)."""
    aliases = frontmatter.get("aliases")
    if isinstance(aliases, str):
        aliases = [aliases]
    stem = path.rpartition("/")[2].rpartition(".")[0] or path.rpartition("/")[2]
    names: dict[str, str] = {}
    for name in [title, stem, *(aliases if isinstance(aliases, list) else [])]:
        if isinstance(name, str) and name_key(name):
            names.setdefault(name_key(name), name.strip())
    return {"title": "\n".join(names.values()), NAMES_FIELD: ",".join(names)}


def catalog_entry(row: PageRecord, offset: int) -> CatalogEntry:
    f = row.fields
    return CatalogEntry(
        key=row.path,
        id=row.id,
        scope=row.scope,
        owner=row.owner,
        title=row.title,
        summary=f.summary,
        tags=f.tags,
        sl_refs=f.sl_refs,
        usage_mode=f.usage_mode,
        category=f.category,
        status=f.status,
        superseded_by=f.superseded_by,
        visibility=f.visibility,
        freshness=row.freshness.value,
        drift_flag=bool(row.drift),
        offset=offset,
        node=row.node,
    )
