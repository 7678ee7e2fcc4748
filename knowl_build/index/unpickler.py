"""Safe loading: Whoosh stores parts of an index as pickles; none of them may run code or
exhaust memory. A bounded unpickler with exact allowlists, through which knowl's reader
(`segments`) decodes every pickle it reads, and the full validation every pickle Whoosh
would read (`verify`, `storage`)."""

from __future__ import annotations

import io
import pickle
import struct
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

# --- safe loading: Whoosh stores parts of an index as pickles ----------------------------
#
# An artifact may come from elsewhere (CI of another repository, a peer), so no byte of it may
# make the reader run code or exhaust its memory (SPEC 9). Whoosh pickles in two kinds of
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
# The stored schema is never unpickled: every index is opened with `schema()`. Whoosh itself
# unpickles without restriction, so it reads a TOC only as knowl rebuilt it from the checked
# values, and a segment only once these unpicklers decoded every pickle in it (`storage`).
# The allowlists were derived by recording every `find_class` call while writing and reading
# full, incremental (deletions, merges, several segments) indexes of real projects.
#
# Two unpicklers apply them. CPython's C unpickler keeps its memo in an array sized by the
# largest memo index a pickle names, so a 9-byte pickle (`LONG_BINPUT 2**29`) makes it
# allocate gigabytes. So an index from elsewhere is decoded by `BoundedUnpickler` (the
# pure-Python unpickler, whose memo is a dict) with bounds: every length checked against the
# input that remains, at most MAX_PICKLE_OPS operations, memo indexes below that. Whatever it
# accepts is bounded under the C unpickler too, read alike and left at the same place (so
# the pickle read next is one it decoded: `_FRAME_END`), so the C one
# (`_FastUnpickler`, about ten times faster) reads only index files the full validation
# decoded with the bounded one, in the state it decoded them (`Searcher(validated=...)`): a
# reader of a validated artifact keeps the speed of search, and the TOC, read on every open,
# is always bounded.


class UnsafePickle(pickle.UnpicklingError):
    """A pickle in an index file names something knowl does not load."""


class BadIndex(ValueError):
    """An index file decodes, but not to what knowl writes."""


class StandIn:
    """Records the state a pickle gives a whoosh object; nothing else runs.

    `__setstate__` receives the state of BUILD; applied to the class itself (BUILD on a
    global), it fails for want of an instance, so no class attribute is ever set."""

    __slots__ = ("state",)

    def __setstate__(self, state: object) -> None:
        self.state = state


class SegmentState(StandIn):
    __slots__ = ()


class CodecState(StandIn):
    __slots__ = ()


TOC_GLOBALS: dict[tuple[str, str], Any] = {
    ("whoosh.codec.whoosh3", "W3Segment"): SegmentState,
    ("whoosh.codec.whoosh3", "W3Codec"): CodecState,
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
# Both CPython unpicklers read a frame whole, so they leave the file at the end of the frame
# that holds STOP, not just after STOP; whoever reads on from there (the options after a
# compound directory, a posting block's data after its header) would start elsewhere than
# the bounded unpickler, on bytes it never decoded. CPython's picklers end their last frame
# at STOP: a pickle whose STOP does not end its frame is refused.
_FRAME_END = "an index pickle stops before the end of its frame"

# Operations in one pickle. The largest whoosh writes for a knowl page is a position list
# (one operation per occurrence of a term in a body of at most `max_body_chars`, 200,000 by
# default); a TOC of MAX_SEGMENTS segments takes about 40 per segment.
MAX_PICKLE_OPS = 1 << 18


def shown_name(name: str) -> str:
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
            f"an index file refers to {shown_name(f'{module}.{name}')}, which knowl never loads"
        )
    return found


class _FastUnpickler(pickle.Unpickler):
    """CPython's C unpickler with an exact-pair allowlist: only for bytes that
    `BoundedUnpickler` accepted (its memo is an array as long as the largest memo index)."""

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


def _stop(self: BoundedUnpickler) -> None:
    raise _Stopped(self.stack.pop())


def _frame(self: BoundedUnpickler) -> None:
    raise BadIndex(_FRAMING)  # both loops read frames themselves


def _counted(fmt: str, make: Callable[[bytes], Any]) -> Callable[[BoundedUnpickler], None]:
    """The loader of an operation whose argument is a byte count (`fmt`), then the bytes."""
    width = struct.calcsize(fmt)

    def load(self: BoundedUnpickler) -> None:
        self.append(make(self.read(self.within(_unpack(fmt, self.read(width))))))

    return load


def _put(self: BoundedUnpickler, index: int) -> None:
    if not 0 <= index < MAX_PICKLE_OPS:
        raise BadIndex(f"an index pickle names a memo index beyond {MAX_PICKLE_OPS}")
    self.memo[index] = self.stack[-1]


_DOUBLE = struct.Struct(">d")
_UINT16 = struct.Struct("<H")
_UINT32 = struct.Struct("<I")
_UINT64 = struct.Struct("<Q")


def _build(self: BoundedUnpickler) -> None:
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


class BoundedUnpickler(pickle._Unpickler):
    """The pure-Python unpickler with an exact-pair allowlist and bounds: no length beyond the
    input that remains, at most MAX_PICKLE_OPS operations (each allocates a bounded amount),
    memo indexes below MAX_PICKLE_OPS (so that `_FastUnpickler` may read what this one
    accepted). Reads from the file's position and leaves it just after STOP, which ends its
    frame (if any), where CPython's unpicklers leave it too (`StructFile.read_pickle`)."""

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
            if key[0] == 0x2E and start < frame_end != start + 1:  # STOP (see _FRAME_END)
                raise BadIndex(_FRAME_END)
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
        memo = self.memo
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
            elif op == 0x86:  # TUPLE2
                stack[-2:] = [(stack[-2], stack[-1])]
            elif op == 0x71:  # BINPUT (an index below 256)
                memo[data[at]] = stack[-1]
                at += 1
            else:
                at, frame_end = self._view_op(op, data, at, start, frame_end, file)
                stack, append = self.stack, self.append
            if start < frame_end < at:
                raise BadIndex(_FRAMING)

    def _view_op(
        self,
        op: int,
        data: bytes | memoryview,
        at: int,
        start: int,
        frame_end: int,
        file: io.BytesIO,
    ) -> tuple[int, int]:
        """`_run_view`'s less frequent operations (STOP once per pickle): where the next one
        starts, and where the current frame ends."""
        stack = self.stack
        if op == 0x2E:  # STOP: leave the file just after it (see _FRAME_END)
            if start < frame_end != at:
                raise BadIndex(_FRAME_END)
            file.seek(at)
            raise _Stopped(stack.pop())
        if op == 0x85:  # TUPLE1
            stack[-1] = (stack[-1],)
        elif op == 0x87:  # TUPLE3
            stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
        elif op == 0x58:  # BINUNICODE
            size = _UINT32.unpack_from(data, at)[0]
            at += 4
            if at + size > len(data):
                raise BadIndex(_TRUNCATED)
            self.append(str(data[at : at + size], "utf-8", "surrogatepass"))
            at += size
        elif op == 0x95:  # FRAME (see _FRAMING)
            if start < frame_end:
                raise BadIndex(_FRAMING)
            size = _UINT64.unpack_from(data, at)[0]
            at += 8
            if at + size > len(data):
                raise BadIndex(_TRUNCATED)
            frame_end = at + size
        elif op == 0x80:  # PROTO
            self.proto = data[at]
            at += 1
            if self.proto > pickle.HIGHEST_PROTOCOL:
                raise pickle.UnpicklingError(f"unsupported pickle protocol {self.proto}")
        else:
            file.seek(at)
            _BOUNDED_DISPATCH[op](self)
            at = file.tell()
        return at, frame_end


def safe_loads(data: bytes) -> Any:
    """The pickle `data` holds, by the bounded unpickler with no global admitted."""
    return BoundedUnpickler(io.BytesIO(data), _DATA_GLOBALS, bytes(data)).load()


def safe_load(handle: Any) -> Any:
    """The pickle at `handle`'s position, by the bounded unpickler with no global admitted;
    `handle` is left just after it."""
    return BoundedUnpickler(handle, _DATA_GLOBALS).load()


# A posting block holds at most a few hundred postings; a "block" that inflates past this is
# a zip bomb, not an index.
MAX_BLOCK_BYTES = 64 << 20
