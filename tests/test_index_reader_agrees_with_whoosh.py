"""knowl's reader (index.segments, index.ranking) parses the index Whoosh wrote without
importing Whoosh; on random indexes (seeded corpora, several segments, deleted documents)
it must return exactly the postings Whoosh's own reader returns, and the scores Whoosh's
searcher gives with the same BM25 (B, K1, the same byte-quantized field lengths).

Scores are compared on indexes without deleted documents: knowl's statistics (document count,
average field lengths) are those of the live documents a caller may see, Whoosh's average
field length counts deleted documents too.

Whoosh's BM25F cannot express knowl's model exactly: knowl's idf is Lucene's
`log(1 + (N - df + 0.5) / (df + 0.5))` (Whoosh's `log(N / (df + 1)) + 1`), and knowl's
average field length sums the byte-quantized lengths (Whoosh sums the exact ones). Scores
are compared per field and term: both against one BM25 of the frequencies and quantized
lengths Whoosh reads, each with its own idf and average."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from whoosh import scoring
from whoosh.query import Term

from knowl_build.index.fields import SCHEMA_FIELDS, TEXT_FIELDS
from knowl_build.index.ranking import K1, NAME_FIELD, B, Searcher, idf
from knowl_build.index.segments import open_segments
from knowl_build.index.storage import open_index
from knowl_build.index.writer import IndexDocument, write_index

WORDS = [f"w{i}" for i in range(40)] + ["orders", "revenue", "churn", "metric", "daily"]


def _text(rng: random.Random, most: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, most)))


def _document(rng: random.Random, key: str) -> IndexDocument:
    fields = {
        "page_id": key,
        "scope": rng.choice(["global", "user:alice"]),
        "title": _text(rng, 5),
        "summary": _text(rng, 12),
        "tags": _text(rng, 3),
        "body": _text(rng, 120),
        "headings": _text(rng, 6),
    }
    return IndexDocument(key, fields)


def _build(folder: Path, seed: int, updates: bool) -> None:
    """A full index; with `updates`, one or two incremental ones after it (new segments,
    deleted documents)."""
    rng = random.Random(seed)
    documents = {f"p{n:03}": _document(rng, f"p{n:03}") for n in range(rng.randint(5, 60))}
    for step in range(rng.randint(2, 3) if updates else 1):
        if step:
            for key in rng.sample(sorted(documents), k=min(len(documents), rng.randint(1, 8))):
                documents[key] = _document(rng, key)
            for n in range(rng.randint(0, 5)):
                key = f"q{step}{n}"
                documents[key] = _document(rng, key)
        digests = {key: doc.digest for key, doc in documents.items()}
        write_index(folder, digests, documents.__getitem__, incremental=step > 0, memory_mb=16)


@pytest.mark.parametrize(("seed", "updates"), [(seed, seed % 2 == 1) for seed in range(8)])
def test_the_reader_and_whoosh_agree_on_postings_and_scores(
    tmp_path: Path, seed: int, updates: bool
) -> None:
    folder = tmp_path / "index"
    _build(folder, seed, updates)
    ix = open_index(folder)
    files, segments = open_segments(folder, SCHEMA_FIELDS)
    try:
        with ix.searcher(weighting=scoring.BM25F(B=B, K1=K1)) as searcher:
            reader = searcher.reader()
            leaves = [leaf for leaf, _offset in reader.leaf_readers()]
            assert len(leaves) == len(segments)
            checked = 0
            for field in TEXT_FIELDS:
                for term in sorted({t.decode() for t in reader.lexicon(field)}):
                    # Postings, segment by segment: the same documents and frequencies.
                    for leaf, segment in zip(leaves, segments, strict=True):
                        if (field, term) not in leaf:
                            assert not list(segment.blocks(field, term))
                            continue
                        # Whoosh's leaf leaves deleted documents out; knowl's blocks hold
                        # them (the ranking masks them, `segment.deleted`).
                        ours = [
                            (doc, float(w))
                            for ids, weights in segment.blocks(field, term)
                            for doc, w in zip(ids, weights, strict=True)
                            if doc not in segment.deleted
                        ]
                        theirs = [
                            (doc, float(w))
                            for doc, w in leaf.postings(field, term).items_as("weight")
                        ]
                        assert ours == theirs, (field, term)
                    if not updates:
                        checked += _same_scores(folder, searcher, field, term)
                    else:
                        checked += 1
            if updates:
                assert len(segments) > 1 and any(segment.deleted for segment in segments)
            assert checked > 20
    finally:
        files.close()
        ix.storage.close_files()
        ix.close()


def _bm25(tf: float, length: float, avg: float) -> float:
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg))


def _same_scores(folder: Path, searcher: Any, field: str, term: str) -> int:
    """Each live document's score for `term` in `field`: Whoosh's is its idf times BM25 of
    the frequency and byte-quantized length Whoosh reads, over its exact average length;
    knowl's is knowl's idf times the same BM25 over the average of the quantized lengths
    (stats.json keeps those sums, as the site's search does), in the names times the share
    of the names' length the term covers. The number compared."""
    hits = searcher.search(Term(field, term), limit=None)
    theirs = {hit.docnum: hit.score for hit in hits}
    frequencies = dict(searcher.postings(field, term).items_as("weight"))
    boosts = {name: 1.0 if name == field else 0.0 for name in TEXT_FIELDS}
    with Searcher(folder) as knowl:
        ours = {d: s for d, s in knowl.scores([term], boosts).items() if s > 0}
    assert sorted(ours) == sorted(theirs) == sorted(frequencies), (field, term)
    total = searcher.doc_count()
    exact_avg = searcher.avg_field_length(field)
    quantized = [
        searcher.reader().doc_field_length(d, field, 0) or 0
        for d in range(searcher.doc_count_all())
    ]
    quantized_avg = (sum(quantized) / total) or 1.0
    whoosh_idf, knowl_idf = searcher.idf(field, term), idf(total, len(theirs))
    for doc, score in theirs.items():
        tf, length = frequencies[doc], searcher.reader().doc_field_length(doc, field, 0) or 0
        assert math.isclose(score, whoosh_idf * _bm25(tf, length, exact_avg), rel_tol=1e-9)
        # A one-term query: a name counts by the share of its length the term covers.
        covers = min(1.0, tf / max(length, 1)) if field == NAME_FIELD else 1.0
        expected = knowl_idf * _bm25(tf, length, quantized_avg) * covers
        assert math.isclose(ours[doc], expected, rel_tol=1e-9)
    return len(theirs)


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_keys_in_term_order_are_the_stored_keys_and_rank_ties_alike(
    tmp_path: Path, seed: int
) -> None:
    """A segment's `key` terms walked in order name each document as its stored key does
    (deleted ones too), and the documents tied at a cut are taken first by (id, scope, key)
    alike whether their stored fields are read or the id terms walked
    (`Searcher.first_in_order`)."""
    folder = tmp_path / "index"
    _build(folder, seed, updates=True)
    with Searcher(folder) as searcher:
        for segment in searcher.segments:
            walked = list(segment.in_term_order("key"))
            assert walked == sorted(walked)
            assert sorted(doc for _key, doc in walked) == list(range(segment.doc_count))
            assert all(segment.stored_fields(doc)["key"] == key for key, doc in walked)
        live = [
            offset + doc
            for segment, offset in zip(searcher.segments, searcher.offsets, strict=False)
            for doc in range(segment.doc_count)
            if doc not in segment.deleted
        ]
        rng = random.Random(seed)
        for count in (1, 3, len(live)):
            docs = rng.sample(live, k=len(live) * 3 // 4)
            taken = searcher.first_in_order(docs, count)  # before any stored field is read
            assert taken == sorted(docs, key=searcher.order_of)[:count]
