"""Full validation of an index: every pickle decodes, every posting list is well formed."""

from __future__ import annotations

import math
import re
from array import array
from pathlib import Path
from typing import Any

from whoosh.codec.whoosh3 import W3LeafMatcher

from knowl_build.errors import ArtifactError
from knowl_build.index.analysis import TEXT_FIELDS
from knowl_build.index.stats import check_stats, collection_stats, load_stats
from knowl_build.index.storage import open_index, reading
from knowl_build.index.unpickler import BadIndex, safe_loads

# --- full validation: every pickle of the index decodes ----------------------------------


def verify_index(folder: Path) -> list[str]:
    """Problems of the index in `folder`, found by decoding every pickle in it through the
    bounded, restricted unpickler: the TOC, and in every segment every document's stored
    fields and field lengths, every term of every field with all its posting blocks (ids,
    weights, values) and positions; and stats.json against the documents. An empty list means
    no byte of the index can make a reader run code, exhaust its memory, fail or rank with
    numbers that are not finite; it says nothing about where the index came from."""
    try:
        with reading(folder):
            ix = open_index(folder)
            try:
                with ix.reader() as reader:
                    for leaf, _offset in reader.leaf_readers():
                        _walk_segment(leaf)
                    check_stats(load_stats(folder), collection_stats(reader))
            finally:
                ix.storage.close_files()
    except ArtifactError as exc:
        return [str(exc).removeprefix(f"{folder}: ")]
    return []


def _walk_segment(leaf: Any) -> None:

    count = leaf.doc_count_all()
    lengths = [leaf._perdoc.doc_field_length_reader(name, 0) for name in TEXT_FIELDS]
    for docnum in range(count):
        stored = leaf.stored_fields(docnum)
        if type(stored) is not dict or not all(
            type(k) is str and type(v) is str for k, v in stored.items()
        ):
            raise BadIndex(f"segment {leaf.segment().segid}: malformed stored fields")
        for length in lengths:
            length(docnum)
    terms = leaf._terms
    codec = leaf.segment().codec()
    for (fieldname, _text), info in terms.items():
        fmt = leaf.schema[fieldname].format
        matcher = codec.postings_reader(terms._postfile, info, fmt)
        if isinstance(matcher, W3LeafMatcher):
            _walk_blocks(matcher, count)
        else:  # postings inlined in the term info
            ids, weights, values = info.inlined_postings()
            _check_postings(ids, weights, values, count, fmt)


def _walk_blocks(matcher: Any, count: int) -> None:
    while not matcher._atend:
        matcher._read_ids()
        matcher._read_weights()
        matcher._read_values()
        if not (len(matcher._ids) == len(matcher._weights) == matcher._blocklength):
            raise BadIndex("a posting block's lengths disagree")
        _check_postings(matcher._ids, matcher._weights, matcher._values, count, matcher.format)
        matcher._next_block()


# How whoosh pickles a position list (protocol 2, a list of small non-negative ints): most
# values match this, so the unpickler runs only for the others.
_POSITIONS = re.compile(rb"\x80\x02\]q\x00(?:(?:K.|M..|J....)a|\((?:K.|M..|J....)+e)*\.", re.DOTALL)


def _check_postings(ids: Any, weights: Any, values: Any, count: int, fmt: Any) -> None:
    if len(values) != len(ids) or (
        ids and not (set(map(type, ids)) == {int} and min(ids) >= 0 and max(ids) < count)
    ):
        raise BadIndex("a posting block names documents the segment does not hold")
    # Ascending, as whoosh writes them: a reader tells from the first and the last document
    # whether a block holds one its caller may not see (Mask.hides).
    if ids and not (ids[0] == min(ids) and ids[-1] == max(ids)):
        raise BadIndex("a posting block's documents are out of order")
    if type(weights) is not array and not set(map(type, weights)) <= {float, int}:
        raise BadIndex("a posting block holds weights that are not numbers")
    # Term frequencies: a NaN, an infinity or a negative one would make scores that are not
    # numbers (sum() is NaN or infinite when any of them is).
    if weights and not (math.isfinite(sum(weights)) and min(weights) >= 0):
        raise BadIndex("a posting block holds weights that are not finite frequencies")
    fixed = fmt.fixed_value_size()
    if fixed is not None and fixed >= 0:
        return  # fixed-size values are raw bytes, never unpickled
    if not set(map(type, values)) <= {bytes}:
        raise BadIndex("a posting holds a malformed position list")
    # A value is a count, then the pickled list of position deltas.
    for value in values:
        if _POSITIONS.fullmatch(value, 4) is None and type(safe_loads(value[4:])) is not list:
            raise BadIndex("a posting holds a malformed position list")
