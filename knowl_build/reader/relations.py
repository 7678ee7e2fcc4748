"""What a page's neighbours say of it: the pages linking to it and the caveats bound to it.
`knowl show` answers with them, and the site's page view is built from the same answer (it
adds its links and the sentences around each mention), so the two never disagree on which
pages they list or in what order."""

from __future__ import annotations

from knowl_build.artifacts.schema import Backlink, BoundCaveat, CatalogEntry
from knowl_build.reader.view import ArtifactView, page_node, visible


def backlinks(view: ArtifactView, page: CatalogEntry, user: str | None) -> list[Backlink]:
    """Each visible page with an edge to `page` (a ref, a link, a `superseded_by`), one row
    per kind, by id, scope, path and kind."""
    found: list[Backlink] = []
    for source, kinds in view.graph.in_edges.get(page_node(page), []):
        data = view.graph.page_at(source)
        other = None if data is None else view.entry_of(data)
        if other is None or not visible(other, user):
            continue
        found += [
            {"page": other.id, "scope": other.scope, "kind": k, "path": other.key} for k in kinds
        ]
    found.sort(key=lambda b: (b["page"], b["scope"], b["path"], b["kind"]))
    return found


def bound_caveats(
    view: ArtifactView, page: CatalogEntry, user: str | None
) -> list[tuple[CatalogEntry, BoundCaveat]]:
    """The visible active caveats sharing an entity with `page`, each with its row of the
    answer: those about most of its entities first, then by id, scope and path."""
    mine = set(page.sl_refs)
    candidates: dict[str, CatalogEntry] = {}
    for entity in sorted(mine):
        for caveat in view.caveats_by_entity.get(entity, ()):
            candidates.setdefault(caveat.key, caveat)
    bound: list[tuple[CatalogEntry, BoundCaveat]] = []
    for caveat in candidates.values():
        if caveat is page or not visible(caveat, user):
            continue
        row: BoundCaveat = {
            "page": caveat.id,
            "scope": caveat.scope,
            "summary": caveat.summary,
            "entities": sorted(mine.intersection(caveat.sl_refs)),
        }
        bound.append((caveat, row))
    bound.sort(key=lambda cr: (-len(cr[1]["entities"]), cr[1]["page"], cr[1]["scope"], cr[0].key))
    return bound
