"""The semantic layer as the artifact holds it, for agents and people: a filtered, paged list
of entities, and one entity described with the pages that use it."""

from __future__ import annotations

from msgspec import to_builtins

from knowl_build.artifacts.answers import EntityDescription, EntityList, EntityPage, EntityRow
from knowl_build.artifacts.schema import Entity
from knowl_build.core.errors import KnowlError
from knowl_build.reader.paging import page_of
from knowl_build.reader.view import ArtifactView, visible

KINDS = ("source", "measure", "dimension", "column", "metric")
LIST_LIMIT = 50
MAX_QUERY_CHARS = 500


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _row(entity: Entity) -> EntityRow:
    return {
        "entity": entity.name,
        "kind": entity.kind,
        "connection": entity.connection,
        "source": entity.source,
        "member": entity.member,
        "description": _text(entity.definition.get("description")),
        "expression": _text(entity.definition.get("expr")),
        "fingerprint": entity.fingerprint,
    }


def list_entities(
    view: ArtifactView,
    *,
    kind: str | None = None,
    connection: str | None = None,
    query: str | None = None,
    cursor: str | None = None,
    limit: int = LIST_LIMIT,
) -> EntityList:
    """Entities by name, filtered by kind, connection and words of the name or description
    (every word must occur, case-insensitively), one page at a time."""
    if query is not None and len(query) > MAX_QUERY_CHARS:
        raise KnowlError(f"query: at most {MAX_QUERY_CHARS} characters")
    words = (query or "").casefold().split()
    rows = [
        _row(entity)
        for name, entity in sorted(view.entities.items())
        if (kind is None or entity.kind == kind)
        and (connection is None or entity.connection == connection)
        and all(
            word in name.casefold()
            or word in str(entity.definition.get("description") or "").casefold()
            for word in words
        )
    ]
    question = ["list_entities", kind, connection, " ".join(words), limit]
    shown, following = page_of(rows, cursor, limit, view.manifest.build_id, question)
    return {"entities": shown, "total": len(rows), "next_cursor": following}


def describe_entity(view: ArtifactView, name: str, user: str | None = None) -> EntityDescription:
    entity = view.entities.get(name)
    if entity is None:
        # rapidfuzz loads only for a name that is not there (start-up time of the reader).
        from knowl_build.support.hints import did_you_mean

        hint = did_you_mean(name[:MAX_QUERY_CHARS], list(view.entities))
        shown = repr(name[:100])  # control characters escaped, a long name cut
        raise KnowlError(
            f"no semantic entity {shown} in this build" + (f"; {hint}" if hint else "")
        )
    groups: dict[str, list[EntityPage]] = {}
    for page in view.binding(name):
        if not visible(page, user):
            continue
        groups.setdefault(page.usage_mode, []).append(
            {
                "page": page.id,
                "scope": page.scope,
                "path": page.key,
                "title": page.title,
                "summary": page.summary,
                "freshness": page.freshness,
                "drift_flag": page.drift_flag,
            }
        )
    for rows in groups.values():
        rows.sort(key=lambda r: (r["page"], r["scope"], r["path"]))
    order = sorted(groups, key=lambda mode: (mode != "caveat", mode))
    return {
        **_row(entity),
        "definition": entity.definition,
        "file": entity.file,
        "line": entity.line,
        "introduced_in": to_builtins(entity.introduced_in),
        "changed_in": to_builtins(entity.changed_in),
        "pages": {mode: groups[mode] for mode in order},
    }
