"""The context of a question, in one answer: the best pages with a citation of the passage that
matched, the live definitions of the entities they reference (and whether each page's bound
definition drifted), the caveats that ride along, and the superseded pages the hits replace.

What an agent needs to answer "how is revenue calculated and what should I watch out for?"
without a second call; `knowl context` and the MCP tool `get_context` answer with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from knowl_build.artifacts.answers import (
    Citation,
    ContextAnswer,
    ContextEntity,
    ContextPage,
    EntityUse,
    SupersededPage,
)
from knowl_build.artifacts.schema import CatalogEntry, PageRecord, SearchHit
from knowl_build.reader.passages import passage
from knowl_build.reader.queries import Filters, search
from knowl_build.reader.view import ArtifactView, visible


def context(
    view: ArtifactView,
    question: str,
    *,
    user: str | None = None,
    limit: int = 5,
    filters: Filters | None = None,
    peers: Sequence[ArtifactView] = (),
) -> ContextAnswer:
    # Whoosh's analyser loads only when a question is asked (start-up time of the reader).
    from knowl_build.index.fields import query_terms

    answer = search(
        view, question, user=user, limit=limit, filters=filters or Filters(), peers=peers
    )
    terms = set(query_terms(question))
    pages: list[ContextPage] = []
    uses: dict[str, list[EntityUse]] = {}
    hit_ids: set[tuple[str, str]] = set()
    for hit in answer["hits"]:
        if hit["kind"] != "page":
            continue  # the page search answers pages alone
        entry = view.entry_of_hit(hit) if hit["repo"] == view.repo else None
        if entry is None:  # a peer's hit: its repository answers for its own records
            pages.append(_page_of_hit(hit, None, None))
            continue
        hit_ids.add((entry.scope, entry.id))
        record = view.record(entry)
        pages.append(_page_of_hit(hit, entry.key, cite(record, terms)))
        drifted = {d.entity for d in record.drift}
        bound = record.fields.bound_fingerprints
        for name in record.fields.sl_refs:
            uses.setdefault(name, []).append(
                {
                    "page": entry.id,
                    "scope": entry.scope,
                    "usage_mode": entry.usage_mode,
                    "bound_fingerprint": bound.get(name),
                    "drifted": name in drifted,
                }
            )
    return {
        "question": question,
        "user": user,
        "build": view.build,
        "pages": pages,
        "entities": [_entity(view, name, uses[name]) for name in sorted(uses)],
        "caveats": answer["caveats"],
        "superseded": _superseded(view, hit_ids, user),
    }


def _page_of_hit(hit: SearchHit, path: str | None, citation: Citation | None) -> ContextPage:
    return {
        "page": hit["page"],
        "scope": hit["scope"],
        "repo": hit["repo"],
        "title": hit["title"],
        "summary": hit["summary"],
        "usage_mode": hit["usage_mode"],
        "status": hit["status"],
        "freshness": hit["freshness"],
        "drift_flag": hit["drift_flag"],
        "score": hit["score"],
        "path": path,
        "citation": citation,
    }


def cite(record: PageRecord, terms: set[str]) -> Citation:
    """The passage a search hit of the page carries (`passages.passage`: the line with most of
    the question's terms in the best-matching section); the title's line when no line of the
    body does (the match was in the title, summary or tags). Lines count in the page's file,
    frontmatter included."""
    found = passage(record, terms)
    if found is None:
        first = record.body_line if isinstance(record.body_line, int) else 1
        heading = record.headings[0] if record.headings else None
        return {
            "path": record.path,
            "line": heading.line if heading is not None else first,
            "text": record.title,
        }
    return {"path": record.path, "line": found.line, "text": found.text}


def _entity(view: ArtifactView, name: str, used_by: list[EntityUse]) -> ContextEntity:
    entity = view.entities.get(name)
    if entity is None:
        return {
            "entity": name,
            "live": False,
            "kind": None,
            "expression": None,
            "description": None,
            "fingerprint": None,
            "definition": None,
            "used_by": used_by,
        }
    definition = entity.definition
    return {
        "entity": name,
        "live": True,
        "kind": entity.kind,
        "expression": _text(definition.get("expr")),
        "description": _text(definition.get("description")),
        "fingerprint": entity.fingerprint,
        "definition": definition,
        "used_by": used_by,
    }


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _superseded(
    view: ArtifactView, hits: set[tuple[str, str]], user: str | None
) -> list[SupersededPage]:
    """Visible pages whose `superseded_by` names a hit: what the hits replace."""
    hit_ids = {page_id for _, page_id in hits}
    found: list[CatalogEntry] = [
        entry
        for entry in view.pages
        if entry.superseded_by in hit_ids
        and visible(entry, user)
        # the successor named from the replaced page's scope is one of the hits
        and any((scope, entry.superseded_by) in hits for scope in ("global", entry.scope))
    ]
    found.sort(key=lambda e: (e.id, e.scope))
    return [
        {
            "page": entry.id,
            "scope": entry.scope,
            "title": entry.title,
            "summary": entry.summary,
            "superseded_by": entry.superseded_by or "",
        }
        for entry in found
    ]
