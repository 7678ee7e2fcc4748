"""The table of contents Whoosh reads: rebuilt by knowl from the segment list its own reader
checked value by value, so that Whoosh never unpickles a byte of a TOC it did not write."""

from __future__ import annotations

import io
from collections import defaultdict
from typing import Any

import whoosh
from whoosh.codec.whoosh3 import W3Codec, W3Segment
from whoosh.filedb.structfile import StructFile
from whoosh.index import _CURRENT_TOC_VERSION
from whoosh.system import _FLOAT_SIZE, _INT_SIZE, _LONG_SIZE

from knowl_build.index.fields import INDEX_NAME, SCHEMA_FIELDS
from knowl_build.index.segments import SegmentFacts, read_toc


def _segment(facts: SegmentFacts) -> Any:
    """A genuine W3Segment built from a segment's checked values."""

    segment = W3Segment(
        W3Codec(*facts.codec),
        INDEX_NAME,
        facts.doc_count,
        facts.segid,
        None if facts.deleted is None else set(facts.deleted),
    )
    segment.compound = facts.compound
    segment._fieldlengths = defaultdict(int, facts.field_lengths)
    return segment


def rebuilt_toc(data: bytes, generation: int) -> tuple[bytes, list[SegmentFacts]]:
    """A TOC file's bytes as Whoosh's `TOC.write` lays them out, its segments those `data`
    lists once `segments.read_toc` checked them, pickled here from genuine W3Segments; the
    stored schema left empty (every index is opened with knowl's schema, and Whoosh skips
    the stored one unread). Returns the bytes and the checked segments."""
    facts = read_toc(data, generation, SCHEMA_FIELDS)
    buffer = io.BytesIO()
    stream = StructFile(buffer)
    for size in (_INT_SIZE, _LONG_SIZE, _FLOAT_SIZE):
        stream.write_varint(size)
    stream.write_int(-12345)
    stream.write_int(_CURRENT_TOC_VERSION)
    for number in whoosh.__version__[:3]:
        stream.write_varint(number)
    stream.write_string(b"")
    stream.write_int(generation)
    stream.write_int(0)  # unused by Whoosh
    stream.write_pickle([_segment(f) for f in facts])
    return buffer.getvalue(), facts
