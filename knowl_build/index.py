"""The Whoosh full-text index: schema, analyzer, writer, and the ranking model.

Whoosh is `whoosh3` (pinned; it imports without warnings on Python 3.11-3.13, keeps the
2.7 index format and rankings); everything Whoosh-specific stays in this module.

Ranking is BM25F (Whoosh's per-field BM25, fields weighted by the boosts recorded in the
artifact) with collection statistics over the *live* documents *the caller may see* only:
the document count, each term's document frequency (deleted documents, and those in scopes
the caller may not see, are left out at query time) and the summed field lengths (kept per
scope in `index/stats.json`, written by the build). Whoosh itself counts deleted documents
until a merge, so without this an incrementally updated index would rank slightly
differently from a full build; and statistics over every scope would let one user's pages
change another user's scores. With it, both rank identically, and nothing of a user's pages
reaches anyone else's ranking.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import io
import json
import math
import os
import pickle
import re
import shutil
import struct
import zlib
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter
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
# make the reader run code or exhaust its memory (SPEC 9). Whoosh unpickles in two kinds of
# places, each with its own exact allowlist of `(module, qualified name)` pairs, resolved here
# and never imported:
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
#
# Two unpicklers apply them. CPython's C unpickler keeps its memo in an array sized by the
# largest memo index a pickle names, so a 9-byte pickle (`LONG_BINPUT 2**29`) makes it
# allocate gigabytes. So an index from elsewhere is decoded by `_BoundedUnpickler` (the
# pure-Python unpickler, whose memo is a dict) with bounds: every length checked against the
# input that remains, at most MAX_PICKLE_OPS operations, memo indexes below that. Whatever it
# accepts is bounded under the C unpickler too, and read alike, so the C one
# (`_FastUnpickler`, about ten times faster) reads only index files the full validation
# decoded with the bounded one, in the state it decoded them (`Searcher(validated=...)`): a
# reader of a validated artifact keeps the speed of search, and the TOC, read on every open,
# is always bounded.


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

_TRUNCATED = "an index pickle announces more bytes than it holds"
# A frame only says how much to buffer. CPython's C unpickler trusts it (it buffers that much
# and misreads an operation that crosses the frame's end), its pure-Python one refuses such a
# pickle. The bounded unpickler reads the operations straight from the input and refuses any
# operation that crosses the end of a frame, and a frame that starts inside another: what it
# accepts, the C unpickler reads alike.
_FRAMING = "an index pickle has an operation across the end of a frame"

# Operations in one pickle. The largest whoosh writes for a knowl page is a position list
# (one operation per occurrence of a term in a body of at most `max_body_chars`, 200,000 by
# default); a TOC of MAX_SEGMENTS segments takes about 40 per segment.
MAX_PICKLE_OPS = 1 << 18


def _shown(name: str) -> str:
    """A name from a file, safe to print on one line."""
    return repr(name[:80] + ("..." if len(name) > 80 else ""))


def _admitted(admitted: Mapping[tuple[str, str], Any], module: str, name: str) -> Any:
    """The object an allowlist maps `(module, name)` to; anything else is refused."""
    # Protocols 0-2 spell builtins `__builtin__`; dotted names (protocol 4) and private
    # names are never admitted, whatever the module.
    module = "builtins" if module == "__builtin__" else module
    found = admitted.get((module, name))
    if found is None or "." in name or name.startswith("_"):
        raise UnsafePickle(
            f"an index file refers to {_shown(f'{module}.{name}')}, which knowl never loads"
        )
    return found


class _FastUnpickler(pickle.Unpickler):
    """CPython's C unpickler with an exact-pair allowlist: only for bytes that
    `_BoundedUnpickler` accepted (its memo is an array as long as the largest memo index)."""

    def __init__(self, file: Any, admitted: Mapping[tuple[str, str], Any]) -> None:
        super().__init__(file)
        self._globals = admitted

    def find_class(self, module: str, name: str) -> Any:
        return _admitted(self._globals, module, name)


class _Stopped(Exception):
    """STOP: the pickle's value."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


def _unpack(fmt: str, data: bytes) -> int:
    value: int = struct.unpack(fmt, data)[0]
    return value


def _stop(self: _BoundedUnpickler) -> None:
    raise _Stopped(self.stack.pop())


def _frame(self: _BoundedUnpickler) -> None:
    raise BadIndex(_FRAMING)  # both loops read frames themselves


def _counted(fmt: str, make: Callable[[bytes], Any]) -> Callable[[_BoundedUnpickler], None]:
    """The loader of an operation whose argument is a byte count (`fmt`), then the bytes."""
    width = struct.calcsize(fmt)

    def load(self: _BoundedUnpickler) -> None:
        self.append(make(self.read(self.within(_unpack(fmt, self.read(width))))))

    return load


def _put(self: _BoundedUnpickler, index: int) -> None:
    if not 0 <= index < MAX_PICKLE_OPS:
        raise BadIndex(f"an index pickle names a memo index beyond {MAX_PICKLE_OPS}")
    self.memo[index] = self.stack[-1]


_DOUBLE = struct.Struct(">d")
_UINT16 = struct.Struct("<H")
_UINT32 = struct.Struct("<I")
_UINT64 = struct.Struct("<Q")


def _build(self: _BoundedUnpickler) -> None:
    # BUILD sets the state of a stand-in (it has `__setstate__`); on anything else the C
    # unpickler refuses some states that the pure-Python one ignores: refuse them all.
    state = self.stack.pop()
    setstate = getattr(self.stack[-1], "__setstate__", None)
    if setstate is None:
        raise BadIndex("an index pickle sets the state of a plain value")
    setstate(state)


def _text(data: bytes) -> str:
    return str(data, "utf-8", "surrogatepass")


# The pure-Python unpickler's operations, with every length and memo index bounded.
_BOUNDED_DISPATCH: dict[int, Callable[[Any], None]] = {
    **pickle._Unpickler.dispatch,
    pickle.STOP[0]: _stop,
    pickle.FRAME[0]: _frame,
    pickle.BUILD[0]: _build,
    pickle.BINBYTES[0]: _counted("<I", bytes),
    pickle.BINBYTES8[0]: _counted("<Q", bytes),
    pickle.BYTEARRAY8[0]: _counted("<Q", bytearray),
    pickle.BINUNICODE[0]: _counted("<I", _text),
    pickle.BINUNICODE8[0]: _counted("<Q", _text),
    pickle.BINSTRING[0]: _counted("<i", lambda data: data.decode("ascii")),
    pickle.LONG4[0]: _counted("<i", pickle.decode_long),
    pickle.PUT[0]: lambda self: _put(self, int(self.readline()[:-1])),
    pickle.LONG_BINPUT[0]: lambda self: _put(self, _unpack("<I", self.read(4))),
}


class _BoundedUnpickler(pickle._Unpickler):
    """The pure-Python unpickler with an exact-pair allowlist and bounds: no length beyond the
    input that remains, at most MAX_PICKLE_OPS operations (each allocates a bounded amount),
    memo indexes below MAX_PICKLE_OPS (so that `_FastUnpickler` may read what this one
    accepted). Reads from the file's position and leaves it just after STOP, as whoosh
    expects of `StructFile.read_pickle`."""

    memo: dict[int, Any]
    stack: list[Any]
    metastack: list[list[Any]]
    read: Callable[[int], bytes]
    readline: Callable[[], bytes]
    append: Callable[[Any], None]
    proto: int

    def __init__(
        self, file: Any, admitted: Mapping[tuple[str, str], Any], data: bytes | None = None
    ) -> None:
        """`data`, when given, is what the BytesIO `file` holds (read without a copy)."""
        super().__init__(file)
        self._file = file
        self._data = data
        self._globals = admitted
        here = file.tell()
        self._end: int = file.seek(0, io.SEEK_END)
        file.seek(here)

    def find_class(self, module: str, name: str) -> Any:
        return _admitted(self._globals, module, name)

    def within(self, size: int) -> int:
        """`size`, when that many bytes remain in the input (a negative size never does)."""
        if not 0 <= size <= self._end - self._file.tell():
            raise BadIndex(_TRUNCATED)
        return size

    def load(self) -> Any:
        self.read = self._file.read
        self.readline = self._file.readline
        self.metastack = []
        self.stack = []
        self.append = self.stack.append
        self.proto = 0
        try:
            if isinstance(self._file, io.BytesIO):
                if self._data is not None:
                    self._run_view(self._data, self._file)
                else:
                    self._run_buffer(self._file)
            else:
                self._run_stream()
        except _Stopped as stop:
            return stop.value
        raise BadIndex(f"an index pickle has more than {MAX_PICKLE_OPS} operations")

    def _run_stream(self) -> None:
        read, tell, dispatch = self.read, self._file.tell, _BOUNDED_DISPATCH
        frame_end = 0
        for _ in range(MAX_PICKLE_OPS):
            start = tell()
            key = read(1)
            if not key:
                raise EOFError
            if key[0] == 0x95:  # FRAME (see _FRAMING)
                if start < frame_end:
                    raise BadIndex(_FRAMING)
                size = self.within(_unpack("<Q", read(8)))
                frame_end = tell() + size
                continue
            dispatch[key[0]](self)
            if start < frame_end < tell():
                raise BadIndex(_FRAMING)

    def _run_buffer(self, file: io.BytesIO) -> None:
        """`_run_stream` over a buffer, with the operations of posting blocks inlined (about
        twice as fast); any other operation is the dispatch table's, reading from `file`."""
        data = file.getbuffer()
        try:
            self._run_view(data, file)
        finally:
            data.release()

    def _run_view(self, data: bytes | memoryview, file: io.BytesIO) -> None:
        at, end, frame_end = file.tell(), len(data), 0
        memo, dispatch = self.memo, _BOUNDED_DISPATCH
        stack, append = self.stack, self.append
        for _ in range(MAX_PICKLE_OPS):
            start = at
            op = data[at]  # IndexError past the end
            at += 1
            if op == 0x94:  # MEMOIZE
                memo[len(memo)] = stack[-1]
            elif op == 0x4B:  # BININT1
                append(data[at])
                at += 1
            elif op == 0x47:  # BINFLOAT
                append(_DOUBLE.unpack_from(data, at)[0])
                at += 8
            elif op == 0x43:  # SHORT_BINBYTES
                size = data[at]
                if at + 1 + size > end:
                    raise BadIndex(_TRUNCATED)
                append(bytes(data[at + 1 : at + 1 + size]))
                at += 1 + size
            elif op == 0x4D:  # BININT2
                append(_UINT16.unpack_from(data, at)[0])
                at += 2
            elif op == 0x28:  # MARK
                self.metastack.append(stack)
                self.stack = stack = []
                self.append = append = stack.append
            elif op == 0x74:  # TUPLE
                items = tuple(stack)
                self.stack = stack = self.metastack.pop()
                self.append = append = stack.append
                append(items)
            elif op == 0x4E:  # NONE
                append(None)
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x86:  # TUPLE2
                stack[-2:] = [(stack[-2], stack[-1])]
            elif op == 0x87:  # TUPLE3
                stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
            elif op == 0x71:  # BINPUT (an index below 256)
                memo[data[at]] = stack[-1]
                at += 1
            elif op == 0x58:  # BINUNICODE
                size = _UINT32.unpack_from(data, at)[0]
                at += 4
                if at + size > end:
                    raise BadIndex(_TRUNCATED)
                append(str(data[at : at + size], "utf-8", "surrogatepass"))
                at += size
            elif op == 0x95:  # FRAME (see _FRAMING)
                if start < frame_end:
                    raise BadIndex(_FRAMING)
                size = _UINT64.unpack_from(data, at)[0]
                at += 8
                if at + size > end:
                    raise BadIndex(_TRUNCATED)
                frame_end = at + size
            elif op == 0x80:  # PROTO
                self.proto = data[at]
                at += 1
                if self.proto > pickle.HIGHEST_PROTOCOL:
                    raise pickle.UnpicklingError(f"unsupported pickle protocol {self.proto}")
            elif op == 0x2E:  # STOP: leave the file just after it
                file.seek(at)
                raise _Stopped(stack.pop())
            else:
                file.seek(at)
                dispatch[op](self)
                at = file.tell()
                stack, append = self.stack, self.append
            if start < frame_end < at:
                raise BadIndex(_FRAMING)


# Set while a Searcher reads an index that the full validation decoded in this state.
_VALIDATED: ContextVar[bool] = ContextVar("knowl_index_validated", default=False)


def safe_loads(data: bytes, **_kwargs: Any) -> Any:
    if _VALIDATED.get():
        return _FastUnpickler(io.BytesIO(data), _DATA_GLOBALS).load()
    return _BoundedUnpickler(io.BytesIO(data), _DATA_GLOBALS, bytes(data)).load()


def safe_load(handle: Any, **_kwargs: Any) -> Any:
    if _VALIDATED.get():
        return _FastUnpickler(handle, _DATA_GLOBALS).load()
    return _BoundedUnpickler(handle, _DATA_GLOBALS).load()


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
        loaded = _BoundedUnpickler(handle, _TOC_GLOBALS).load()
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


class _Reading:
    """`reading(folder)` for a Searcher (a class: a query enters it several times), which also
    says whether this index was validated as it is (`_VALIDATED`)."""

    __slots__ = ("folder", "token", "validated")

    def __init__(self, folder: Path, validated: bool) -> None:
        self.folder, self.validated = folder, validated

    def __enter__(self) -> None:
        self.token = _VALIDATED.set(self.validated)

    def __exit__(self, kind: object, exc: BaseException | None, _tb: object) -> None:
        _VALIDATED.reset(self.token)
        if isinstance(exc, Exception) and not isinstance(exc, KnowlError):
            raise ArtifactError(f"{self.folder}: {index_problem(exc)}") from None


# How artifacts' validation memo identifies a file: size, mtime_ns, ctime_ns, inode. Any write
# to a file changes its ctime, which no user can set back.
Identity = tuple[int, int, int, int]


def _identity(handle: Any) -> Identity | None:
    try:
        info = os.fstat(handle.file.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


class _TrackedStorage(FileStorage):  # type: ignore[misc]
    """A FileStorage that remembers the files it (and its temporary storage) opens: whoosh
    leaves them open when a read or a write fails half-way, so `close_files` closes them.

    With `expected` (file name -> Identity, as the full validation saw each file), every file
    opened must be that very file: one that changed since is refused."""

    def __init__(
        self,
        folder: str,
        *,
        readonly: bool,
        opened: list[Any] | None = None,
        expected: Mapping[str, Identity] | None = None,
    ) -> None:
        super().__init__(folder, readonly=readonly)
        self.opened: list[Any] = [] if opened is None else opened
        self.expected = expected

    def open_file(self, name: str, **kwargs: Any) -> Any:
        handle = super().open_file(name, **kwargs)
        self.opened.append(handle)
        if self.expected is not None and self.expected.get(name) != _identity(handle):
            raise BadIndex(f"{_shown(name)} changed after it was validated; run the command again")
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


def open_index(
    folder: Path, *, readonly: bool = True, expected: Mapping[str, Identity] | None = None
) -> Any:
    """The index in `folder`, opened with knowl's schema (never the stored one); with
    `expected`, only files identical to those the full validation decoded (`_TrackedStorage`)."""
    from whoosh.index import FileIndex

    storage = _TrackedStorage(str(folder), readonly=readonly, expected=expected)
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


def _deleted(leaf: Any) -> frozenset[int]:
    return frozenset(leaf.deleted_docs_set) if leaf.has_deletions() else frozenset()


class _Mask:
    """The documents of a segment a caller may see: one byte per document (1: visible), and
    the hidden ones in order, so that a block of postings (whose documents ascend, as the full
    validation checks) is known to hide none with two comparisons. Pages are indexed in path
    order, so each user's pages lie together: most blocks hide none."""

    __slots__ = ("hidden", "mask")

    def __init__(self, size: int, hidden: frozenset[int]) -> None:
        mask = bytearray(b"\x01") * size
        for doc in hidden:
            mask[doc] = 0
        self.mask = bytes(mask)
        self.hidden = sorted(hidden)

    def hides(self, first: int, last: int) -> bool:
        """Whether a document from `first` to `last` is hidden."""
        at = bisect_left(self.hidden, first)
        return at < len(self.hidden) and self.hidden[at] <= last


def _mask(size: int, hidden: frozenset[int]) -> _Mask | None:
    """What a caller may see of a segment; None when nothing is hidden."""
    return _Mask(size, hidden) if hidden else None


def _sums(rows: list[list[int]]) -> dict[str, Any]:
    sums = [sum(column) for column in zip(*rows, strict=True)] if rows else [0] * len(TEXT_FIELDS)
    return {"doc_count": len(rows), "length_sums": dict(zip(TEXT_FIELDS, sums, strict=True))}


def collection_stats(reader: Any) -> dict[str, Any]:
    """`index/stats.json`: the live documents' count and summed (stored) field lengths, and
    the same per scope (`scopes`, added in 1.x): a reader ranks with the statistics of the
    scopes its caller may see, so that no page of another user changes a score (SPEC 6.2)."""
    rows: dict[str, list[list[int]]] = {}
    everything: list[list[int]] = []
    for leaf, _offset in reader.leaf_readers():
        deleted = _deleted(leaf)
        live = _mask(leaf.doc_count_all(), deleted)
        scope_of: dict[int, str] = {}
        for scope in leaf.field_terms("scope"):
            for doc, _weight in _postings(leaf, "scope", scope, live):
                if scope_of.setdefault(doc, scope) != scope:
                    raise BadIndex(f"segment {leaf.segment().segid}: a document in two scopes")
        lengths = [leaf._perdoc.doc_field_length_reader(name, 0) for name in TEXT_FIELDS]
        for docnum in range(leaf.doc_count_all()):
            if docnum in deleted:
                continue
            if docnum not in scope_of:
                raise BadIndex(f"segment {leaf.segment().segid}: a document without a scope")
            row = [length(docnum) or 0 for length in lengths]
            everything.append(row)
            rows.setdefault(scope_of[docnum], []).append(row)
    stats = _sums(everything)
    stats["scopes"] = {scope: _sums(rows[scope]) for scope in sorted(rows)}
    return stats


def _stats(ix: index.Index) -> dict[str, Any]:
    with ix.reader() as reader:
        return collection_stats(reader)


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


_MAX_COUNT = 1 << 53


def _counts(entry: object) -> bool:
    """An entry of stats.json: `{"doc_count", "length_sums"}` with whole numbers."""
    if type(entry) is not dict or not _int_in(entry.get("doc_count"), 0, _MAX_COUNT):
        return False
    sums = entry.get("length_sums")
    return type(sums) is dict and all(_int_in(sums.get(f), 0, _MAX_COUNT) for f in TEXT_FIELDS)


def _total(entries: Iterable[dict[str, Any]]) -> tuple[int, ...]:
    """The document count and the length sums of `entries`, added up."""
    rows = [(e["doc_count"], *(e["length_sums"][f] for f in TEXT_FIELDS)) for e in entries]
    return tuple(sum(column) for column in zip(*rows, strict=True)) if rows else (0,) * 5


def load_stats(folder: Path) -> dict[str, Any]:
    """`index/stats.json`, checked: whole numbers, and per-scope entries (when present, as
    written since 1.x) that add up to the totals. BadIndex otherwise."""
    try:
        stats = json.loads((folder / STATS_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        raise BadIndex(f"{STATS_FILE} is unreadable") from None
    scopes = stats.get("scopes", {}) if type(stats) is dict else None
    if not (
        _counts(stats)
        and type(scopes) is dict
        and all(type(name) is str and _counts(entry) for name, entry in scopes.items())
    ):
        raise BadIndex(f"{STATS_FILE} is malformed")
    if "scopes" in stats and _total(scopes.values()) != _total([stats]):
        raise BadIndex(f"{STATS_FILE}: the scopes' statistics do not add up to the totals")
    return stats  # type: ignore[no-any-return]


def _check_stats(stats: dict[str, Any], actual: dict[str, Any]) -> None:
    """stats.json holds what the build computes from the index it describes."""
    if _total([stats]) != _total([actual]):
        raise BadIndex(f"{STATS_FILE} disagrees with the index's documents")
    if "scopes" in stats and {k: _total([v]) for k, v in stats["scopes"].items()} != {
        k: _total([v]) for k, v in actual["scopes"].items()
    }:
        raise BadIndex(f"{STATS_FILE} disagrees with the index's scopes")


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
                    _check_stats(load_stats(folder), collection_stats(reader))
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
    # Ascending, as whoosh writes them: a reader tells from the first and the last document
    # whether a block holds one its caller may not see (_Mask.hides).
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


# --- ranking ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    key: str
    score: float


K1 = 1.2
B = 0.75
# Callers (sets of visible scopes) whose statistics and length norms an open Searcher keeps.
MAX_VIEWS = 16


def _postings(leaf: Any, field: str, term: str, visible: _Mask | None) -> list[tuple[int, float]]:
    """A term's (document, frequency) pairs in one segment, read block by block, of the
    documents `visible` lets through (not deleted, in a scope the caller may see; None: all).
    A block whose range of documents holds no hidden one is taken whole; in another, the mask
    is applied by `compress` (no Python step per posting either way). whoosh3 is pinned
    exactly, so these private reader APIs are stable for us."""
    if (field, term) not in leaf:
        return []
    matcher = leaf._terms.matcher(
        field, leaf._text_to_bytes(field, term), leaf.schema[field].format
    )
    pairs: list[tuple[int, float]] = []
    while not matcher._atend:
        matcher._read_ids()
        matcher._read_weights()
        ids = matcher._ids
        block = zip(ids, matcher._weights, strict=False)
        if visible is None or not visible.hides(ids[0], ids[-1]):
            pairs.extend(block)
        elif len(ids) == 1:
            pairs.extend(block if visible.mask[ids[0]] else ())
        else:
            pairs.extend(compress(block, itemgetter(*ids)(visible.mask)))
        matcher._next_block()
    return pairs


@dataclass(slots=True)
class _View:
    """The index as one caller sees it: per segment a mask of the documents it may see (live,
    in its scopes; None: all), their number, their average field lengths, and (filled on
    first use) each document's length norm per field."""

    visible: list[_Mask | None]
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

    def _reading(self) -> _Reading:
        """`reading`, with the C unpickler when this index was validated as it is."""
        return _Reading(self.folder, self._validated)

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
        visible: list[_Mask | None] = []
        count = 0
        for leaf, _offset in self.leaves:
            size, deleted = leaf.doc_count_all(), _deleted(leaf)
            live = _mask(size, deleted)
            if scopes is None:
                visible.append(live)
                count += size - len(deleted)
                continue
            seen = {d for scope in scopes for d, _w in _postings(leaf, "scope", scope, live)}
            visible.append(_mask(size, frozenset(range(size)).difference(seen)))
            count += len(seen)
        entries = [self.stats] if scopes is None else self._scope_stats(scopes, visible)
        total = _total(entries)
        if total[0] != count:
            raise BadIndex(f"{STATS_FILE} disagrees with the index's documents")
        avg = {
            name: (total[1 + i] / count if count else 0.0) or 1.0
            for i, name in enumerate(TEXT_FIELDS)
        }
        return _View(visible, count, avg, {})

    def _scope_stats(
        self, scopes: frozenset[str], visible: list[_Mask | None]
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
        return [_sums(rows)]

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
                    (position, leaf, offset, _postings(leaf, field, term, view.visible[position]))
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

    def ranked(
        self,
        terms: list[str],
        boosts: Mapping[str, float],
        limit: int | None = None,
        scopes: Iterable[str] | None = None,
    ) -> list[Hit]:
        """Hits for OR-ed `terms` over the text fields, best first (score, then key)."""
        return self.query(terms, boosts, scopes).top(limit)


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


def search(
    folder: Path,
    text: str,
    boosts: Mapping[str, float],
    limit: int | None = None,
    scopes: Iterable[str] | None = None,
) -> list[Hit]:
    """Plain terms, OR-ed, over the text fields with boosts; score descending, then key. With
    `scopes`, only documents in them are ranked, with their statistics."""
    with Searcher(folder) as searcher:
        return searcher.ranked(query_terms(text), boosts, limit=limit, scopes=scopes)
