"""The reader's own decoding of the index (`index.segments`) against Whoosh's: the same
segments, postings, field lengths, stored fields and query terms, on an index with several
segments and a deleted document; and the constants it copies from Whoosh."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import whoosh.index
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.util.numeric import byte_to_length

from knowl_build.index import analysis, fields, segments
from knowl_build.index.postings import deleted_docs, live_postings
from knowl_build.index.ranking import Searcher
from knowl_build.index.stats import collection_stats, segment_stats
from knowl_build.index.storage import open_index
from tests.tamper import module_corpus


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "segments") / "index"


@pytest.fixture
def both(index: Path) -> Iterator[tuple[list[tuple[object, int]], list[segments.Segment]]]:
    ix = open_index(index)
    reader = ix.reader()
    files, mine = segments.open_segments(index, fields.SCHEMA_FIELDS)
    try:
        yield list(reader.leaf_readers()), mine
    finally:
        files.close()
        reader.close()
        ix.storage.close_files()


def test_the_same_segments_documents_and_deletions(
    both: tuple[list[tuple[object, int]], list[segments.Segment]],
) -> None:
    leaves, mine = both
    assert len(leaves) == len(mine) == 2
    assert any(segment.deleted for segment in mine)  # the incremental build deleted one
    for (leaf, _offset), segment in zip(leaves, mine, strict=True):
        assert leaf.doc_count_all() == segment.doc_count  # type: ignore[attr-defined]
        assert deleted_docs(leaf) == segment.deleted
        for doc in range(segment.doc_count):
            assert leaf.stored_fields(doc) == segment.stored_fields(doc)  # type: ignore[attr-defined]


def test_the_same_postings_and_lengths(
    both: tuple[list[tuple[object, int]], list[segments.Segment]],
) -> None:
    leaves, mine = both
    checked = 0
    for (leaf, _offset), segment in zip(leaves, mine, strict=True):
        for name in fields.TEXT_FIELDS:
            length = leaf._perdoc.doc_field_length_reader(name, 0)  # type: ignore[attr-defined]
            stored = segment.length_bytes(name)
            assert [length(d) or 0 for d in range(segment.doc_count)] == [
                segments.LENGTH_OF_BYTE[b] for b in stored
            ]
        for name in sorted(fields.SCHEMA_FIELDS):
            for term in leaf.field_terms(name):  # type: ignore[attr-defined]
                decoded = [
                    pair
                    for ids, weights in segment.blocks(name, term)
                    for pair in zip(ids, weights, strict=True)
                ]
                assert decoded == live_postings(leaf, name, term, None)
                assert (name, term) in segment
                checked += 1
            assert segment.terms_of(name) == list(leaf.field_terms(name))  # type: ignore[attr-defined]
        assert ("body", "no-such-term") not in segment
        assert list(segment.blocks("no-such-field", "revenu")) == []
    assert checked > 100


def test_the_same_collection_statistics(index: Path) -> None:
    ix = open_index(index)
    try:
        with ix.reader() as reader:
            expected = collection_stats(reader)
    finally:
        ix.storage.close_files()
    files, found = segments.open_segments(index, fields.SCHEMA_FIELDS)
    try:
        assert segment_stats(found) == expected
    finally:
        files.close()


def test_the_searcher_finds_live_documents_by_key(index: Path) -> None:
    with Searcher(index) as searcher:
        keys = {searcher.key(doc) for doc in range(sum(s.doc_count for s in searcher.segments))}
        for key in keys:
            doc = searcher.docnum(key)
            assert doc is not None and searcher.key(doc) == key
        assert searcher.docnum("knowledge/global/nothing.md") is None
        # The leaves of Whoosh itself, for a walk of the whole index.
        assert len(searcher.leaves) == len(searcher.segments)


def test_the_constants_copied_from_whoosh() -> None:
    assert segments.TOC_VERSION == whoosh.index._CURRENT_TOC_VERSION
    assert frozenset(analysis.schema().names()) == fields.SCHEMA_FIELDS
    assert fields.INDEX_NAME == analysis.INDEX_NAME
    assert (0, *(byte_to_length(b) for b in range(1, 256))) == segments.LENGTH_OF_BYTE


WORDISH = st.text(
    st.characters(codec="utf-8") | st.sampled_from("_-'. \n"),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(
    text=WORDISH
    | st.lists(st.sampled_from(["Revenue", "churning", "total_revenue", "ſ"])).map(" ".join)
)
def test_query_terms_are_the_index_analyzers(text: str) -> None:
    seen: dict[str, None] = {}
    for token in analysis.analyzer()(text):
        seen.setdefault(token.text, None)
    assert fields.query_terms(text) == list(seen)
