"""The index's table of contents: its segment list checked value by value and rebuilt, and
Whoosh's own pickling routed through the safe loaders."""

from __future__ import annotations

import pickle
from collections import defaultdict
from typing import Any

import whoosh.codec.whoosh3
import whoosh.columns
import whoosh.filedb.fileindex
import whoosh.filedb.structfile
import whoosh.formats
import whoosh.index
import whoosh.legacy
from whoosh.codec.whoosh3 import W3Codec, W3Segment
from whoosh.index import _CURRENT_TOC_VERSION, EmptyIndexError, IndexVersionError
from whoosh.system import _FLOAT_SIZE, _INT_SIZE, _LONG_SIZE

from knowl_build.index.fields import INDEX_NAME
from knowl_build.index.segments import SegmentFacts, load_segment_list
from knowl_build.index.unpickler import (
    BadIndex,
    PickleShim,
    ZlibShim,
    safe_load,
    safe_loads,
)


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


def _read_toc(
    cls: Any, storage: Any, indexname: str, gen: int | None = None, schema: Any = None
) -> Any:
    """whoosh's `TOC.read` for knowl's indexes: our schema is given, the stored one is skipped
    unread; no legacy loader (they unpickle without restriction); segments as `_load_segments`
    rebuilds them, before any segment file is opened."""

    if schema is None or indexname != INDEX_NAME:
        raise BadIndex("an index is only opened with knowl's own schema and index name")
    if gen is None:
        gen = cls._latest_generation(storage, indexname)
        if gen < 0:
            raise EmptyIndexError(f"Index {indexname!r} does not exist in {storage!r}")
    stream = storage.open_file(cls._filename(indexname, gen))
    try:
        sizes = (stream.read_varint(), stream.read_varint(), stream.read_varint())
        if sizes != (_INT_SIZE, _LONG_SIZE, _FLOAT_SIZE) or stream.read_int() != -12345:
            raise BadIndex("the index's table of contents has a foreign header")
        version = stream.read_int()
        release = (stream.read_varint(), stream.read_varint(), stream.read_varint())
        if version != _CURRENT_TOC_VERSION:
            raise IndexVersionError(f"Can't read format {version}", version)
        stream.skip_string()  # the pickled schema: never loaded
        if stream.read_int() != gen:
            raise BadIndex("the index's table of contents names another generation")
        stream.read_int()  # unused by whoosh
        segments = [_segment(f) for f in load_segment_list(stream.file, frozenset(schema.names()))]
    finally:
        stream.close()
    return cls(schema, segments, gen, version=version, release=release)


def _restrict_whoosh_unpickling() -> None:
    """Every place whoosh3 unpickles on the read path goes through a restricted unpickler
    (SPEC 9); the TOC is read by `_read_toc`; the legacy TOC loaders are gone."""

    for module in (whoosh.codec.whoosh3, whoosh.columns, whoosh.formats):
        module.loads = safe_loads
    whoosh.filedb.structfile.load = safe_load
    whoosh.index.pickle = PickleShim
    whoosh.filedb.fileindex.pickle = PickleShim
    whoosh.index.TOC.read = classmethod(_read_toc)
    # The version -110 loader unpickles the stored schema with an unrestricted unpickler.
    whoosh.legacy.toc_loaders.clear()
    whoosh.index.toc_loaders.clear()
    whoosh.codec.whoosh3.zlib = ZlibShim


def _framed_dumps(obj: Any, protocol: int | None = None) -> bytes:
    """Whoosh writes its pickles with protocol 2; protocol 5 frames them, so the restricted
    unpickler reads a posting block in one call instead of one per opcode (about 3x faster)."""
    return pickle.dumps(obj, 5)


def _frame_whoosh_pickles() -> None:

    whoosh.codec.whoosh3.dumps = _framed_dumps


def install_safe_loading() -> None:
    """Route every pickle Whoosh reads through the safe loaders, and frame the ones it
    writes. Idempotent; `storage`, through which every index is opened, calls it on import,
    so no index is read before it."""
    _restrict_whoosh_unpickling()
    _frame_whoosh_pickles()
