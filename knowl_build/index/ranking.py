"""BM25F over the live documents the caller may see."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowl_build.errors import ArtifactError
from knowl_build.index.analysis import STATS_FILE, TEXT_FIELDS
from knowl_build.index.postings import Mask, deleted_docs, live_mask, live_postings
from knowl_build.index.stats import length_sums, load_stats, summed
from knowl_build.index.storage import Identity, Reading, open_index, reading
from knowl_build.index.unpickler import BadIndex

# --- ranking ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    key: str
    score: float


K1 = 1.2
B = 0.75
# Callers (sets of visible scopes) whose statistics and length norms an open Searcher keeps.
MAX_VIEWS = 16


@dataclass(slots=True)
class _View:
    """The index as one caller sees it: per segment a mask of the documents it may see (live,
    in its scopes; None: all), their number, their average field lengths, and (filled on
    first use) each document's length norm per field."""

    visible: list[Mask | None]
    doc_count: int
    avg: dict[str, float]
    norms: dict[tuple[int, str], list[float]]


class Searcher:
    """An open index answering plain-term queries (kept open across queries).

    Scoring reads each query term's postings in bulk, block by block, and adds up Whoosh's
    BM25 formula per field, weighted by the field's boost:
    `boost * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg_length))` with
    `idf = log(docs / (df + 1)) + 1`. The statistics (`docs`, `df`, `avg_length`) are those
    of the live documents the caller may see: the scopes given with the query (SPEC 6.2: a
    user sees global pages and their own), so that no page of another user changes a score or
    an order; deleted documents are skipped and not counted, so an incrementally updated
    index ranks exactly like a freshly written one. Without scopes, every live document counts
    (the build's view). Bulk reading is several times faster than Whoosh's generic matcher
    tree for OR queries.

    `validated` maps each index file to its identity when the full validation decoded it
    (artifacts' validation memo): then, and only when every file opened is that very file,
    posting blocks and stored fields are decoded by the C unpickler; otherwise by the bounded
    one (the TOC always)."""

    def __init__(self, folder: Path, *, validated: Mapping[str, Identity] | None = None) -> None:
        self.folder = folder
        self._validated = False  # the constructor reads with the bounded unpickler
        with reading(folder):
            self.ix = open_index(folder, expected=validated)
            try:
                self.reader = self.ix.reader()
                self.leaves = list(self.reader.leaf_readers())
                self.stats = load_stats(folder)
                self._scopes = frozenset(self.reader.field_terms("scope"))
            except BaseException:
                self.ix.storage.close_files()
                raise
        self._validated = validated is not None
        self._views: dict[frozenset[str] | None, _View] = {}
        self._keys: dict[int, str] = {}

    def close(self) -> None:
        self.reader.close()
        self.ix.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _reading(self) -> Reading:
        """`reading`, with the C unpickler when this index was validated as it is."""
        return Reading(self.folder, self._validated)

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
        for leaf, _offset in self.leaves:
            size, deleted = leaf.doc_count_all(), deleted_docs(leaf)
            live = live_mask(size, deleted)
            if scopes is None:
                visible.append(live)
                count += size - len(deleted)
                continue
            seen = {d for scope in scopes for d, _w in live_postings(leaf, "scope", scope, live)}
            visible.append(live_mask(size, frozenset(range(size)).difference(seen)))
            count += len(seen)
        entries = [self.stats] if scopes is None else self._scope_stats(scopes, visible)
        total = summed(entries)
        if total[0] != count:
            raise BadIndex(f"{STATS_FILE} disagrees with the index's documents")
        avg = {
            name: (total[1 + i] / count if count else 0.0) or 1.0
            for i, name in enumerate(TEXT_FIELDS)
        }
        return _View(visible, count, avg, {})

    def _scope_stats(
        self, scopes: frozenset[str], visible: list[Mask | None]
    ) -> list[dict[str, Any]]:
        """The statistics of the scopes, from stats.json; an index written before knowl kept
        them there has them added up from its documents."""
        if "scopes" in self.stats:
            empty = {"doc_count": 0, "length_sums": dict.fromkeys(TEXT_FIELDS, 0)}
            return [self.stats["scopes"].get(scope, empty) for scope in sorted(scopes)]
        rows = []
        for (leaf, _offset), mask in zip(self.leaves, visible, strict=True):
            lengths = [leaf._perdoc.doc_field_length_reader(name, 0) for name in TEXT_FIELDS]
            rows += [
                [length(d) or 0 for length in lengths]
                for d in range(leaf.doc_count_all())
                if mask is None or mask.mask[d]
            ]
        return [length_sums(rows)]

    def _norm(self, view: _View, position: int, leaf: Any, field: str) -> list[float]:
        """Per document of a segment: K1 * (1 - B + B * length / avg_length) for `field`."""
        key = (position, field)
        if key not in view.norms:
            length = leaf._perdoc.doc_field_length_reader(field, 0)
            avg = view.avg[field]
            view.norms[key] = [
                K1 * (1 - B + B * (length(d) or 0) / avg) for d in range(leaf.doc_count_all())
            ]
        return view.norms[key]

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
        get = acc.get
        for field in TEXT_FIELDS:
            boost = boosts.get(field, 1.0)
            for term in terms:
                lists = [
                    (
                        position,
                        leaf,
                        offset,
                        live_postings(leaf, field, term, view.visible[position]),
                    )
                    for position, (leaf, offset) in enumerate(self.leaves)
                ]
                df = sum(len(pairs) for *_, pairs in lists)
                if not df:
                    continue
                # df <= doc_count in an index whose statistics were checked: log() is finite.
                idf = math.log(max(view.doc_count, 1) / (df + 1)) + 1
                weight = boost * idf * (K1 + 1)
                for position, leaf, offset, pairs in lists:
                    if not pairs:
                        continue
                    norm = self._norm(view, position, leaf, field)
                    for doc, tf in pairs:
                        key = offset + doc
                        acc[key] = get(key, 0.0) + weight * tf / (tf + norm[doc])
        return acc

    def key(self, docnum: int) -> str:
        if docnum not in self._keys:
            with self._reading():
                self._keys[docnum] = str(self.reader.stored_fields(docnum)["key"])
        return self._keys[docnum]

    def docnum(self, key: str) -> int | None:
        """The live document of a page key, looked up through the `key` field."""
        with self._reading():
            for leaf, offset in self.leaves:
                if ("key", key) in leaf:
                    matcher = leaf.postings("key", key)  # hides deleted documents
                    if matcher.is_active():
                        return int(offset + matcher.id())
        return None

    def query(
        self, terms: list[str], boosts: Mapping[str, float], scopes: Iterable[str] | None = None
    ) -> Scored:
        return Scored(self, self.scores(terms, boosts, scopes) if terms else {})


def _finite(score: float, folder: Path) -> float:
    """A score that may reach an answer (and JSON): never NaN or an infinity."""
    if not math.isfinite(score):
        raise ArtifactError(f"{folder}: the index gives a score that is not a finite number")
    return score


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
        folder = self.searcher.folder
        hits = [Hit(self.searcher.key(doc), _finite(score, folder)) for doc, score in items]
        hits.sort(key=lambda h: (-h.score, h.key))
        return hits if limit is None else hits[:limit]

    def of(self, key: str) -> float | None:
        """The score of the page `key`, or None when it did not match."""
        docnum = self.searcher.docnum(key)
        score = None if docnum is None else self.scores.get(docnum)
        return None if score is None else _finite(score, self.searcher.folder)
