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

import contextlib
import hashlib
import heapq
import io
import json
import math
import pickle
import re
import shutil
import zlib
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import fields, index
from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter
from whoosh.analysis.analyzers import Analyzer
from whoosh.filedb.filestore import FileStorage
from whoosh.util import random_name

from knowl_build.errors import ArtifactError, KnowlError

# --- safe loading: Whoosh stores parts of an index as pickles ----------------------------
#
# An artifact may come from elsewhere (CI of another repository, a peer), so no byte of it may
# make the reader run code (SPEC 9). Whoosh unpickles in two kinds of places, each with its
# own exact allowlist of `(module, qualified name)` pairs, resolved here and never imported:
#
# - the TOC's segment list: the two segment classes and the `defaultdict(int)` of field
#   lengths. The segment classes map to stand-ins that only record their state, which is
#   checked field by field; genuine `W3Segment`s are then built from the checked values, so
#   a crafted TOC never calls whoosh code, never sets an attribute of a whoosh class, and
#   never names a file (segment ids become file names).
# - everything else (posting blocks and their headers, stored fields, columns, compound
#   directories, positions): plain containers only, no global at all.
#
# The stored schema is never unpickled: every index is opened with `schema()`.
# The allowlists were derived by recording every `find_class` call while writing and reading
# full, incremental (deletions, merges, several segments) indexes of real projects.


class UnsafePickle(pickle.UnpicklingError):
    """A pickle in an index file names something knowl does not load."""


class BadIndex(ValueError):
    """An index file decodes, but not to what knowl writes."""


class _StandIn:
    """Records the state a pickle gives a whoosh object; nothing else runs.

    `__setstate__` receives the state of BUILD; applied to the class itself (BUILD on a
    global), it fails for want of an instance, so no class attribute is ever set."""

    __slots__ = ("state",)

    def __setstate__(self, state: object) -> None:
        self.state = state


class _SegmentState(_StandIn):
    __slots__ = ()


class _CodecState(_StandIn):
    __slots__ = ()


_TOC_GLOBALS: dict[tuple[str, str], Any] = {
    ("whoosh.codec.whoosh3", "W3Segment"): _SegmentState,
    ("whoosh.codec.whoosh3", "W3Codec"): _CodecState,
    ("collections", "defaultdict"): defaultdict,
    ("builtins", "int"): int,
}
_DATA_GLOBALS: dict[tuple[str, str], Any] = {}


def _shown(name: str) -> str:
    """A name from a file, safe to print on one line."""
    return repr(name[:80] + ("..." if len(name) > 80 else ""))


class _RestrictedUnpickler(pickle.Unpickler):
    """Admits the exact `(module, name)` pairs of one allowlist; anything else is refused."""

    def __init__(self, file: Any, admitted: Mapping[tuple[str, str], Any]) -> None:
        super().__init__(file)
        self._globals = admitted

    def find_class(self, module: str, name: str) -> Any:
        # Protocols 0-2 spell builtins `__builtin__`; dotted names (protocol 4) and private
        # names are never admitted, whatever the module.
        module = "builtins" if module == "__builtin__" else module
        found = self._globals.get((module, name))
        if found is None or "." in name or name.startswith("_"):
            raise UnsafePickle(
                f"an index file refers to {_shown(f'{module}.{name}')}, which knowl never loads"
            )
        return found


def safe_loads(data: bytes, **_kwargs: Any) -> Any:
    return _RestrictedUnpickler(io.BytesIO(data), _DATA_GLOBALS).load()


def safe_load(handle: Any, **_kwargs: Any) -> Any:
    return _RestrictedUnpickler(handle, _DATA_GLOBALS).load()


class _PickleShim:
    """Stands in for the `pickle` module inside Whoosh modules that call `pickle.loads`."""

    loads = staticmethod(safe_loads)
    load = staticmethod(safe_load)
    dumps = staticmethod(pickle.dumps)
    dump = staticmethod(pickle.dump)
    PicklingError = pickle.PicklingError
    UnpicklingError = pickle.UnpicklingError


# A posting block holds at most a few hundred postings; a "block" that inflates past this is
# a zip bomb, not an index.
MAX_BLOCK_BYTES = 64 << 20


def _bounded_decompress(data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, MAX_BLOCK_BYTES)
    if inflater.unconsumed_tail:
        raise BadIndex(f"a posting block inflates beyond {MAX_BLOCK_BYTES} bytes")
    return out


class _ZlibShim:
    """whoosh3's `zlib`, with a bound on what one block may inflate to."""

    compress = staticmethod(zlib.compress)
    decompress = staticmethod(_bounded_decompress)
    error = zlib.error


SEGMENT_ID = re.compile(r"[a-z0-9]{1,64}")
_SEGMENT_KEYS = frozenset(
    {"indexname", "segid", "_codec", "_doccount", "_deleted", "compound", "_fieldlengths"}
)
_CODEC_KEYS = frozenset({"_blocklimit", "_compression", "_inlinelimit"})
MAX_SEGMENTS = 4096
MAX_DOCS = 1 << 31


def _int_in(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _state(obj: object, kind: type[_StandIn], keys: frozenset[str], what: str) -> dict[str, Any]:
    state = getattr(obj, "state", None) if type(obj) is kind else None
    if type(state) is not dict or set(state) != keys:
        raise BadIndex(f"the index's table of contents holds a malformed {what}")
    return state


def _codec(obj: object) -> Any:
    from whoosh.codec.whoosh3 import W3Codec

    state = _state(obj, _CodecState, _CODEC_KEYS, "codec")
    limits = (state["_blocklimit"], state["_compression"], state["_inlinelimit"])
    if not (
        _int_in(limits[0], 1, 1 << 16) and _int_in(limits[1], -1, 9) and _int_in(limits[2], 0, 1)
    ):
        raise BadIndex("the index's table of contents holds codec settings knowl never writes")
    return W3Codec(*limits)


def _segment(obj: object, fields: frozenset[str]) -> Any:
    """A genuine W3Segment built from checked values of a stand-in's state."""
    from whoosh.codec.whoosh3 import W3Segment

    state = _state(obj, _SegmentState, _SEGMENT_KEYS, "segment")
    segid, count, deleted = state["segid"], state["_doccount"], state["_deleted"]
    lengths, compound = state["_fieldlengths"], state["compound"]
    if (
        state["indexname"] != INDEX_NAME
        or type(segid) is not str
        or not SEGMENT_ID.fullmatch(segid)
    ):
        raise BadIndex("the index's table of contents names a segment knowl never writes")
    if not _int_in(count, 0, MAX_DOCS) or type(compound) is not bool:
        raise BadIndex(f"segment {segid}: malformed document count or layout")
    if deleted is not None and not (
        type(deleted) in (set, frozenset) and all(_int_in(d, 0, count - 1) for d in deleted)
    ):
        raise BadIndex(f"segment {segid}: malformed deleted documents")
    if type(lengths) not in (dict, defaultdict) or not all(
        type(k) is str and k in fields and _int_in(v, 0, 1 << 62) for k, v in lengths.items()
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
        loaded = _RestrictedUnpickler(handle, _TOC_GLOBALS).load()
    except UnsafePickle:
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
    from whoosh.index import _CURRENT_TOC_VERSION, EmptyIndexError, IndexVersionError
    from whoosh.system import _FLOAT_SIZE, _INT_SIZE, _LONG_SIZE

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
    import whoosh.codec.whoosh3
    import whoosh.columns
    import whoosh.filedb.fileindex
    import whoosh.filedb.structfile
    import whoosh.formats
    import whoosh.index
    import whoosh.legacy

    for module in (whoosh.codec.whoosh3, whoosh.columns, whoosh.formats):
        module.loads = safe_loads
    whoosh.filedb.structfile.load = safe_load
    whoosh.index.pickle = _PickleShim
    whoosh.filedb.fileindex.pickle = _PickleShim
    whoosh.index.TOC.read = classmethod(_read_toc)
    # The version -110 loader unpickles the stored schema with an unrestricted unpickler.
    whoosh.legacy.toc_loaders.clear()
    whoosh.index.toc_loaders.clear()
    whoosh.codec.whoosh3.zlib = _ZlibShim


_restrict_whoosh_unpickling()


def _framed_dumps(obj: Any, protocol: int | None = None) -> bytes:
    """Whoosh writes its pickles with protocol 2; protocol 5 frames them, so the restricted
    unpickler reads a posting block in one call instead of one per opcode (about 3x faster)."""
    return pickle.dumps(obj, 5)


def _frame_whoosh_pickles() -> None:
    import whoosh.codec.whoosh3

    whoosh.codec.whoosh3.dumps = _framed_dumps


_frame_whoosh_pickles()


# --- turning whatever whoosh raises into one ArtifactError ----------------------------------


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cause(exc: BaseException) -> BaseException:
    """The UnsafePickle or BadIndex behind an exception whoosh wrapped, else the exception."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, UnsafePickle | BadIndex):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return exc


def index_problem(exc: BaseException) -> str:
    """One line saying why the index cannot be read."""
    cause = _cause(exc)
    if isinstance(cause, UnsafePickle | BadIndex):
        return _one_line(str(cause))
    return _one_line(f"the index is damaged ({type(cause).__name__}: {cause})")


@contextlib.contextmanager
def reading(folder: Path) -> Iterator[None]:
    """Whatever a damaged or hostile index makes whoosh raise (struct.error, zlib.error,
    TypeError, ...) becomes one ArtifactError naming the folder."""
    try:
        yield
    except KnowlError:
        raise
    except Exception as exc:  # crafted bytes can make whoosh raise anything
        raise ArtifactError(f"{folder}: {index_problem(exc)}") from None


class _TrackedStorage(FileStorage):  # type: ignore[misc]
    """A FileStorage that remembers the files it (and its temporary storage) opens: whoosh
    leaves them open when a read or a write fails half-way, so `close_files` closes them."""

    def __init__(self, folder: str, *, readonly: bool, opened: list[Any] | None = None) -> None:
        super().__init__(folder, readonly=readonly)
        self.opened: list[Any] = [] if opened is None else opened

    def open_file(self, name: str, **kwargs: Any) -> Any:
        handle = super().open_file(name, **kwargs)
        self.opened.append(handle)
        return handle

    def create_file(self, name: str, **kwargs: Any) -> Any:
        handle = super().create_file(name, **kwargs)
        self.opened.append(handle)
        return handle

    def temp_storage(self, name: str | None = None) -> Any:
        folder = Path(self.folder) / (name or f"{random_name()}.tmp")
        return _TrackedStorage(str(folder), readonly=False, opened=self.opened).create()

    def close_files(self) -> None:
        for handle in self.opened:
            if not handle.is_closed:
                handle.close()
        self.opened.clear()


def open_index(folder: Path, *, readonly: bool = True) -> Any:
    """The index in `folder`, opened with knowl's schema (never the stored one)."""
    from whoosh.index import FileIndex

    storage = _TrackedStorage(str(folder), readonly=readonly)
    try:
        return FileIndex(storage, schema=schema(), indexname=INDEX_NAME)
    except BaseException:
        storage.close_files()
        raise


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


def _has_index(folder: Path) -> bool:
    return any(folder.glob(f"_{INDEX_NAME}_*.toc"))


def write_index(
    folder: Path,
    digests: Mapping[str, str],
    document: Callable[[str], IndexDocument],
    incremental: bool,
) -> IndexUpdate:
    """Write (or, when `incremental`, update in place) the index in `folder`.

    `digests` names every document and its content digest; `document(key)` builds the ones
    that must be (re)indexed. One writer adds documents in key order; only documents whose
    content changed are deleted and added again. A previous index that cannot be read (damaged,
    or refused by the restricted unpickler) is replaced by a full one."""
    if incremental and _has_index(folder):
        try:
            with reading(folder):
                return _write_index(folder, digests, document, incremental=True)
        except (ArtifactError, OSError, ValueError):
            shutil.rmtree(folder, ignore_errors=True)
    return _write_index(folder, digests, document, incremental=False)


def _write_index(
    folder: Path,
    digests: Mapping[str, str],
    document: Callable[[str], IndexDocument],
    incremental: bool,
) -> IndexUpdate:
    previous: dict[str, str] = {}
    if incremental:
        previous = json.loads((folder / DOCS_FILE).read_text(encoding="utf-8"))
        if not isinstance(previous, dict):
            raise BadIndex(f"{DOCS_FILE} is not a table of documents")
        ix = open_index(folder, readonly=False)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        ix = index.create_in(str(folder), schema(), indexname=INDEX_NAME)
    try:
        return _update(ix, folder, previous, digests, document)
    except BaseException:
        if isinstance(ix.storage, _TrackedStorage):
            ix.storage.close_files()
        raise


def _update(
    ix: Any,
    folder: Path,
    previous: dict[str, str],
    digests: Mapping[str, str],
    document: Callable[[str], IndexDocument],
) -> IndexUpdate:
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


# --- full validation: every pickle of the index decodes ----------------------------------


def verify_index(folder: Path) -> list[str]:
    """Problems of the index in `folder`, found by decoding every pickle in it through the
    restricted unpickler: the TOC, and in every segment every document's stored fields and
    field lengths, every term of every field with all its posting blocks (ids, weights,
    values) and positions. An empty list means no byte of the index can make a reader run
    code or fail; it says nothing about where the index came from."""
    try:
        with reading(folder):
            ix = open_index(folder)
            try:
                with ix.reader() as reader:
                    for leaf, _offset in reader.leaf_readers():
                        _walk_segment(leaf)
            finally:
                ix.storage.close_files()
    except ArtifactError as exc:
        return [str(exc).removeprefix(f"{folder}: ")]
    return []


def _walk_segment(leaf: Any) -> None:
    from whoosh.codec.whoosh3 import W3LeafMatcher

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
    if type(weights) is not array and not set(map(type, weights)) <= {float, int}:
        raise BadIndex("a posting block holds weights that are not numbers")
    fixed = fmt.fixed_value_size()
    if fixed is not None and fixed >= 0:
        return  # fixed-size values are raw bytes, never unpickled
    if not set(map(type, values)) <= {bytes}:
        raise BadIndex("a posting holds a malformed position list")
    # A value is a count, then the pickled list of position deltas.
    for value in values:
        if _POSITIONS.fullmatch(value, 4) is None and type(safe_loads(value[4:])) is not list:
            raise BadIndex("a posting holds a malformed position list")


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
        with reading(folder):
            self.ix = open_index(folder)
            try:
                self.reader = self.ix.reader()
                self.leaves = list(self.reader.leaf_readers())
            except BaseException:
                self.ix.storage.close_files()
                raise
        stats = load_stats(folder)
        self.doc_count = int(stats["doc_count"])
        count = self.doc_count or 1
        self.avg = {name: (stats["length_sums"].get(name, 0) / count) or 1 for name in TEXT_FIELDS}
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
        with reading(self.folder):
            return self._scores(terms, boosts)

    def _scores(self, terms: list[str], boosts: Mapping[str, float]) -> dict[int, float]:
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
            with reading(self.folder):
                self._keys[docnum] = str(self.reader.stored_fields(docnum)["key"])
        return self._keys[docnum]

    def docnum(self, key: str) -> int | None:
        """The live document of a page key, looked up through the `key` field."""
        with reading(self.folder):
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
