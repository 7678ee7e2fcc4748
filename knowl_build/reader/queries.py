"""The reader's answers: search (SPEC 6.3, 6.6), show (SPEC 6.4) and stale, with the scope
rules of SPEC 6.2 (traverse is in reader.traversal). Every answer is plain data in the JSON
shapes of SPEC 10."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from msgspec import to_builtins

from knowl_build.artifacts.schema import (
    CatalogEntry,
    SearchAnswer,
    SearchHit,
    ShowAnswer,
    StaleAnswer,
    StaleRow,
    TriggeredCaveat,
)
from knowl_build.reader import relations
from knowl_build.reader.view import GLOBAL, ArtifactView, visible

if TYPE_CHECKING:
    from knowl_build.index.query import Query

RRF_K = 60


@dataclass(frozen=True, slots=True)
class Filters:
    status: str = "active"  # one status, or "all"
    category: str | None = None
    usage_mode: str | None = None
    tags: tuple[str, ...] = ()

    def admit(self, page: CatalogEntry) -> bool:
        if not self.admit_status(page.status):
            return False
        if self.category is not None and page.category != self.category:
            return False
        if self.usage_mode is not None and page.usage_mode != self.usage_mode:
            return False
        return not self.tags or any(tag in page.tags for tag in self.tags)

    def admit_status(self, status: str) -> bool:
        return self.status == "all" or status == self.status


def page_hit(view: ArtifactView, page: CatalogEntry, score: float, user: str | None) -> SearchHit:
    hit: SearchHit = {
        "kind": "page",
        "page": page.id,
        "scope": page.scope,
        "repo": view.repo,
        "title": page.title,
        "summary": page.summary,
        "usage_mode": page.usage_mode,
        "category": page.category,
        "status": page.status,
        "score": score,
        "matched_on": ["lexical"],
        "sl_refs": list(page.sl_refs),
        "freshness": page.freshness,
        "drift_flag": page.drift_flag,
        "annotations": view.annotations(page, user),
    }
    return view.made_hit(hit, page)


class _Arm:
    """One ranking of pages: the lexical index, or the vectors."""

    def __init__(
        self,
        top: Callable[[int | None], list[tuple[str, float]]],
        of: Callable[[str], float | None],
        size: int,
        named: Callable[[str], bool] = lambda key: False,
    ) -> None:
        self.top = top  # limit -> [(key, score)], best first
        self.of = of  # key -> score or None
        self.size = size
        self.named = named  # key -> named as the query (ranks before unnamed pages)


def scopes_of(user: str | None, peer: bool = False) -> frozenset[str]:
    """The scopes a caller sees (SPEC 6.2): global pages, and the user's own; a peer serves
    only global pages. Ranking statistics come from these scopes alone."""
    return frozenset({GLOBAL} if peer or user is None else {GLOBAL, f"user:{user}"})


def _lexical(view: ArtifactView, terms: list[str], scopes: frozenset[str], name: str = "") -> _Arm:
    scored = view.searcher.query(terms, view.boosts, scopes, name)
    return _Arm(
        lambda n: [(h.key, h.score) for h in scored.top(n)],
        scored.of,
        len(scored),
        scored.is_named,
    )


def _scope_of(view: ArtifactView, key: str) -> str | None:
    page = view.by_key.get(key)
    return None if page is None else str(page.scope)


def _by_order(view: ArtifactView, scores: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Pages (key, score) of a ranking that names none, in `order` (pages the catalog lacks
    left out: no answer can show them)."""
    found = [(view.by_key.get(key), score) for key, score in scores]
    ranked = sorted((order(page, score, False), score) for page, score in found if page)
    return [(rank[4], score) for rank, score in ranked]


def _vectors(view: ArtifactView, similarities: dict[str, float]) -> _Arm:
    # Vector hits count only when the cosine is above 0 (SPEC 6.5).
    ranked = _by_order(view, ((k, s) for k, s in similarities.items() if s > 0))

    def of(key: str) -> float | None:
        score = similarities.get(key)
        return score if score is not None and score > 0 else None

    return _Arm(lambda n: ranked if n is None else ranked[:n], of, len(ranked))


# How a ranking orders pages: named as the query first, then score, then page id, scope and
# key (the page's path). Index.ranking's `Scored.top` cuts by this order and every answer is
# in it, so that the top `n` of a search is the first `n` of any longer one.
Rank = tuple[bool, float, str, str, str]


def order(page: CatalogEntry, score: float, named: bool) -> Rank:
    return (not named, -score, page.id, page.scope, page.key)


def _merge(
    view: ArtifactView,
    arm: _Arm,
    user: str | None,
    filters: Filters,
    limit: int,
    peer: bool = False,
) -> list[tuple[float, CatalogEntry]]:
    """An arm's pages, merged by the strict-additive rule, filtered, best first (`order`).

    A user page with a global page's id is never a hit of its own: the global page is ranked
    by its own score, or by the user page's when the global page itself did not match (then
    in the user page's place). A peer serves only its global pages with
    `visibility: workspace`. Only the pages ranked no later than the last page read from the
    arm are certain (another may come in a user page's place); more are read until `limit`
    are."""
    scopes = scopes_of(user, peer)
    want = limit * 2 + 8
    while True:
        raw = arm.top(want)
        last = _last(view, arm, raw)
        best: dict[str, tuple[Rank, float, CatalogEntry]] = {}
        for key, score in raw:
            page = view.by_key.get(key)
            if page is None or page.scope not in scopes:
                continue
            named = arm.named(key)
            ranked = order(page, score, named)
            shown = view.page(GLOBAL, page.id) if page.scope != GLOBAL else None
            if shown is None:
                shown = page
            elif (own := arm.of(shown.key)) is not None:
                score, named = own, arm.named(shown.key)
                ranked = order(shown, score, named)
            if peer and shown.visibility != "workspace":
                continue
            if shown.key in best or not filters.admit(shown):
                continue
            best[shown.key] = (ranked, score, shown)
        complete = len(raw) < want or want >= arm.size
        hits = [
            (score, page)
            for ranked, score, page in sorted(best.values(), key=lambda rsp: rsp[0])
            if complete or last is None or ranked <= last
        ]
        if len(hits) >= limit or complete:
            return hits[:limit]
        want *= 4


def _last(view: ArtifactView, arm: _Arm, raw: list[tuple[str, float]]) -> Rank | None:
    """Where the pages read from an arm end, in `order` (None: nothing read, or a page the
    catalog lacks)."""
    page = view.by_key.get(raw[-1][0]) if raw else None
    return None if page is None else order(page, raw[-1][1], arm.named(page.key))


def rank(
    view: ArtifactView,
    terms: list[str],
    user: str | None,
    filters: Filters,
    limit: int,
    peer: bool = False,
    name: str = "",
) -> list[SearchHit]:
    """One artifact's lexical hits (see _merge); pages named `name` (a `name_key`) first."""
    if not terms or limit <= 0:
        return []
    arm = _lexical(view, terms, scopes_of(user, peer), name)
    merged = _merge(view, arm, user, filters, limit, peer)
    return [page_hit(view, page, score, None if peer else user) for score, page in merged]


def fuse_arms(
    view: ArtifactView,
    lexical: list[tuple[float, CatalogEntry]],
    vector: list[tuple[float, CatalogEntry]],
    user: str | None,
    limit: int,
) -> list[SearchHit]:
    """Reciprocal Rank Fusion of the lexical and vector rankings (0-based ranks)."""
    scores: dict[str, float] = {}
    pages: dict[str, CatalogEntry] = {}
    arms: dict[str, list[str]] = {}
    for arm, ranking in (("lexical", lexical), ("vector", vector)):
        for rank_no, (_score, page) in enumerate(ranking):
            scores[page.key] = scores.get(page.key, 0.0) + 1.0 / (RRF_K + rank_no)
            pages[page.key] = page
            arms.setdefault(page.key, []).append(arm)
    ordered = sorted(scores, key=lambda k: (-scores[k], pages[k].id, pages[k].scope, k))
    hits = []
    for key in ordered[:limit]:
        hit = page_hit(view, pages[key], scores[key], user)
        hit["matched_on"] = arms[key]
        hits.append(hit)
    return hits


def caveats(
    view: ArtifactView, hits: list[SearchHit], user: str | None, entities: Iterable[str] = ()
) -> list[TriggeredCaveat]:
    """Visible active caveat pages sharing an entity with a hit, or about an entity found
    (`entities`). `triggered_by` names the shared entities, sorted, as Canonic's retrieval
    does; the caveats about most of them come first, then by id (Canonic orders by id alone)."""
    hit_keys = {(h["scope"], h["page"]) for h in hits}
    catalog = view.catalog
    ids, scopes = catalog.heads.ids, catalog.heads.scopes
    seen = scopes_of(user)
    triggers: dict[int, set[str]] = {}  # by position: only the caveats kept are decoded
    for entity in sorted({e for hit in hits for e in hit["sl_refs"]}.union(entities)):
        for i in catalog.caveats_by_entity.get(entity, ()):
            if scopes[i] not in seen or (scopes[i], ids[i]) in hit_keys:
                continue
            triggers.setdefault(i, set()).add(entity)
    kept = heapq.nsmallest(
        view.max_caveats,
        triggers,
        key=lambda i: (-len(triggers[i]), ids[i], scopes[i]),
    )
    return [
        {
            "page": ids[i],
            "scope": scopes[i],
            "summary": catalog.entry(i).summary,
            "triggered_by": sorted(triggers[i]),
        }
        for i in kept
    ]


def search(
    view: ArtifactView,
    query: str,
    *,
    user: str | None = None,
    limit: int = 5,
    filters: Filters = Filters(),
    peers: Sequence[ArtifactView] = (),
) -> SearchAnswer:
    # Whoosh loads only when a query runs (start-up time of `knowl show`).
    from knowl_build.index import query as syntax
    from knowl_build.index.fields import name_key, search_terms

    terms = search_terms(query)
    parsed = syntax.parse(query)  # a UsageError says why a query cannot be searched
    if parsed.filters or not parsed.plain:
        return _syntax_search(view, query, parsed, user, filters, limit, peers)
    name = name_key(query)
    similarities = view.similarities(query) if terms else None
    if similarities is None:
        hits = rank(view, terms, user, filters, limit, name=name)
    else:
        depth = max(limit * 4, 20)  # enough of each ranking for the fused top `limit`
        scopes = scopes_of(user)
        lexical = _merge(view, _lexical(view, terms, scopes, name), user, filters, depth)
        visible = {k: s for k, s in similarities.items() if _scope_of(view, k) in scopes}
        vector = _merge(view, _vectors(view, visible), user, filters, depth)
        hits = fuse_arms(view, lexical, vector, user, limit)
    if peers:
        lists = [hits] + [
            rank(peer, terms, user, filters, limit, peer=True, name=name) for peer in peers
        ]
        hits = fuse(lists, limit)
    return _answer(view, query, parsed, user, hits, similarities is None, bool(peers))


def fuse(lists: Iterable[list[SearchHit]], limit: int) -> list[SearchHit]:
    """Reciprocal Rank Fusion, sum(1 / (60 + rank)) with 0-based ranks; ties by repo, then id.
    Rankings are merged by rank, never by raw scores.

    Each hit is kept itself, its score replaced (not copied): the view that made it knows
    which entry it was made of (`ArtifactView.entry_of_hit`), which its scope and id do not
    tell where pages share an id. Such pages are two hits of one ranking, told apart by
    their order in it."""
    fused: dict[tuple[str, str, str, int], tuple[float, SearchHit]] = {}
    for ranking in lists:
        seen: dict[tuple[str, str, str], int] = {}
        for rank_no, hit in enumerate(ranking):
            page = (hit["repo"], hit["scope"], hit["page"])
            key = (*page, seen.get(page, 0))
            seen[page] = key[3] + 1
            score, first = fused.get(key, (0.0, hit))
            fused[key] = (score + 1.0 / (RRF_K + rank_no), first)
    ordered = sorted(fused.items(), key=lambda ksh: (-ksh[1][0], *_repo_id_scope(ksh[0])))
    hits = []
    for _key, (score, hit) in ordered[:limit]:
        hit["score"] = score
        hits.append(hit)
    return hits


def _repo_id_scope(key: tuple[str, str, str, int]) -> tuple[str, str, str, int]:
    repo, scope, page, nth = key
    return repo, page, scope, nth


def show(view: ArtifactView, ref: str, user: str | None = None) -> ShowAnswer:
    page = view.resolve(ref, user)
    record = view.record(page)
    fields = record.fields
    return {
        "page_id": page.id,
        "scope": page.scope,
        "title": record.title,
        "summary": fields.summary,
        "body": record.body,
        "tags": list(fields.tags),
        "sl_refs": list(fields.sl_refs),
        "refs": list(fields.refs),
        "usage_mode": fields.usage_mode,
        "category": fields.category,
        "status": fields.status,
        "superseded_by": fields.superseded_by,
        "meta": {
            "provenance": fields.provenance,
            "last_validated_at": fields.last_validated_at,
            "drift_flag": bool(record.drift),
            "frozen": fields.frozen,
        },
        "freshness": to_builtins(record.freshness),
        "drift": to_builtins(record.drift),
        "annotations": view.annotations(page, user),
        "backlinks": relations.backlinks(view, page, user),
        "caveats": [row for _caveat, row in relations.bound_caveats(view, page, user)],
        "path": record.path,
        "repo": view.repo,
    }


def stale(view: ArtifactView, user: str | None = None) -> StaleAnswer:
    """The visible pages that were not fresh at build time, with every reason."""
    rows: list[StaleRow] = []
    for page in view.pages:
        if page.freshness == "fresh" or not visible(page, user):
            continue
        record = view.record(page)
        rows.append(
            {
                "page": page.id,
                "scope": page.scope,
                "path": page.key,
                "freshness": page.freshness,
                "reasons": [to_builtins(r) for r in record.freshness.reasons],
            }
        )
    rows.sort(key=lambda r: (r["scope"], r["page"], r["path"]))
    return {"pages": rows}


# --- the query syntax (index.query): prefixes, phrases, exclusions, filters, did you mean -----


def with_filters(filters: Filters, parsed: Query) -> Filters:
    """The options' filters, with the query's in their place (`tag:` adds a tag)."""
    found = {
        "status": filters.status,
        "category": filters.category,
        "usage_mode": filters.usage_mode,
    }
    tags = list(filters.tags)
    for name, value in parsed.filters:
        if name == "tags":
            tags.append(value)
        else:
            found[name] = value
    return Filters(
        str(found["status"]), found["category"], found["usage_mode"], tuple(dict.fromkeys(tags))
    )


def _syntax_arm(
    view: ArtifactView, parsed: Query, scopes: frozenset[str]
) -> tuple[_Arm, Callable[[str], bool]]:
    """The lexical ranking of a query with syntax, and which other pages (the vectors') it
    admits: none without a phrase of the query, none holding an excluded word."""
    # Imported here: start-up time (a query without syntax never loads the parser).
    from knowl_build.index import query as syntax
    from knowl_build.index.fields import name_key
    from knowl_build.index.ranking import Scored

    searcher = view.searcher
    found = syntax.scores(searcher, parsed, view.boosts, scopes)
    excluded: set[int] = set()
    for term in parsed.excluded:
        excluded |= syntax.docs_with(searcher, term, scopes)
    # Names first, as for a plain query: the pages named as the query's words and phrases
    # (its prefixes and exclusions aside), unless an excluded word leaves them out.
    named = searcher.named(name_key(" ".join(parsed.named)), scopes) - excluded
    for doc in sorted(named):
        found.setdefault(doc, 0.0)
    scored = Scored(searcher, found, named)

    def admit(key: str) -> bool:
        return not excluded or searcher.docnum(key) not in excluded

    if not parsed.phrases:
        arm = _Arm(
            lambda n: [(h.key, h.score) for h in scored.top(n)],
            scored.of,
            len(scored),
            scored.is_named,
        )
        return arm, admit
    # Positions are not indexed: the best candidates are checked against their stored text.
    kept: dict[str, float] = {}
    for hit in scored.top(syntax.PHRASE_DEPTH):
        page = view.by_key.get(hit.key)
        if page is None:
            continue
        record = view.record(page)
        texts = [record.title, record.fields.summary, " ".join(record.fields.tags), record.body]
        if all(syntax.has_phrase(texts, phrase) for phrase in parsed.phrases):
            kept[hit.key] = hit.score
    names = {key for key in kept if scored.is_named(key)}
    ranked = list(kept.items())  # in `scored.top`'s order, which is `order`
    arm = _Arm(
        lambda n: ranked if n is None else ranked[:n], kept.get, len(ranked), names.__contains__
    )
    return arm, kept.__contains__


def _syntax_search(
    view: ArtifactView,
    query: str,
    parsed: Query,
    user: str | None,
    filters: Filters,
    limit: int,
    peers: Sequence[ArtifactView],
) -> SearchAnswer:
    """`search` for a query with syntax: as a plain one, its lexical ranking from
    `index.query`, vector hits admitted by it."""
    filters = with_filters(filters, parsed)
    if parsed.empty or limit <= 0:
        return _answer(view, query, parsed, user, [], True, bool(peers))
    scopes = scopes_of(user)
    arm, admit = _syntax_arm(view, parsed, scopes)
    similarities = view.similarities(parsed.text) if parsed.words else None
    if similarities is None:
        merged = _merge(view, arm, user, filters, limit)
        hits = [page_hit(view, page, score, user) for score, page in merged]
    else:
        depth = max(limit * 4, 20)
        lexical = _merge(view, arm, user, filters, depth)
        ordered = _by_order(
            view,
            ((k, s) for k, s in similarities.items() if s > 0 and _scope_of(view, k) in scopes),
        )
        admitted: dict[str, float] = {}
        for key, score in ordered:
            if admit(key):
                admitted[key] = score
                if len(admitted) >= depth * 4:
                    break
        vector = _merge(view, _vectors(view, admitted), user, filters, depth)
        hits = fuse_arms(view, lexical, vector, user, limit)
    if peers:
        lists = [hits]
        for peer in peers:
            peer_arm, _admit = _syntax_arm(peer, parsed, scopes_of(user, True))
            merged = _merge(peer, peer_arm, user, filters, limit, peer=True)
            lists.append([page_hit(peer, page, score, None) for score, page in merged])
        hits = fuse(lists, limit)
    return _answer(view, query, parsed, user, hits, similarities is None, bool(peers))


def _answer(
    view: ArtifactView,
    query: str,
    parsed: Query,
    user: str | None,
    hits: list[SearchHit],
    lexical_only: bool,
    peers: bool,
) -> SearchAnswer:
    """The answer; without a hit, the index's terms nearest the query's ("did you mean"),
    from the pages the caller may see."""
    local = [h for h in hits if h["repo"] == view.repo] if peers else hits
    answer: SearchAnswer = {
        "query": query,
        "user": user,
        "build": view.build,
        "lexical_only": lexical_only,
        "hits": hits,
        "caveats": caveats(view, local, user),
    }
    asked = [*parsed.scored, *parsed.prefixes]
    if not hits and asked:
        # Imported here: start-up time (suggestions only when nothing was found).
        from knowl_build.index import query as syntax

        near = syntax.suggestions(view.searcher, asked, scopes_of(user))
        if near:
            answer["suggestions"] = near
    return answer
