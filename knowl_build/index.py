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
import io
import json
import math
import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import fields, index, scoring
from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter
from whoosh.analysis.analyzers import Analyzer

# --- safe loading: Whoosh stores parts of an index as pickles ----------------------------

_SAFE_BUILTINS = frozenset(
    {
        "set",
        "frozenset",
        "dict",
        "list",
        "tuple",
        "str",
        "bytes",
        "bytearray",
        "int",
        "float",
        "bool",
        "complex",
        "slice",
        "range",
        "object",
    }
)
_SAFE_GLOBALS = frozenset(
    {
        ("copyreg", "_reconstructor"),
        ("re", "_compile"),
        ("array", "array"),
        ("_codecs", "encode"),
        ("array", "_array_reconstructor"),
        ("collections", "defaultdict"),
        ("collections", "OrderedDict"),
    }
)


_DATA_MODULES = (
    "whoosh.fields",
    "whoosh.analysis",
    "whoosh.formats",
    "whoosh.codec.whoosh3",
    "whoosh.columns",
    "whoosh.idsets",
    "whoosh.lang",
)


class UnsafePickle(pickle.UnpicklingError):
    pass


class _RestrictedUnpickler(pickle.Unpickler):
    """Admits Whoosh's own classes and plain builtins; anything else is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if module in ("builtins", "__builtin__") and name in _SAFE_BUILTINS:
            return super().find_class(module, name)
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        if not name.startswith("_") and module.startswith(_DATA_MODULES):
            found = super().find_class(module, name)
            # Whoosh's data classes (schemas, fields, analyzers, segments, formats); functions
            # only from whoosh.lang (the stemmer a StemFilter refers to), never one that acts.
            if isinstance(found, type) or module.startswith("whoosh.lang"):
                return found
        raise UnsafePickle(f"refusing to load {module}.{name} from an index file")


def safe_loads(data: bytes, **_kwargs: Any) -> Any:
    return _RestrictedUnpickler(io.BytesIO(data)).load()


def safe_load(handle: Any, **_kwargs: Any) -> Any:
    return _RestrictedUnpickler(handle).load()


class _PickleShim:
    """Stands in for the `pickle` module inside Whoosh modules that call `pickle.loads`."""

    loads = staticmethod(safe_loads)
    load = staticmethod(safe_load)
    dumps = staticmethod(pickle.dumps)
    dump = staticmethod(pickle.dump)
    PicklingError = pickle.PicklingError
    UnpicklingError = pickle.UnpicklingError


def _restrict_whoosh_unpickling() -> None:
    """Every place whoosh3 unpickles goes through the restricted unpickler (SPEC 9)."""
    import whoosh.codec.whoosh3
    import whoosh.columns
    import whoosh.filedb.fileindex
    import whoosh.filedb.structfile
    import whoosh.formats
    import whoosh.index

    for module in (whoosh.codec.whoosh3, whoosh.columns, whoosh.formats):
        module.loads = safe_loads
    whoosh.filedb.structfile.load = safe_load
    whoosh.index.pickle = _PickleShim
    whoosh.filedb.fileindex.pickle = _PickleShim


_restrict_whoosh_unpickling()

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


class Searcher:
    """An open index answering plain-term queries (kept open across queries)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ix = index.open_dir(str(folder), indexname=INDEX_NAME)
        self.weighting = LiveBM25F(load_stats(folder))
        self.searcher = self.ix.searcher(weighting=self.weighting)

    def close(self) -> None:
        self.searcher.close()
        self.ix.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ranked(
        self,
        terms: list[str],
        boosts: Mapping[str, float],
        scopes: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[Hit]:
        """Hits for OR-ed `terms` over the text fields, best first (score, then key).

        With a `limit`, a tie across the cut is resolved by fetching further, so the answer
        never depends on the order of documents inside the index."""
        from whoosh import query

        if not terms:
            return []
        q = query.Or(
            [
                query.Term(name, term, boost=boosts.get(name, 1.0))
                for name in TEXT_FIELDS
                for term in terms
            ]
        )
        allowed = None
        if scopes is not None:
            allowed = query.Or([query.Term("scope", scope) for scope in scopes])
        want = None if limit is None else limit + 1
        while True:
            results = self.searcher.search(q, limit=want, filter=allowed)
            hits = [Hit(r["key"], r.score) for r in results]
            hits.sort(key=lambda h: (-h.score, h.key))
            if want is None or len(hits) < want or hits[want - 2].score != hits[want - 1].score:
                return hits if limit is None else hits[:limit]
            want *= 2


def search(
    folder: Path, text: str, boosts: Mapping[str, float], limit: int | None = None
) -> list[Hit]:
    """Plain terms, OR-ed, over the text fields with boosts; score descending, then key."""
    with Searcher(folder) as searcher:
        return searcher.ranked(query_terms(text), boosts, limit=limit)
