"""The index's table of contents: its segment list checked value by value and rebuilt, and
Whoosh's own pickling routed through the safe loaders."""

from __future__ import annotations

import pickle
import re
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

from knowl_build.index.analysis import INDEX_NAME
from knowl_build.index.unpickler import (
    TOC_GLOBALS,
    BadIndex,
    BoundedUnpickler,
    CodecState,
    PickleShim,
    SegmentState,
    StandIn,
    UnsafePickle,
    ZlibShim,
    safe_load,
    safe_loads,
)

SEGMENT_ID = re.compile(r"[a-z0-9]{1,64}")
_SEGMENT_KEYS = frozenset(
    {"indexname", "segid", "_codec", "_doccount", "_deleted", "compound", "_fieldlengths"}
)
_CODEC_KEYS = frozenset({"_blocklimit", "_compression", "_inlinelimit"})
MAX_SEGMENTS = 4096
MAX_DOCS = 1 << 31


def int_in(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _state(obj: object, kind: type[StandIn], keys: frozenset[str], what: str) -> dict[str, Any]:
    state = getattr(obj, "state", None) if type(obj) is kind else None
    if type(state) is not dict or set(state) != keys:
        raise BadIndex(f"the index's table of contents holds a malformed {what}")
    return state


def _codec(obj: object) -> Any:

    state = _state(obj, CodecState, _CODEC_KEYS, "codec")
    limits = (state["_blocklimit"], state["_compression"], state["_inlinelimit"])
    if not (int_in(limits[0], 1, 1 << 16) and int_in(limits[1], -1, 9) and int_in(limits[2], 0, 1)):
        raise BadIndex("the index's table of contents holds codec settings knowl never writes")
    return W3Codec(*limits)


def _segment(obj: object, fields: frozenset[str]) -> Any:
    """A genuine W3Segment built from checked values of a stand-in's state."""

    state = _state(obj, SegmentState, _SEGMENT_KEYS, "segment")
    segid, count, deleted = state["segid"], state["_doccount"], state["_deleted"]
    lengths, compound = state["_fieldlengths"], state["compound"]
    if (
        state["indexname"] != INDEX_NAME
        or type(segid) is not str
        or not SEGMENT_ID.fullmatch(segid)
    ):
        raise BadIndex("the index's table of contents names a segment knowl never writes")
    if not int_in(count, 0, MAX_DOCS) or type(compound) is not bool:
        raise BadIndex(f"segment {segid}: malformed document count or layout")
    if deleted is not None and not (
        type(deleted) in (set, frozenset) and all(int_in(d, 0, count - 1) for d in deleted)
    ):
        raise BadIndex(f"segment {segid}: malformed deleted documents")
    if type(lengths) not in (dict, defaultdict) or not all(
        type(k) is str and k in fields and int_in(v, 0, 1 << 62) for k, v in lengths.items()
    ):
        raise BadIndex(f"segment {segid}: malformed field lengths")
    segment = W3Segment(
        _codec(state["_codec"]), INDEX_NAME, count, segid, None if deleted is None else set(deleted)
    )
    segment.compound = compound
    segment._fieldlengths = defaultdict(int, lengths)
    return segment


def _load_segments(handle: Any, fields: frozenset[str]) -> list[Any]:
    try:
        loaded = BoundedUnpickler(handle, TOC_GLOBALS).load()
    except (UnsafePickle, BadIndex):
        raise
    except Exception as exc:  # a stand-in called with arguments, a truncated pickle, ...
        raise BadIndex(
            f"the index's table of contents does not decode ({type(exc).__name__})"
        ) from None
    if type(loaded) is not list or len(loaded) > MAX_SEGMENTS:
        raise BadIndex("the index's table of contents is not a list of segments")
    segments = [_segment(item, fields) for item in loaded]
    if len({s.segid for s in segments}) != len(segments):
        raise BadIndex("the index's table of contents names a segment twice")
    return segments


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
        segments = _load_segments(stream.file, frozenset(schema.names()))
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
