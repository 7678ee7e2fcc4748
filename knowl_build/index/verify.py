"""Full validation of an index, by knowl's own reader (`segments`): every pickle decodes
through the bounded, restricted unpickler, every posting list is well formed.

Whoosh reads a segment only after `check_segment` passed on its very bytes (`storage`)."""

from __future__ import annotations

import io
import math
import struct
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from knowl_build.core.errors import ArtifactError
from knowl_build.index.fields import SCHEMA_FIELDS, TEXT_FIELDS
from knowl_build.index.segments import Segment, open_segments, reading
from knowl_build.index.stats import check_stats, load_stats, segment_stats
from knowl_build.index.unpickler import BadIndex, safe_load

# Where a term table's items start: its magic, its hash type and two unused ints.
_TERMS_START = 13


def verify_index(folder: Path) -> list[str]:
    """Problems of the index in `folder`, found by decoding every pickle in it through the
    bounded, restricted unpickler: the TOC, and in every segment its compound directory and
    options, every document's stored fields and field lengths, every term of every field
    with all its posting blocks; and stats.json against the documents. An empty list means no byte of the
    index can make a reader (knowl's, or Whoosh's once `storage` hands it these bytes) run
    code, exhaust its memory, fail or rank with numbers that are not finite; it says nothing
    about where the index came from."""
    try:
        with reading(folder):
            files, found = open_segments(folder, SCHEMA_FIELDS)
            try:
                for segment in found:
                    if segment.facts.compound:
                        check_compound(files.read(f"{segment.prefix}.seg"), segment.facts.segid)
                    check_segment(segment)
                check_stats(load_stats(folder), segment_stats(found))
            finally:
                files.close()
    except ArtifactError as exc:
        return [str(exc).removeprefix(f"{folder}: ")]
    return []


def check_compound(data: bytes | memoryview, segid: str) -> None:
    """The two pickles at the directory's position in a compound segment file, as Whoosh's
    `CompoundStorage` reads them: the directory (which knowl's reader decodes too) and the
    options after it (which only Whoosh reads)."""
    handle = io.BytesIO(data)
    handle.seek(int.from_bytes(bytes(data[:8]), "big", signed=True))
    for _ in range(2):
        if type(safe_load(handle)) is not dict:
            raise BadIndex(f"segment {segid}: malformed compound directory")


def check_segment(segment: Segment) -> None:
    """Every pickle Whoosh would decode in `segment`, decoded by the bounded unpickler: the
    stored fields of each document (deleted ones too), the field lengths, and the postings
    of every term its term table holds, in the order Whoosh walks them (item after item, each
    term's postings found through the hash table)."""
    count = segment.doc_count
    for docnum in range(count):
        stored = segment.stored_fields(docnum)
        if not all(type(k) is str and type(v) is str for k, v in stored.items()):
            raise BadIndex(f"segment {segment.facts.segid}: malformed stored fields")
    for name in TEXT_FIELDS:
        segment.length_bytes(name)
    for field, term in _terms(segment):
        for ids, weights in segment.blocks(field, term):
            _check_postings(ids, weights, count)


def _terms(segment: Segment) -> list[tuple[str, str]]:
    """Every (field, term) of the segment's term table, item after item (as Whoosh's
    `all_terms` walks it), once the table holds nothing else Whoosh could reach: keys strictly
    ascending (as Whoosh writes them), the ordered index exactly the items' positions, and
    every hash slot pointing at an item. So every term info Whoosh can find (walking the
    items, from the ordered index, or through a hash slot) is the one `Segment.blocks` finds
    for a key listed here, and decodes."""
    terms, segid = segment.terms, segment.facts.segid
    names = {number: name for name, number in terms.fields.items()}
    found: list[tuple[str, str]] = []
    starts: list[int] = []
    keys: list[bytes] = []
    at = _TERMS_START
    while at < terms._data_end:
        key, following = terms._item(at)
        name = names.get(int.from_bytes(key[:2], "big"))
        if name is None or following <= at or (keys and key <= keys[-1]):
            raise BadIndex(f"segment {segid}: a malformed term table")
        found.append((name, key[2:].decode("utf-8")))
        starts.append(at)
        keys.append(key)
        at = following
    size = terms._position.size
    ordered = [
        terms._position.unpack_from(terms.data, terms._positions_at + n * size)[0]
        for n in range(terms._positions)
    ]
    if ordered != starts or not _slots(terms) <= {0, *starts}:
        raise BadIndex(f"segment {segid}: a term table that points between its terms")
    return found


# A hash slot: the key's hash, the item's position (whoosh.filedb.filetables._pointer).
_SLOT = struct.Struct("!Iq")


def _slots(terms: Any) -> set[int]:
    """The item positions of every slot of the term table's 256 hash tables (which lie in
    the file, and hold no more slots than it has room for)."""
    tables = terms.tables
    if sum(count for _start, count in tables) * _SLOT.size > len(terms.data) or not all(
        start >= 0 and count >= 0 and start + count * _SLOT.size <= len(terms.data)
        for start, count in tables
    ):
        raise BadIndex("a segment's term table has hash tables beyond its end")
    return {
        _SLOT.unpack_from(terms.data, start + n * _SLOT.size)[1]
        for start, count in tables
        for n in range(count)
    }


def _check_postings(ids: Sequence[int], weights: Any, count: int) -> None:
    if ids and not (set(map(type, ids)) == {int} and min(ids) >= 0 and max(ids) < count):
        raise BadIndex("a posting block names documents the segment does not hold")
    # Ascending, as whoosh writes them: a reader tells from the first and the last document
    # whether a block holds one its caller may not see (Mask.hides).
    if ids and not (ids[0] == min(ids) and ids[-1] == max(ids)):
        raise BadIndex("a posting block's documents are out of order")
    if type(weights) not in (array, tuple) or not set(map(type, weights)) <= {float, int}:
        raise BadIndex("a posting block holds weights that are not numbers")
    if len(weights) != len(ids):
        raise BadIndex("a posting block's lengths disagree")
    # Term frequencies: a NaN, an infinity or a negative one would make scores that are not
    # numbers (sum() is NaN or infinite when any of them is).
    if weights and not (math.isfinite(sum(weights)) and min(weights) >= 0):
        raise BadIndex("a posting block holds weights that are not finite frequencies")
