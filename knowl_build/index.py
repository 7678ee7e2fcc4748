"""The Whoosh full-text index: schema, analyzer, writer, and the ranking model.

Whoosh is `whoosh3` (pinned; it imports without warnings on Python 3.11-3.13, keeps the
2.7 index format and rankings); everything Whoosh-specific stays in this module.

Ranking is BM25F (Whoosh's per-field BM25, fields weighted by the boosts recorded in the
artifact) with collection statistics over *live* documents only: the document count, each
term's document frequency (deleted documents are subtracted at query time) and the summed
field lengths (kept in `index/stats.json`, written by the build). Whoosh itself counts
deleted documents until a merge, so without this an incrementally updated index would rank
slightly differently from a full build; with it, both rank identically.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import fields, index, scoring
from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter
from whoosh.analysis.analyzers import Analyzer

TEXT_FIELDS = ("title", "summary", "tags", "body")
STATS_FILE = "stats.json"
DOCS_FILE = "docs.json"
INDEX_NAME = "MAIN"
# Merge everything into one segment once this share of the stored documents is deleted.
MERGE_DELETED_SHARE = 0.25


def analyzer() -> Analyzer:
    """Runs of letters and digits (so `total_revenue` gives `total` and `revenue`),
    lowercased, English-stemmed; the same in the index and in queries."""
    return RegexTokenizer(r"[^\W_]+") | LowercaseFilter() | StemFilter()


def schema() -> fields.Schema:
    text = analyzer()
    return fields.Schema(
        key=fields.ID(stored=True, unique=True),
        page_id=fields.ID(stored=True),
        scope=fields.ID(stored=True),
        status=fields.ID(stored=True),
        category=fields.ID(stored=True),
        usage_mode=fields.ID(stored=True),
        visibility=fields.ID(stored=True),
        title=fields.TEXT(analyzer=text),
        summary=fields.TEXT(analyzer=text),
        tags=fields.TEXT(analyzer=text),
        body=fields.TEXT(analyzer=text),
    )


def query_terms(text: str) -> list[str]:
    """The query's terms, analysed like the index (duplicates removed, order kept)."""
    seen: dict[str, None] = {}
    for token in analyzer()(text):
        seen.setdefault(token.text, None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class IndexDocument:
    key: str
    fields: dict[str, str]

    @property
    def digest(self) -> str:
        text = json.dumps([self.key, self.fields], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    added: int
    updated: int
    deleted: int
    merged: bool


def _stats(ix: index.Index) -> dict[str, Any]:
    """Live document count and summed (stored) field lengths of live documents."""
    sums = dict.fromkeys(TEXT_FIELDS, 0)
    count = 0
    with ix.reader() as reader:
        for leaf, _offset in reader.leaf_readers():
            deleted = leaf.deleted_docs_set if leaf.has_deletions() else frozenset()
            for docnum in range(leaf.doc_count_all()):
                if docnum in deleted:
                    continue
                count += 1
                for name in TEXT_FIELDS:
                    sums[name] += leaf.doc_field_length(docnum, name) or 0
    return {"doc_count": count, "length_sums": sums}


def write_index(folder: Path, documents: Iterable[IndexDocument], incremental: bool) -> IndexUpdate:
    """Write (or, when `incremental`, update in place) the index in `folder`.

    One writer adds documents in key order; only documents whose content changed are
    deleted and added again."""
    docs = {doc.key: doc for doc in documents}
    digests = {key: doc.digest for key, doc in docs.items()}
    previous: dict[str, str] = {}
    if incremental and index.exists_in(str(folder), INDEX_NAME):
        previous = json.loads((folder / DOCS_FILE).read_text(encoding="utf-8"))
        ix = index.open_dir(str(folder), indexname=INDEX_NAME)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        ix = index.create_in(str(folder), schema(), indexname=INDEX_NAME)
    stale = sorted(key for key in previous if previous[key] != digests.get(key))
    fresh = sorted(key for key in docs if previous.get(key) != digests[key])
    merged = False
    if stale or fresh or not previous:
        writer = ix.writer()
        for key in stale:
            writer.delete_by_term("key", key)
        for key in fresh:
            writer.add_document(key=key, **docs[key].fields)
        with ix.reader() as reader:
            stored = reader.doc_count_all() + len(fresh)
            deleted = reader.doc_count_all() - reader.doc_count() + len(stale)
        merged = bool(stale) and deleted > MERGE_DELETED_SHARE * max(stored, 1)
        writer.commit(optimize=merged)
    (folder / STATS_FILE).write_text(json.dumps(_stats(ix), sort_keys=True), encoding="utf-8")
    (folder / DOCS_FILE).write_text(json.dumps(digests, sort_keys=True), encoding="utf-8")
    ix.close()
    added = len([k for k in fresh if k not in previous])
    return IndexUpdate(added, len(fresh) - added, len([k for k in stale if k not in docs]), merged)


class LiveBM25F(scoring.BM25F):  # type: ignore[misc]
    """Whoosh's BM25F with statistics over live documents (see the module docstring)."""

    def __init__(self, stats: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stats = stats
        self._idf: dict[tuple[str, str], float] = {}

    def live_df(self, searcher: Any, fieldname: str, text: str) -> int:
        top = searcher.get_parent()
        df = int(top.doc_frequency(fieldname, text))
        reader = top.reader()
        leaves = reader.leaf_readers() if hasattr(reader, "leaf_readers") else [(reader, 0)]
        for leaf, _offset in leaves:
            if not leaf.has_deletions() or (fieldname, text) not in leaf:
                continue
            # The raw postings (leaf.postings() hides deleted documents, which we must count).
            # whoosh3 is pinned exactly, so this private reader API is stable for us.
            raw = leaf._text_to_bytes(fieldname, text)
            matcher = leaf._terms.matcher(fieldname, raw, leaf.schema[fieldname].format)
            for docnum in sorted(leaf.deleted_docs_set):
                if not matcher.is_active():
                    break
                if matcher.id() < docnum:
                    matcher.skip_to(docnum)
                if matcher.is_active() and matcher.id() == docnum:
                    df -= 1
        return df

    def idf(self, searcher: Any, fieldname: str, text: str) -> float:
        key = (fieldname, text)
        if key not in self._idf:
            n = self.live_df(searcher, fieldname, text)
            dc = int(self.stats["doc_count"])
            self._idf[key] = math.log(dc / (n + 1)) + 1
        return self._idf[key]

    def scorer(self, searcher: Any, fieldname: str, text: str, qf: int = 1) -> Any:
        if not searcher.schema[fieldname].scorable:
            return scoring.WeightScorer.for_(searcher, fieldname, text)
        total = self.stats["length_sums"].get(fieldname, 0)
        count = self.stats["doc_count"]
        return _LiveScorer(
            searcher,
            fieldname,
            text,
            self._field_B.get(fieldname, self.B),
            self.K1,
            qf,
            idf=self.idf(searcher, fieldname, text),
            avgfl=(total / count if count else 0) or 1,
        )


class _LiveScorer(scoring.BM25FScorer):  # type: ignore[misc]
    """BM25FScorer with the collection statistics given, not read from the searcher."""

    def __init__(
        self,
        searcher: Any,
        fieldname: str,
        text: str,
        B: float,
        K1: float,
        qf: int,
        *,
        idf: float,
        avgfl: float,
    ) -> None:
        self.idf = idf
        self.avgfl = avgfl
        self.B = B
        self.K1 = K1
        self.qf = qf
        self.setup(searcher, fieldname, text)


def load_stats(folder: Path) -> dict[str, Any]:
    return json.loads((folder / STATS_FILE).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Hit:
    key: str
    score: float
    stored: dict[str, Any]


def search(
    folder: Path,
    text: str,
    boosts: Mapping[str, float],
    limit: int | None = None,
    ix: index.Index | None = None,
) -> list[Hit]:
    """Plain terms, OR-ed, over the text fields with boosts; score descending, then key."""
    from whoosh import query

    terms = query_terms(text)
    if not terms:
        return []
    own = ix is None
    ix = ix or index.open_dir(str(folder), indexname=INDEX_NAME)
    try:
        weighting = LiveBM25F(load_stats(folder))
        q = query.Or(
            [
                query.Term(name, term, boost=boosts.get(name, 1.0))
                for name in TEXT_FIELDS
                for term in terms
            ]
        )
        with ix.searcher(weighting=weighting) as searcher:
            results = searcher.search(q, limit=None)
            hits = [Hit(r["key"], r.score, dict(r.fields())) for r in results]
    finally:
        if own:
            ix.close()
    hits.sort(key=lambda h: (-h.score, h.key))
    return hits[:limit] if limit is not None else hits
