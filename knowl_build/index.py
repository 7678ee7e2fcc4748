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
import heapq
import io
import json
import math
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import fields, index
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

    _admitted: dict[tuple[str, str], Any] = {}  # noqa: RUF012 - a shared cache on purpose

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key in self._admitted:
            return self._admitted[key]
        found = None
        if (
            module in ("builtins", "__builtin__") and name in _SAFE_BUILTINS
        ) or key in _SAFE_GLOBALS:
            found = super().find_class(module, name)
        elif not name.startswith("_") and module.startswith(_DATA_MODULES):
            candidate = super().find_class(module, name)
            # Whoosh's data classes (schemas, fields, analyzers, segments, formats); functions
            # only from whoosh.lang (the stemmer a StemFilter refers to), never one that acts.
            if isinstance(candidate, type) or module.startswith("whoosh.lang"):
                found = candidate
        if found is None:
            raise UnsafePickle(f"refusing to load {module}.{name} from an index file")
        self._admitted[key] = found
        return found


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


def _framed_dumps(obj: Any, protocol: int | None = None) -> bytes:
    """Whoosh writes its pickles with protocol 2; protocol 5 frames them, so the restricted
    unpickler reads a posting block in one call instead of one per opcode (about 3x faster)."""
    return pickle.dumps(obj, 5)


def _frame_whoosh_pickles() -> None:
    import whoosh.codec.whoosh3

    whoosh.codec.whoosh3.dumps = _framed_dumps


_frame_whoosh_pickles()

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


def write_index(
    folder: Path,
    digests: Mapping[str, str],
    document: Callable[[str], IndexDocument],
    incremental: bool,
) -> IndexUpdate:
    """Write (or, when `incremental`, update in place) the index in `folder`.

    `digests` names every document and its content digest; `document(key)` builds the ones
    that must be (re)indexed. One writer adds documents in key order; only documents whose
    content changed are deleted and added again."""
    previous: dict[str, str] = {}
    if incremental and index.exists_in(str(folder), INDEX_NAME):
        previous = json.loads((folder / DOCS_FILE).read_text(encoding="utf-8"))
        ix = index.open_dir(str(folder), indexname=INDEX_NAME)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        ix = index.create_in(str(folder), schema(), indexname=INDEX_NAME)
    stale = sorted(key for key in previous if previous[key] != digests.get(key))
    fresh = sorted(key for key in digests if previous.get(key) != digests[key])
    merged = False
    if stale or fresh or not previous:
        writer = ix.writer()
        for key in stale:
            writer.delete_by_term("key", key)
        for key in fresh:
            writer.add_document(key=key, **document(key).fields)
        with ix.reader() as reader:
            stored = reader.doc_count_all() + len(fresh)
            deleted = reader.doc_count_all() - reader.doc_count() + len(stale)
        merged = bool(stale) and deleted > MERGE_DELETED_SHARE * max(stored, 1)
        writer.commit(optimize=merged)
    (folder / STATS_FILE).write_text(json.dumps(_stats(ix), sort_keys=True), encoding="utf-8")
    (folder / DOCS_FILE).write_text(json.dumps(dict(digests), sort_keys=True), encoding="utf-8")
    ix.close()
    added = len([k for k in fresh if k not in previous])
    return IndexUpdate(
        added, len(fresh) - added, len([k for k in stale if k not in digests]), merged
    )


def load_stats(folder: Path) -> dict[str, Any]:
    return json.loads((folder / STATS_FILE).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Hit:
    key: str
    score: float


K1 = 1.2
B = 0.75


class Searcher:
    """An open index answering plain-term queries (kept open across queries).

    Scoring reads each query term's postings in bulk, block by block, and adds up Whoosh's
    BM25 formula per field, weighted by the field's boost:
    `boost * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg_length))` with
    `idf = log(live_docs / (live_df + 1)) + 1`. The statistics are those of live documents
    (deleted ones are skipped and not counted), so an incrementally updated index ranks
    exactly like a freshly written one; and bulk reading is several times faster than
    Whoosh's generic matcher tree for OR queries."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ix = index.open_dir(str(folder), indexname=INDEX_NAME)
        self.reader = self.ix.reader()
        stats = load_stats(folder)
        self.doc_count = int(stats["doc_count"])
        count = self.doc_count or 1
        self.avg = {name: (stats["length_sums"].get(name, 0) / count) or 1 for name in TEXT_FIELDS}
        self.leaves = list(self.reader.leaf_readers())
        self._norms: dict[tuple[int, str], list[float]] = {}
        self._keys: dict[int, str] = {}

    def close(self) -> None:
        self.reader.close()
        self.ix.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _norm(self, position: int, leaf: Any, field: str) -> list[float]:
        """Per document of a segment: K1 * (1 - B + B * length / avg_length) for `field`."""
        key = (position, field)
        if key not in self._norms:
            length = leaf._perdoc.doc_field_length_reader(field, 0)
            avg = self.avg[field]
            self._norms[key] = [
                K1 * (1 - B + B * (length(d) or 0) / avg) for d in range(leaf.doc_count_all())
            ]
        return self._norms[key]

    @staticmethod
    def _postings(leaf: Any, field: str, term: str) -> list[tuple[int, float]]:
        """A term's live (document, frequency) pairs in one segment, read block by block.
        whoosh3 is pinned exactly, so these private reader APIs are stable for us."""
        if (field, term) not in leaf:
            return []
        matcher = leaf._terms.matcher(
            field, leaf._text_to_bytes(field, term), leaf.schema[field].format
        )
        deleted = leaf.deleted_docs_set if leaf.has_deletions() else None
        pairs: list[tuple[int, float]] = []
        while not matcher._atend:
            matcher._read_ids()
            matcher._read_weights()
            block = zip(matcher._ids, matcher._weights, strict=False)
            if deleted:
                pairs.extend((d, w) for d, w in block if d not in deleted)
            else:
                pairs.extend(block)
            matcher._next_block()
        return pairs

    def scores(self, terms: list[str], boosts: Mapping[str, float]) -> dict[int, float]:
        """Global document number -> score, for every document matching any term."""
        acc: dict[int, float] = {}
        get = acc.get
        for field in TEXT_FIELDS:
            boost = boosts.get(field, 1.0)
            for term in terms:
                lists = [
                    (position, leaf, offset, self._postings(leaf, field, term))
                    for position, (leaf, offset) in enumerate(self.leaves)
                ]
                df = sum(len(pairs) for *_, pairs in lists)
                if not df:
                    continue
                weight = boost * (math.log(self.doc_count / (df + 1)) + 1) * (K1 + 1)
                for position, leaf, offset, pairs in lists:
                    if not pairs:
                        continue
                    norm = self._norm(position, leaf, field)
                    for doc, tf in pairs:
                        key = offset + doc
                        acc[key] = get(key, 0.0) + weight * tf / (tf + norm[doc])
        return acc

    def key(self, docnum: int) -> str:
        if docnum not in self._keys:
            self._keys[docnum] = str(self.reader.stored_fields(docnum)["key"])
        return self._keys[docnum]

    def docnum(self, key: str) -> int | None:
        """The live document of a page key, looked up through the `key` field."""
        for leaf, offset in self.leaves:
            if ("key", key) in leaf:
                matcher = leaf.postings("key", key)  # hides deleted documents
                if matcher.is_active():
                    return int(offset + matcher.id())
        return None

    def query(self, terms: list[str], boosts: Mapping[str, float]) -> Scored:
        return Scored(self, self.scores(terms, boosts) if terms else {})

    def ranked(
        self, terms: list[str], boosts: Mapping[str, float], limit: int | None = None
    ) -> list[Hit]:
        """Hits for OR-ed `terms` over the text fields, best first (score, then key)."""
        return self.query(terms, boosts).top(limit)


class Scored:
    """Every matching document's score for one query."""

    def __init__(self, searcher: Searcher, scores: dict[int, float]) -> None:
        self.searcher = searcher
        self.scores = scores

    def __len__(self) -> int:
        return len(self.scores)

    def top(self, limit: int | None = None) -> list[Hit]:
        """Best first (score, then key). With a `limit`, every document tied with the last one
        is considered before cutting, so the answer never depends on index order."""
        items = self.scores.items()
        if limit is not None and len(self.scores) > limit:
            cut = heapq.nlargest(limit, items, key=lambda item: item[1])[-1][1]
            items = [item for item in items if item[1] >= cut]  # type: ignore[assignment]
        hits = [Hit(self.searcher.key(doc), score) for doc, score in items]
        hits.sort(key=lambda h: (-h.score, h.key))
        return hits if limit is None else hits[:limit]

    def of(self, key: str) -> float | None:
        """The score of the page `key`, or None when it did not match."""
        docnum = self.searcher.docnum(key)
        return None if docnum is None else self.scores.get(docnum)


def search(
    folder: Path, text: str, boosts: Mapping[str, float], limit: int | None = None
) -> list[Hit]:
    """Plain terms, OR-ed, over the text fields with boosts; score descending, then key."""
    with Searcher(folder) as searcher:
        return searcher.ranked(query_terms(text), boosts, limit=limit)
