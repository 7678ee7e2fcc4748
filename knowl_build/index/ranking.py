"""BM25F over the live documents the caller may see."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from itertools import accumulate, compress
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from knowl_build.core.errors import ArtifactError
from knowl_build.index.fields import NAMES_FIELD, SCHEMA_FIELDS, STATS_FILE, TEXT_FIELDS
from knowl_build.index.postings import Mask, live_mask
from knowl_build.index.segments import (
    LENGTH_OF_BYTE,
    Identity,
    Segment,
    open_segments,
    reading,
)
from knowl_build.index.stats import length_sums, load_stats, summed
from knowl_build.index.unpickler import BadIndex

# --- ranking ---------------------------------------------------------------------------------


class Hit(NamedTuple):  # a NamedTuple, not a dataclass: cheaper to import (start-up time)
    key: str
    score: float


class Order(NamedTuple):
    """What orders documents of equal rank and score (`Searcher.order_of`)."""

    page_id: str
    scope: str
    key: str


# Tuned on the quality benchmark (bench/quality_bench.py), with the boosts of core/config.py.
K1 = 1.6
B = 0.9


def idf(docs: int, df: int) -> float:
    """Lucene's BM25 idf, `log(1 + (docs - df + 0.5) / (df + 0.5))`: near 0 for a word most
    pages have (Whoosh's `log(docs / (df + 1)) + 1` gave such words a weight of about 1, so
    a long query's "the" and "when" outweighed its rarer words). search.js computes it too."""
    return math.log(1 + (docs - df + 0.5) / (df + 0.5))


# The field of a page's names (title, file name, aliases) and that of its headings: their
# matches count by how much of the names, or of the query, they cover (`Searcher`).
NAME_FIELD = "title"
HEADINGS_FIELD = "headings"


class _Matches:
    """A short field's matches for one query: per document its BM25 so far, the share of its
    length the query's terms cover (`covered`) and how many of the query's terms it holds."""

    def __init__(self) -> None:
        self.scores: dict[int, float] = {}
        self.covered: dict[int, float] = {}
        self.matched: dict[int, int] = {}

    def note(self, offset: int, pairs: list[tuple[int, float]], lengths: bytes) -> None:
        covered, matched = self.covered, self.matched
        for doc, tf in pairs:
            key = offset + doc
            covered[key] = covered.get(key, 0.0) + tf / max(LENGTH_OF_BYTE[lengths[doc]], 1)
            matched[key] = matched.get(key, 0) + 1


# Callers (sets of visible scopes) whose statistics an open Searcher keeps.
MAX_VIEWS = 16


class _View(NamedTuple):
    """The index as one caller sees it: per segment a mask of the documents it may see (live,
    in its scopes; None: all), their number and their average field lengths."""

    visible: list[Mask | None]
    doc_count: int
    avg: dict[str, float]


def segment_postings(
    segment: Segment, field: str, term: str, visible: Mask | None
) -> list[tuple[int, float]]:
    """A term's (document, frequency) pairs in one segment, read block by block, of the
    documents `visible` lets through (not deleted, in a scope the caller may see; None: all).
    A block whose range of documents holds no hidden one is taken whole; in another, the mask
    is applied by `compress` (no Python step per posting either way)."""
    pairs: list[tuple[int, float]] = []
    for ids, weights in segment.blocks(field, term):
        if not ids:
            continue
        block = zip(ids, weights, strict=False)
        if visible is None or not visible.hides(ids[0], ids[-1]):
            pairs.extend(block)
        elif len(ids) == 1:
            pairs.extend(block if visible.mask[ids[0]] else ())
        else:
            pairs.extend(compress(block, itemgetter(*ids)(visible.mask)))
    return pairs


class Searcher:
    """An open index answering plain-term queries (kept open across queries).

    Scoring reads each query term's postings in bulk, block by block, and adds up Whoosh's
    BM25 formula per field, weighted by the field's boost:
    `boost * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg_length))` with
    `idf = log(1 + (docs - df + 0.5) / (df + 0.5))` (`idf`). Two short fields count by what
    they cover: a page's names (NAME_FIELD) are multiplied by the share of their length the
    query's terms make up (`unused vars` covers most of `no-unused-vars`; a sentence that
    shares one word with a name covers little of it), its headings (HEADINGS_FIELD) by the
    share of the query's terms they hold. A long question is then found by what it says, not
    by the one word it shares with another page's name or headings. The statistics (`docs`, `df`, `avg_length`) are those
    of the live documents the caller may see: the scopes given with the query (SPEC 6.2: a
    user sees global pages and their own), so that no page of another user changes a score or
    an order; deleted documents are skipped and not counted, so an incrementally updated
    index ranks exactly like a freshly written one. Without scopes, every live document counts
    (the build's view). The summed field lengths come precomputed from `stats.json`, each
    document's length from the index's length columns.

    The index is read by `segments`, without importing Whoosh (start-up time of a reader
    process); `leaves` opens it with Whoosh for whoever walks the whole index.

    `validated` maps each index file to its identity when the full validation decoded it
    (artifacts' validation memo): then, and only when every file opened is that very file,
    posting blocks and stored fields are decoded by the C unpickler; otherwise by the bounded
    one (the TOC always)."""

    def __init__(self, folder: Path, *, validated: Mapping[str, Identity] | None = None) -> None:
        self.folder = folder
        with reading(folder):
            self._files, self.segments = open_segments(folder, SCHEMA_FIELDS, validated)
            try:
                self.offsets = list(accumulate((s.doc_count for s in self.segments), initial=0))
                self.stats = load_stats(folder)
                self._scopes = self._scope_terms()
            except BaseException:
                self._files.close()
                raise
        self._validated = validated is not None
        self._views: dict[frozenset[str] | None, _View] = {}
        self._lengths: dict[tuple[int, str], bytes] = {}
        self._orders: dict[int, Order] = {}
        self._whoosh: Any = None

    def _scope_terms(self) -> frozenset[str]:
        """The scopes of the index's documents: from stats.json (live documents, per scope
        since 1.x), else from the documents' stored fields."""
        if "scopes" in self.stats:
            return frozenset(self.stats["scopes"])
        return frozenset(
            str(segment.stored_fields(doc)["scope"])
            for segment in self.segments
            for doc in range(segment.doc_count)
            if doc not in segment.deleted
        )

    @property
    def leaves(self) -> list[tuple[Any, int]]:
        """Whoosh's segment readers and their document offsets, for a walk of the whole
        index (Whoosh loads here, not for a query)."""
        if self._whoosh is None:
            # Whoosh loads for a walk of the whole index only (start-up time of a query).
            from knowl_build.index.storage import open_index
            from knowl_build.index.storage import reading as whoosh_reading

            with whoosh_reading(self.folder):
                ix = open_index(self.folder)
                reader = ix.reader()
                self._whoosh = (ix, reader, list(reader.leaf_readers()))
        leaves: list[tuple[Any, int]] = self._whoosh[2]
        return leaves

    def close(self) -> None:
        self._files.close()
        if self._whoosh is not None:
            ix, reader, _leaves = self._whoosh
            reader.close()
            ix.close()
            self._whoosh = None

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _reading(self) -> Any:
        return reading(self.folder)

    def _view(self, scopes: Iterable[str] | None) -> _View:
        """The view of a caller who may see `scopes` (None: everything), kept for the
        MAX_VIEWS most recent callers. Callers who see the same documents share one."""
        key = None if scopes is None else frozenset(scopes) & self._scopes
        if key == self._scopes:
            key = None
        if self._views and key == next(reversed(self._views)):
            return self._views[key]  # the same caller again
        view = self._views.pop(key, None) or self._make_view(key)
        self._views[key] = view
        while len(self._views) > MAX_VIEWS:
            del self._views[next(iter(self._views))]
        return view

    def _make_view(self, scopes: frozenset[str] | None) -> _View:
        visible: list[Mask | None] = []
        count = 0
        for segment in self.segments:
            size, deleted = segment.doc_count, segment.deleted
            live = live_mask(size, deleted)
            if scopes is None:
                visible.append(live)
                count += size - len(deleted)
                continue
            mask = bytearray(size)
            for scope in scopes:
                for ids, _weights in segment.blocks("scope", scope):
                    for doc in ids:
                        mask[doc] = 1
            for doc in deleted:
                mask[doc] = 0
            visible.append(Mask.of(mask))
            count += mask.count(1)
        entries = [self.stats] if scopes is None else self._scope_stats(scopes, visible)
        total = summed(entries)
        if total[0] != count:
            raise BadIndex(f"{STATS_FILE} disagrees with the index's documents")
        avg = {
            name: (total[1 + i] / count if count else 0.0) or 1.0
            for i, name in enumerate(TEXT_FIELDS)
        }
        return _View(visible, count, avg)

    def _scope_stats(
        self, scopes: frozenset[str], visible: list[Mask | None]
    ) -> list[dict[str, Any]]:
        """The statistics of the scopes, from stats.json; an index written before knowl kept
        them there has them added up from its documents."""
        if "scopes" in self.stats:
            empty = {"doc_count": 0, "length_sums": dict.fromkeys(TEXT_FIELDS, 0)}
            return [self.stats["scopes"].get(scope, empty) for scope in sorted(scopes)]
        rows = []
        for position, (segment, mask) in enumerate(zip(self.segments, visible, strict=True)):
            lengths = [self._length_bytes(position, name) for name in TEXT_FIELDS]
            rows += [
                [LENGTH_OF_BYTE[length[d]] for length in lengths]
                for d in range(segment.doc_count)
                if mask is None or mask.mask[d]
            ]
        return [length_sums(rows)]

    def _length_bytes(self, position: int, field: str) -> bytes:
        """Each document's length byte (`segments.LENGTH_OF_BYTE` decodes it)."""
        key = (position, field)
        if key not in self._lengths:
            self._lengths[key] = self.segments[position].length_bytes(field)
        return self._lengths[key]

    def scores(
        self, terms: list[str], boosts: Mapping[str, float], scopes: Iterable[str] | None = None
    ) -> dict[int, float]:
        """Global document number -> score, for every document the caller may see (`scopes`;
        None: every document) that matches any term."""
        with self._reading():
            scores = self._scores(terms, boosts, self._view(scopes))
            # Finite with bounded boosts and validated frequencies; a sum that is not is
            # cheap to see (NaN and infinities propagate) and never reaches an answer.
            if not math.isfinite(sum(scores.values())):
                raise BadIndex("the index gives a score that is not a finite number")
            return scores

    def _scores(
        self, terms: list[str], boosts: Mapping[str, float], view: _View
    ) -> dict[int, float]:
        acc: dict[int, float] = {}
        names = _Matches()
        headings = _Matches()
        for field in TEXT_FIELDS:
            into = names if field == NAME_FIELD else headings if field == HEADINGS_FIELD else None
            for term in terms:
                self._add(acc if into is None else into.scores, field, term, boosts, view, into)
        for doc, score in names.scores.items():
            acc[doc] = acc.get(doc, 0.0) + score * min(1.0, names.covered[doc])
        size = max(len(terms), 1)
        for doc, score in headings.scores.items():
            acc[doc] = acc.get(doc, 0.0) + score * (headings.matched[doc] / size)
        return acc

    def _add(
        self,
        acc: dict[int, float],
        field: str,
        term: str,
        boosts: Mapping[str, float],
        view: _View,
        matches: _Matches | None,
    ) -> None:
        """One term's BM25 in one field, added to `acc`; its matches noted in `matches`."""
        lists = [
            (position, segment_postings(segment, field, term, view.visible[position]))
            for position, segment in enumerate(self.segments)
        ]
        df = sum(len(pairs) for _, pairs in lists)
        if not df:
            return
        get = acc.get
        # df <= doc_count in an index whose statistics were checked: log() is finite.
        weight = boosts.get(field, 1.0) * idf(max(view.doc_count, 1), df) * (K1 + 1)
        # The norm of a document's length: one of 256 (a length is stored as a byte).
        avg = view.avg[field]
        norms = [K1 * (1 - B + B * length / avg) for length in LENGTH_OF_BYTE]
        for position, pairs in lists:
            if not pairs:
                continue
            offset = self.offsets[position]
            lengths = self._length_bytes(position, field)
            for doc, tf in pairs:
                key = offset + doc
                acc[key] = get(key, 0.0) + weight * tf / (tf + norms[lengths[doc]])
            if matches is not None:
                matches.note(offset, pairs, lengths)

    def key(self, docnum: int) -> str:
        return self.order_of(docnum)[2]

    def order_of(self, docnum: int) -> Order:
        """What orders a document among those of its rank and score: (page id, scope, page
        key), from its stored fields. Every front end orders ties so (docs/reading.md)."""
        if docnum not in self._orders:
            with self._reading():
                position = bisect_right(self.offsets, docnum) - 1
                if not 0 <= position < len(self.segments):
                    raise BadIndex("a document number beyond the index")
                stored = self.segments[position].stored_fields(docnum - self.offsets[position])
                self._orders[docnum] = Order(
                    str(stored["page_id"]), str(stored["scope"]), str(stored["key"])
                )
        return self._orders[docnum]

    def first_in_order(self, docs: list[int], count: int) -> list[int]:
        """The `count` documents of `docs` (live ones) first in `order_of`'s order, in it.

        Few documents: their stored fields are read. Many (a query that ties thousands of
        documents at the cut): each segment's `page_id` terms are walked in order (the order
        of their UTF-8 bytes, which is that of the strings) until `count` of `docs` and every
        other of the last id are met, about `count` divided by the share of the index `docs`
        are, and only those are read. Either way the same documents, in the same order."""
        if count <= 0:
            return []
        if count * self.offsets[-1] > len(docs) * len(docs):
            return sorted(docs, key=self.order_of)[:count]
        wanted = set(docs)
        found: list[int] = []
        with self._reading():
            for segment, offset in zip(self.segments, self.offsets, strict=False):
                taken, last = 0, None
                for page_id, doc in segment.in_term_order("page_id"):
                    if offset + doc not in wanted:
                        continue
                    if taken >= count and page_id != last:
                        break
                    found.append(offset + doc)
                    taken, last = taken + 1, page_id
        return sorted(found, key=self.order_of)[:count]

    def docnum(self, key: str) -> int | None:
        """The live document of a page key, looked up through the `key` field."""
        with self._reading():
            for segment, offset in zip(self.segments, self.offsets, strict=False):
                for ids, _weights in segment.blocks("key", key):
                    for doc in ids:
                        if doc not in segment.deleted:
                            return offset + doc
        return None

    def named(self, name: str, scopes: Iterable[str] | None = None) -> frozenset[int]:
        """The documents the caller may see that have the name `name` (a `name_key`)."""
        if not name:
            return frozenset()
        with self._reading():
            view = self._view(scopes)
            found = []
            for position, segment in enumerate(self.segments):
                pairs = segment_postings(segment, NAMES_FIELD, name, view.visible[position])
                found += [self.offsets[position] + doc for doc, _tf in pairs]
            return frozenset(found)

    def query(
        self,
        terms: list[str],
        boosts: Mapping[str, float],
        scopes: Iterable[str] | None = None,
        name: str = "",
    ) -> Scored:
        """The documents matching any term, and those named `name` (a `name_key`: a query
        equal to a page's name, accents aside), which rank before every other (scored 0 when
        no term matches them: `Résumé` for `resume`)."""
        if not terms:
            return Scored(self, {})
        scores = self.scores(terms, boosts, scopes)
        named = self.named(name, scopes)
        for doc in sorted(named):
            scores.setdefault(doc, 0.0)
        return Scored(self, scores, named)


def _finite(score: float, folder: Path) -> float:
    """A score that may reach an answer (and JSON): never NaN or an infinity."""
    if not math.isfinite(score):
        raise ArtifactError(f"{folder}: the index gives a score that is not a finite number")
    return score


class Scored:
    """Every matching document's score for one query."""

    def __init__(
        self, searcher: Searcher, scores: dict[int, float], named: frozenset[int] = frozenset()
    ) -> None:
        self.searcher = searcher
        self.scores = scores
        self.named = named & scores.keys()  # the documents named as the query: first

    def __len__(self) -> int:
        return len(self.scores)

    def _cut(self, limit: int) -> tuple[list[int], list[int]]:
        """The documents ranked before the `limit`-th (named as the query, then score), and
        those tied with it; found by comparing bare scores (no key per document: a query can
        match every page)."""
        named, scores = self.named, self.scores
        pool: Iterable[int]
        if len(named) >= limit:  # the cut falls among the named documents
            cut = heapq.nlargest(limit, (scores[doc] for doc in named))[-1]
            pool, before = named, []
        else:
            rest = {d: s for d, s in scores.items() if d not in named} if named else scores
            cut = heapq.nlargest(limit - len(named), rest.values())[-1]
            pool, before = rest, list(named)
        better = [doc for doc in pool if scores[doc] > cut]
        tied = [doc for doc in pool if scores[doc] == cut]
        return before + better, tied

    def top(self, limit: int | None = None) -> list[Hit]:
        """Best first: named as the query, then score, then page id, scope and key (`order_of`).
        With a `limit`, every document tied with the last one is considered before cutting,
        by that same order, so the answer never depends on index order and the top `n` is the
        first `n` of any longer top."""
        items = self.scores.items()
        searcher = self.searcher
        if limit is not None and len(self.scores) > limit:
            better, tied = self._cut(limit)
            docs = better + searcher.first_in_order(tied, limit - len(better))
            items = [(doc, self.scores[doc]) for doc in docs]  # type: ignore[assignment]
        folder = searcher.folder
        ranked = [
            (doc not in self.named, -_finite(score, folder), searcher.order_of(doc))
            for doc, score in items
        ]
        ranked.sort()
        hits = [Hit(order.key, -negated) for _unnamed, negated, order in ranked]
        return hits if limit is None else hits[:limit]

    def is_named(self, key: str) -> bool:
        """Whether the page `key` is named as the query (it ranks before unnamed pages)."""
        docnum = self.searcher.docnum(key) if self.named else None
        return docnum is not None and docnum in self.named

    def of(self, key: str) -> float | None:
        """The score of the page `key`, or None when it did not match."""
        docnum = self.searcher.docnum(key)
        score = None if docnum is None else self.scores.get(docnum)
        return None if score is None else _finite(score, self.searcher.folder)
