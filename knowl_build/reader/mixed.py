"""Entity hits, and mixed hits of pages and entities (`knowl search --kind entity|all`).

Mixed hits merge three rankings by rank (Reciprocal Rank Fusion, as federated search merges
repositories): the first PAGE_RANKS pages (the page search's own order), the entities
(`entity_search`), and the pages binding an entity found (`sl_refs`), by the best rank of the
entity they bind; so a page that uses the measure a query names ranks for the query. Pages and
entities named as the query come first; pages of equal fused score by their page rank. The
pages' ranks count to a depth that is not the limit's, so that the first `n` hits are the
first `n` of any longer answer. Entities are the artifact's own (a peer's are not searched)
and global.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from knowl_build.artifacts.schema import (
    EntityHit,
    MixedSearchAnswer,
    PageRef,
    SearchAnswer,
    SearchHit,
    TriggeredCaveat,
)
from knowl_build.core.errors import UsageError
from knowl_build.index.fields import name_key
from knowl_build.index.query import parse
from knowl_build.reader import queries
from knowl_build.reader.queries import Filters, caveats, page_hit, scopes_of
from knowl_build.reader.view import CAVEAT, GLOBAL, ArtifactView

if TYPE_CHECKING:
    from knowl_build.index.query import Query
    from knowl_build.reader.entity_search import Ranked

from knowl_build.reader.entity_search import description_of, label_of

KINDS = ("page", "entity", "all")
RRF_K = 60
# The pages whose rank counts in the merge (site/static/search.js has the same number).
PAGE_RANKS = 20
# Pages an entity hit lists as binding it (`pages`), by id.
MAX_BOUND_PAGES = 20


def entity_hit(view: ArtifactView, doc: Ranked, score: float, user: str | None) -> EntityHit:
    scopes = scopes_of(user)
    ids, in_scope = view.catalog.heads.ids, view.catalog.heads.scopes
    bound = view.bound(doc.name)
    pages = sorted((ids[i], in_scope[i]) for i in bound if in_scope[i] in scopes)
    entity = doc.entity
    expr = entity.definition.get("expr")
    return {
        "kind": "entity",
        "entity": doc.name,
        "entity_kind": entity.kind,
        "repo": view.repo,
        "connection": entity.connection,
        "source": entity.source,
        "member": entity.member,
        "label": label_of(entity) or None,
        "description": description_of(entity) or None,
        "expression": None if expr is None else str(expr),
        "score": score,
        "matched_on": ["lexical"],
        "pages": [PageRef(page=p, scope=s) for p, s in dict.fromkeys(pages)][:MAX_BOUND_PAGES],
    }


def named_pages(view: ArtifactView, parsed: Query, user: str | None) -> frozenset[tuple[str, str]]:
    """The (scope, id) of the pages named as the query's words, which a page search ranks
    first (a user page with a global page's id stands for it)."""
    scopes = scopes_of(user)
    name = name_key(" ".join(parsed.named))
    found = set()
    for doc in view.searcher.named(name, scopes):
        page = view.by_key.get(view.searcher.key(doc))
        if page is not None:
            shadowed = view.page(GLOBAL, page.id) if page.scope != GLOBAL else None
            found.add(((shadowed or page).scope, (shadowed or page).id))
    return frozenset(found)


def search(
    view: ArtifactView,
    query: str,
    *,
    kind: str,
    user: str | None,
    limit: int,
    filters: Filters,
    peers: Sequence[ArtifactView],
) -> SearchAnswer | MixedSearchAnswer:
    """`queries.search` for `kind` page (pages alone, as it always answered), entity (the
    entities alone) or all (both, merged as the module's docstring says)."""
    if kind not in KINDS:
        raise UsageError(f"kind {kind[:40]!r}: not one of {', '.join(KINDS)}")
    if kind == "page":
        return queries.search(view, query, user=user, limit=limit, filters=filters, peers=peers)
    parsed = parse(query)  # a UsageError says why a query cannot be searched
    filters = queries.with_filters(filters, parsed)
    if kind == "entity":
        return entity_answer(view, query, parsed, user, filters, limit)
    if not view.entities or filtered(filters):  # no entity can be a hit: the page search
        return queries.search(view, query, user=user, limit=limit, filters=filters, peers=peers)
    # Pages past PAGE_RANKS count only by the entities they bind, or by their page rank
    # among equals: those past `limit` are never among the first `limit` hits.
    depth = max(limit, PAGE_RANKS)
    answer = queries.search(view, query, user=user, limit=depth, filters=filters, peers=peers)
    return mix(view, answer, parsed, user, filters, limit, named_pages(view, parsed, user))


def filtered(filters: Filters) -> bool:
    """Whether a page filter is set that entities cannot pass: a category, a usage mode or
    tags (entities have none; `status` is a page's alone and leaves entities in)."""
    return filters.category is not None or filters.usage_mode is not None or bool(filters.tags)


def _bound_pages(
    view: ArtifactView,
    ranked: list[tuple[Ranked, float, bool]],
    user: str | None,
    filters: Filters,
) -> list[int]:
    """The pages binding an entity found (their catalog positions), visible to the caller and
    of the status asked for (`mix` is called only when no other filter is set), by the best
    rank of an entity they bind, then id and scope; caveats aside (they ride along with the
    entities they are about, as with the pages). A user page with a global page's id stands
    for the global page, as in a page search. Only the light records are read: an entry is
    decoded when it makes the answer."""
    scopes = scopes_of(user)
    ids, in_scope = view.catalog.heads.ids, view.catalog.heads.scopes
    statuses, usage_modes = view.catalog.statuses, view.catalog.usage_modes
    best: dict[int, int] = {}  # position -> the best rank of an entity it binds
    for rank, (doc, _score, _named) in enumerate(ranked):  # best rank first: first seen wins
        for i in view.bound(doc.name):
            scope = in_scope[i]
            if scope not in scopes or usage_modes[i] == CAVEAT:
                continue  # a caveat about an entity found rides along with the answer instead
            if scope != GLOBAL:
                i = next(iter(view.catalog.by_scope_id.get((GLOBAL, ids[i]), ())), i)
            if i not in best and filters.admit_status(statuses[i]):
                best[i] = rank
    return sorted(best, key=lambda i: (best[i], ids[i], in_scope[i]))


def mix(
    view: ArtifactView,
    answer: SearchAnswer,
    parsed: Query,
    user: str | None,
    filters: Filters,
    limit: int,
    named_pages: frozenset[tuple[str, str]],
) -> MixedSearchAnswer:
    """The page answer `answer` (hits to max(limit, PAGE_RANKS)) with entity hits merged in
    (see the module's docstring): named pages and entities first, then by the sum of
    1 / (60 + rank) over the rankings an item is in (0-based ranks, pages to PAGE_RANKS),
    then pages by their page rank (found through an entity alone: after every page of the
    answer), then pages before entities, then by repository, id (or name) and scope."""
    ranked = [] if filtered(filters) else view.entity_index.rank(parsed, view.boosts)
    pages = answer["hits"]
    mixed: MixedSearchAnswer = {
        "query": answer["query"],
        "user": answer["user"],
        "build": answer["build"],
        "lexical_only": answer["lexical_only"],
        "hits": [],
        "caveats": answer["caveats"],
    }
    if not ranked:
        mixed["hits"] = list(pages[:limit])
        local = [h for h in mixed["hits"] if h["kind"] == "page" and h["repo"] == view.repo]
        mixed["caveats"] = caveats(view, local, user)
        if not mixed["hits"] and "suggestions" in answer:
            mixed["suggestions"] = answer["suggestions"]
        return mixed
    # (not named, -fused score, page rank, pages before entities, repository, id or name,
    # scope, path). An entity's hit is built only when it makes the answer (it lists the
    # pages binding it).
    unranked = len(pages)  # a page found through an entity alone: after the answer's pages
    order: list[tuple[tuple[bool, float, int, bool, str, str, str, str], Item]] = []
    for (repo, path), (fused, named, item, rank, page_id, scope) in _pages(
        view, pages, ranked, user, filters, named_pages
    ).items():
        if isinstance(item, dict):
            item["score"] = fused
        order.append(((not named, -fused, rank, False, repo, page_id, scope, path), item))
    for number, (doc, _score, named) in enumerate(ranked):
        fused = 1.0 / (RRF_K + number)
        order.append(((not named, -fused, unranked, True, view.repo, doc.name, "", ""), doc))
    best = heapq.nsmallest(limit, order, key=lambda kh: kh[0])  # as sorted(...)[:limit]
    hits: list[SearchHit | EntityHit] = [_made(view, key[1], item, user) for key, item in best]
    mixed["hits"] = hits
    found_pages = [h for h in hits if h["kind"] == "page" and h["repo"] == view.repo]
    entities = [h["entity"] for h in hits if h["kind"] == "entity"]
    mixed["caveats"] = caveats(view, found_pages, user, entities)
    return mixed


Item: TypeAlias = (
    "SearchHit | Ranked | int"  # a page's hit, an entity, a page found through an entity alone
)
Found = tuple[float, bool, SearchHit | int, int, str, str]  # fused, named, item, rank, id, scope


def _pages(
    view: ArtifactView,
    pages: list[SearchHit],
    ranked: list[tuple[Ranked, float, bool]],
    user: str | None,
    filters: Filters,
    named_pages: frozenset[tuple[str, str]],
) -> dict[tuple[str, str], Found]:
    """The pages of the merge by repository and path (pages may share an id): those of the
    page search, by their rank (to PAGE_RANKS), and those binding an entity found, by the
    best rank of the entities they bind. A page found through its entity alone is its
    catalog position until it makes the answer."""
    found: dict[tuple[str, str], Found] = {}
    for number, hit in enumerate(pages):
        entry = view.entry_of_hit(hit) if hit["repo"] == view.repo else None
        key = (hit["repo"], f"#{number}" if entry is None else entry.key)  # a peer's: no path
        named = entry is not None and (hit["scope"], hit["page"]) in named_pages
        fused = 1.0 / (RRF_K + number) if number < PAGE_RANKS else 0.0
        found[key] = (fused, named, hit, number, hit["page"], hit["scope"])
    heads = view.catalog.heads
    for number, i in enumerate(_bound_pages(view, ranked, user, filters)):
        key = (view.repo, heads.keys[i])
        default: Found = (0.0, False, i, len(pages), heads.ids[i], heads.scopes[i])
        score, named, item, rank, page_id, scope = found.get(key, default)
        if isinstance(item, dict) and "entity" not in item["matched_on"]:
            item["matched_on"] = [*item["matched_on"], "entity"]
        found[key] = (score + 1.0 / (RRF_K + number), named, item, rank, page_id, scope)
    return found


def _made(
    view: ArtifactView, key: float, item: SearchHit | Ranked | int, user: str | None
) -> SearchHit | EntityHit:
    """The hit of an item of `mix`'s order (`key`: its negated fused score)."""
    if isinstance(item, dict):
        return item
    if isinstance(item, int):  # a page found through its entity alone: no text score
        hit = page_hit(view, view.catalog.entry(item), -key, user)
        hit["matched_on"] = ["entity"]
        return hit
    return entity_hit(view, item, -key, user)


def entity_answer(
    view: ArtifactView,
    query: str,
    parsed: Query,
    user: str | None,
    filters: Filters,
    limit: int,
) -> MixedSearchAnswer:
    """`--kind entity`: the entities alone, best first (their own scores), and the caveats
    about them."""
    ranked = [] if filtered(filters) else view.entity_index.rank(parsed, view.boosts)
    hits: list[SearchHit | EntityHit] = [
        entity_hit(view, doc, score, user) for doc, score, _named in ranked[: max(limit, 0)]
    ]
    names = [doc.name for doc, _score, _named in ranked[: max(limit, 0)]]
    found: list[TriggeredCaveat] = caveats(view, [], user, names)
    return {
        "query": query,
        "user": user,
        "build": view.build,
        "lexical_only": True,
        "hits": hits,
        "caveats": found,
    }
