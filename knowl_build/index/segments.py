"""Reading a knowl index without importing Whoosh: its table of contents, and in each segment
the term table, the posting blocks, the field lengths and the stored fields.

A query needs a few terms' postings and the lengths of the documents they name; importing
Whoosh's codec, schema and reader stack costs a reader process more than the whole query
(start-up time of `knowl search`). The format is whoosh3 3.54.0's (pinned exactly), the
subset knowl writes: compound segments of the W3 codec. Every pickle in it is decoded by the
bounded unpickler, or by the C one for files the full validation decoded in this very state
(`validated`, as for `ranking.Searcher`); every length and position is checked against the
file that holds it, so a damaged or hostile index is a BadIndex (or any exception `reading`
turns into an ArtifactError), never a crash or code run. The build, the full validation and
`knowl verify` read the same files through Whoosh itself; tests compare the two readers.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import mmap
import os
import re
import stat
import struct
import zlib
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

from whoosh.util.numeric import byte_to_length

from knowl_build.core.errors import ArtifactError, KnowlError
from knowl_build.index.fields import INDEX_NAME
from knowl_build.index.unpickler import (
    _DATA_GLOBALS,
    MAX_BLOCK_BYTES,
    TOC_GLOBALS,
    BadIndex,
    BoundedUnpickler,
    CodecState,
    SegmentState,
    StandIn,
    UnsafePickle,
    _FastUnpickler,
    shown_name,
)

SEGMENT_ID = re.compile(r"[a-z0-9]{1,64}")
# whoosh.index.TOC._pattern, as Whoosh finds the latest generation (its `.` matches anything).
TOC_NAME = re.compile(f"^_{INDEX_NAME}_([0-9]+).toc$")
TOC_VERSION = -111  # whoosh.index._CURRENT_TOC_VERSION
_SEGMENT_KEYS = frozenset(
    {"indexname", "segid", "_codec", "_doccount", "_deleted", "compound", "_fieldlengths"}
)
_CODEC_KEYS = frozenset({"_blocklimit", "_compression", "_inlinelimit"})
MAX_SEGMENTS = 4096
MAX_DOCS = 1 << 31

# How each index file is identified (artifacts' validation memo): size, mtime_ns, inode and
# ctime_ns (a file rewritten in place with its mtime set back has another change time).
Identity = tuple[int, int, int, int]

_INT = struct.Struct("!i")
_LONG = struct.Struct("!q")
_LENGTHS = struct.Struct("!ii")  # a hash table item: key length, value length
_POINTER = struct.Struct("!Iq")  # a hash table slot: the key's hash, the item's position
_DIR_ENTRY = struct.Struct("!qi")  # a hash table: its position, its number of slots
_TERM_INFO = struct.Struct("!BfIBBfII")
_POSTINGS_MAGIC = b"W3Bl"
_HASH_MAGIC = b"HSH3"
# Opening never follows a symlink and never waits (a FIFO planted as a file would block).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def int_in(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


# --- the table of contents ---------------------------------------------------------------------


class SegmentFacts(NamedTuple):
    """A segment as the table of contents lists it, every value checked."""

    segid: str
    doc_count: int
    deleted: frozenset[int] | None
    compound: bool
    field_lengths: dict[str, int]
    codec: tuple[int, int, int]  # block limit, compression, inline limit


def _state(obj: object, kind: type[StandIn], keys: frozenset[str], what: str) -> dict[str, Any]:
    state = getattr(obj, "state", None) if type(obj) is kind else None
    if type(state) is not dict or set(state) != keys:
        raise BadIndex(f"the index's table of contents holds a malformed {what}")
    return state


def checked_segment(obj: object, fields: frozenset[str]) -> SegmentFacts:
    """The values of a segment stand-in, checked one by one (`unpickler.TOC_GLOBALS`)."""
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
    codec = _state(state["_codec"], CodecState, _CODEC_KEYS, "codec")
    limits = (codec["_blocklimit"], codec["_compression"], codec["_inlinelimit"])
    if not (int_in(limits[0], 1, 1 << 16) and int_in(limits[1], -1, 9) and int_in(limits[2], 0, 1)):
        raise BadIndex("the index's table of contents holds codec settings knowl never writes")
    return SegmentFacts(
        segid,
        count,
        None if deleted is None else frozenset(deleted),
        compound,
        dict(lengths),
        limits,
    )


def load_segment_list(handle: Any, fields: frozenset[str]) -> list[SegmentFacts]:
    """The TOC's pickled segment list at `handle`'s position, each segment checked."""
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
    segments = [checked_segment(item, fields) for item in loaded]
    if len({s.segid for s in segments}) != len(segments):
        raise BadIndex("the index's table of contents names a segment twice")
    return segments


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise BadIndex("the index's table of contents has a malformed header")


def read_toc(data: bytes, generation: int, fields: frozenset[str]) -> list[SegmentFacts]:
    """The segments of a TOC file's bytes (whoosh.index.TOC.write), its pickled schema
    skipped unread."""
    at = 0
    sizes = []
    for _ in range(3):
        size, at = _varint(data, at)
        sizes.append(size)
    if sizes != [4, 8, 4] or _INT.unpack_from(data, at)[0] != -12345:
        raise BadIndex("the index's table of contents has a foreign header")
    version = _INT.unpack_from(data, at + 4)[0]
    at += 8
    if version != TOC_VERSION:
        raise BadIndex(f"the index's table of contents has format {version}, not {TOC_VERSION}")
    for _ in range(3):  # the release that wrote it
        _, at = _varint(data, at)
    schema_size, at = _varint(data, at)  # the pickled schema: never loaded
    at += schema_size
    if _INT.unpack_from(data, at)[0] != generation:
        raise BadIndex("the index's table of contents names another generation")
    handle = io.BytesIO(data)
    handle.seek(at + 8)  # and an int unused by Whoosh
    return load_segment_list(handle, fields)


# --- files, identified as the validation saw them -----------------------------------------------


def _identity(info: os.stat_result) -> Identity:
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)


class IndexFolder:
    """The files of an index folder, opened (never through a link) and mapped once each.

    With `expected` (file name -> Identity, as the full validation saw each file), every file
    opened must be that very file: one of another size, modification time or inode is
    refused. One that differs only by its change time may be that very file linked into
    another build, or one rewritten in place with its modification time set back: it is
    read, but not as validated (`validated`), so its pickles are decoded and checked as if
    no validation had seen it."""

    def __init__(self, folder: Path, expected: Mapping[str, Identity] | None = None) -> None:
        self.folder = folder
        self.expected = expected
        self._maps: list[mmap.mmap] = []
        self._changed: set[str] = set()  # read, but with another change time

    def read(self, name: str) -> memoryview | bytes:
        fd = os.open(self.folder / name, _OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise BadIndex(f"{shown_name(name)} is not a regular file")
            if self.expected is not None:
                self._compare(name, _identity(info))
            if info.st_size == 0:
                return b""
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        self._maps.append(mapped)
        return memoryview(mapped)

    def _compare(self, name: str, found: Identity) -> None:
        known = self.expected.get(name) if self.expected is not None else None
        if known is None or known[:3] != found[:3]:
            raise BadIndex(
                f"{shown_name(name)} changed after it was validated; run the command again"
            )
        if known[3] != found[3]:
            self._changed.add(name)

    def validated(self, name: str) -> bool:
        """Whether the file `name`, as read, is the very one the full validation decoded."""
        return self.expected is not None and name not in self._changed

    def latest_toc(self) -> tuple[str, int]:
        newest = -1
        for name in os.listdir(self.folder):
            found = TOC_NAME.match(name)
            if found:
                newest = max(newest, int(found.group(1)))
        if newest < 0:
            raise BadIndex("the index has no table of contents")
        return f"_{INDEX_NAME}_{newest}.toc", newest

    def close(self) -> None:
        for mapped in self._maps:
            # A view of it still alive (an exception's traceback) keeps it open until freed.
            with contextlib.suppress(BufferError):
                mapped.close()
        self._maps.clear()


# --- a segment -----------------------------------------------------------------------------------


def _md5_hash(key: bytes) -> int:
    return int.from_bytes(hashlib.md5(key, usedforsecurity=False).digest()[-4:], "big")


def _slice(data: memoryview | bytes, start: int, length: int) -> memoryview | bytes:
    if start < 0 or length < 0 or start + length > len(data):
        raise BadIndex("an index file points beyond its end")
    return data[start : start + length]


class _Unpickle:
    """The unpickler for a segment: the C one once the full validation decoded these very
    files, else the bounded one."""

    __slots__ = ("validated",)

    def __init__(self, validated: bool) -> None:
        self.validated = validated

    def at(self, data: memoryview | bytes, start: int = 0) -> tuple[Any, int]:
        """The pickle at `start` in `data` (a slice of a file: it is copied), and where it
        ends."""
        handle = io.BytesIO(data)
        handle.seek(start)
        if self.validated:
            value = _FastUnpickler(handle, _DATA_GLOBALS).load()
        else:
            value = BoundedUnpickler(handle, _DATA_GLOBALS).load()
        return value, handle.tell()

    def loads(self, data: memoryview | bytes) -> Any:
        return self.at(data, 0)[0]


def _inflate(data: memoryview | bytes) -> bytes:
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, MAX_BLOCK_BYTES)
    if inflater.unconsumed_tail:
        raise BadIndex(f"a posting block inflates beyond {MAX_BLOCK_BYTES} bytes")
    return out


class Terms:
    """A segment's term table (whoosh's OrderedHashReader): term -> its term info bytes."""

    def __init__(self, data: memoryview | bytes, unpickle: _Unpickle) -> None:
        self.data = data
        if bytes(data[:4]) != _HASH_MAGIC or data[4] != 0:  # md5, as knowl's index hashes
            raise BadIndex("a segment's term table has a foreign header")
        end = len(data) - 4
        extras_at = end - _INT.unpack_from(data, end)[0]
        extras, read = unpickle.at(_slice(data, extras_at, end - extras_at))
        fieldmap = extras.get("fieldmap") if type(extras) is dict else None
        if type(fieldmap) is not dict or not all(
            type(k) is str and int_in(v, 0, 0xFFFF) for k, v in fieldmap.items()
        ):
            raise BadIndex("a segment's term table has malformed fields")
        self.fields: dict[str, int] = fieldmap
        directory = extras_at - 256 * _DIR_ENTRY.size
        self.tables = [
            _DIR_ENTRY.unpack_from(data, directory + i * _DIR_ENTRY.size) for i in range(256)
        ]
        # The ordered index: where each key starts, in key order, after the extras.
        kind, count = extras.get("indextype"), extras.get("indexlen")
        if kind not in ("B", "H", "i", "I", "q") or not int_in(count, 0, len(data)):
            raise BadIndex("a segment's term table has a malformed index")
        self._position = struct.Struct("!" + kind)
        self._positions_at, self._positions = extras_at + read, count
        self._data_end = self.tables[0][0]  # the items end where the hash tables start

    def get(self, field: str, term: str) -> bytes | None:
        number = self.fields.get(field)
        if number is None:
            return None
        key = number.to_bytes(2, "big") + term.encode("utf-8")
        data = self.data
        keyhash = _md5_hash(key)
        start, slots = self.tables[keyhash & 255]
        if slots <= 0:
            return None
        end = start + slots * _POINTER.size
        slot = start + ((keyhash >> 8) % slots) * _POINTER.size
        for _ in range(slots):
            found, item = _POINTER.unpack_from(data, slot)
            if not item:
                return None
            if found == keyhash:
                keylen, datalen = _LENGTHS.unpack_from(data, item)
                keyat = item + _LENGTHS.size
                if keylen == len(key) and bytes(_slice(data, keyat, keylen)) == key:
                    return bytes(_slice(data, keyat + keylen, datalen))
            slot += _POINTER.size
            if slot == end:
                slot = start
        return None

    def _item(self, at: int) -> tuple[bytes, int]:
        """The key of the item at `at`, and where the next item starts."""
        keylen, datalen = _LENGTHS.unpack_from(self.data, at)
        key = bytes(_slice(self.data, at + _LENGTHS.size, keylen))
        return key, at + _LENGTHS.size + keylen + datalen

    def terms_of(self, field: str, start: str = "") -> list[str]:
        """Every term of `field` (beginning with `start`), in order (its keys are contiguous:
        found by a binary search of the ordered index, then read one after another)."""
        return [term for term, _at in self.items_of(field, start)]

    def info_at(self, at: int) -> bytes:
        """The term info of the item at `at` (a position `items_of` gives)."""
        keylen, datalen = _LENGTHS.unpack_from(self.data, at)
        return bytes(_slice(self.data, at + _LENGTHS.size + keylen, datalen))

    def items_of(self, field: str, start: str = "") -> Iterator[tuple[str, int]]:
        """Each term of `field` (beginning with `start`) and where its item is, in order,
        read as they are taken (a caller may stop early)."""
        number = self.fields.get(field)
        if number is None:
            return
        prefix = number.to_bytes(2, "big") + start.encode("utf-8")
        low, high = 0, self._positions
        while low < high:
            middle = (low + high) // 2
            at = self._position.unpack_from(
                self.data, self._positions_at + middle * self._position.size
            )[0]
            if self._item(at)[0] < prefix:
                low = middle + 1
            else:
                high = middle
        if low == self._positions:
            return
        at = self._position.unpack_from(self.data, self._positions_at + low * self._position.size)[
            0
        ]
        while at < self._data_end:
            key, following = self._item(at)
            if not key.startswith(prefix):
                break
            yield key[2:].decode("utf-8"), at
            if following <= at:
                raise BadIndex("a segment's term table is malformed")
            at = following


class Segment:
    """One segment of the index, read through `IndexFolder`: with `unpickle` when its file is
    the one the full validation decoded (`IndexFolder.validated`), else with the bounded
    unpickler (always for a segment of separate files, which knowl never writes)."""

    def __init__(
        self,
        files: IndexFolder,
        facts: SegmentFacts,
        unpickle: _Unpickle,
    ) -> None:
        self.facts = facts
        self.doc_count = facts.doc_count
        self.deleted = facts.deleted or frozenset()
        prefix = f"{INDEX_NAME}_{facts.segid}"
        self._file: Callable[[str], memoryview | bytes | None]
        if facts.compound:
            data = files.read(prefix + ".seg")
            if not files.validated(prefix + ".seg"):
                unpickle = _Unpickle(False)
            at, size = _LONG.unpack_from(data, 0)[0], _INT.unpack_from(data, 8)[0]
            directory, _ = unpickle.at(_slice(data, at, size))
            if type(directory) is not dict:
                raise BadIndex(f"segment {facts.segid}: malformed compound directory")
            self._parts: dict[str, memoryview | bytes] = {}
            for name, info in directory.items():
                if not (
                    type(name) is str
                    and type(info) is dict
                    and int_in(info.get("offset"), 0, len(data))
                    and int_in(info.get("length"), 0, len(data))
                ):
                    raise BadIndex(f"segment {facts.segid}: malformed compound directory")
                self._parts[name] = _slice(data, info["offset"], info["length"])
            self._file = self._parts.get
        else:
            unpickle = _Unpickle(False)

            def separate(name: str) -> memoryview | bytes | None:
                try:
                    return files.read(name)
                except FileNotFoundError:
                    return None

            self._file = separate
        self.unpickle = unpickle
        self.prefix = prefix
        terms = self._file(prefix + ".trm")
        postings = self._file(prefix + ".pst")
        if terms is None or postings is None:
            raise BadIndex(f"segment {facts.segid}: its terms or postings are missing")
        self.terms = Terms(terms, unpickle)
        self.postings_data = postings
        self._columns: dict[str, Any] = {}
        self._extents: tuple[Sequence[int], Sequence[int]] | None = None

    # --- postings --------------------------------------------------------------------------

    def __contains__(self, term: tuple[str, str]) -> bool:
        return self.terms.get(*term) is not None

    def terms_of(self, field: str, start: str = "") -> list[str]:
        return self.terms.terms_of(field, start)

    def doc_frequency(self, field: str, term: str) -> int:
        """The term's number of documents as its term info records it: deleted ones and every
        scope's counted, so at least as many as any caller sees of it."""
        info = self.terms.get(field, term)
        return 0 if info is None else int(_TERM_INFO.unpack_from(info, 0)[2])

    def in_term_order(self, field: str) -> Iterator[tuple[str, int]]:
        """Each term of `field` in order, with each document holding it (deleted ones too):
        a term of one document is read from its term info alone (its first and last
        document), no posting decoded; the others' postings are read."""
        for term, at in self.terms.items_of(field):
            info = self.terms.info_at(at)
            _inlined, _weight, df, _low, _high, _most, first, last = _TERM_INFO.unpack_from(info)
            if df == 1 and first == last and first < self.doc_count:
                yield term, first
                continue
            for ids, _weights in self.blocks(field, term):
                for doc in ids:
                    yield term, doc

    def blocks(self, field: str, term: str) -> Iterator[tuple[tuple[int, ...], Any]]:
        """The term's postings, block by block: (document numbers, weights), in order."""
        info = self.terms.get(field, term)
        if info is None:
            return
        values = _TERM_INFO.unpack_from(info, 0)
        if values[0]:  # postings inlined in the term info
            inlined = self.unpickle.loads(info[_TERM_INFO.size :])
            if not (type(inlined) is tuple and len(inlined) == 3):
                raise BadIndex("a term's inlined postings are malformed")
            ids, weights = inlined[0], inlined[1]
            yield tuple(ids), (1.0,) * len(ids) if weights is None else weights
            return
        offset = _LONG.unpack_from(info, _TERM_INFO.size)[0]
        data = self.postings_data
        if bytes(_slice(data, offset, 4)) != _POSTINGS_MAGIC:
            raise BadIndex("a posting list has a foreign header")
        at = offset + 4
        while True:
            length = _INT.unpack_from(data, at)[0]
            last = length < 0
            end = at + 4 + abs(length)
            if end > len(data):
                raise BadIndex("a posting block runs past its file")
            block = bytes(data[at + 4 : end])
            header, start = self.unpickle.at(block)
            if not (type(header) is tuple and len(header) == 6):
                raise BadIndex("a posting block has a malformed header")
            count, compressed = header[0], header[3]
            body = block[start:]
            loaded = self.unpickle.loads(_inflate(body) if compressed else body)
            if not (type(loaded) is tuple and len(loaded) == 3 and int_in(count, 0, MAX_DOCS)):
                raise BadIndex("a posting block is malformed")
            ids = tuple(accumulate(loaded[0]))
            weights = loaded[1]
            if weights is None:
                weights = (1.0,) * count
            elif type(weights) is float:
                weights = (weights,) * count
            yield ids, weights
            if last:
                return
            at = end

    # --- columns -----------------------------------------------------------------------------

    def _column(self, name: str) -> memoryview | bytes | None:
        if name not in self._columns:
            self._columns[name] = self._file(f"{self.prefix}.{name}.col")
        found: memoryview | bytes | None = self._columns[name]
        return found

    def length_bytes(self, field: str) -> bytes:
        """The field's length in each document as Whoosh stores it: a byte each (an
        approximation that `LENGTH_OF_BYTE` decodes; 0 is no length), one per document (the
        column leaves out the zeros at its end)."""
        column = bytes(self._column(f"_{field}_len") or b"")
        return column + bytes(max(0, self.doc_count - len(column)))

    def stored_fields(self, docnum: int) -> dict[str, Any]:
        """A document's stored fields (whoosh's `_stored` column: pickles, deflated, in a
        column of variable-length values)."""
        column = self._column("_stored")
        if column is None or not 0 <= docnum < self.doc_count:
            raise BadIndex(f"segment {self.facts.segid}: no stored fields for a document")
        offsets, lengths = self._stored_extents(column)
        if not lengths[docnum]:
            return {}
        found = self.unpickle.loads(_inflate(_slice(column, offsets[docnum], lengths[docnum])))
        if type(found) is not dict:
            raise BadIndex(f"segment {self.facts.segid}: malformed stored fields")
        return found

    def _stored_extents(self, column: memoryview | bytes) -> tuple[Sequence[int], Sequence[int]]:
        """Where each document's stored fields start in the column, and their lengths: read
        once per segment (a search that ties thousands of documents reads as many keys)."""
        if self._extents is None:
            count = self.doc_count
            last = len(column) - 1
            code = chr(column[last])
            offsets = None
            if code == "X":
                code, offsets_code = chr(column[last - 2]), chr(column[last - 1])
                size = struct.calcsize(offsets_code)
                start = last - 2 - count * size
                offsets = array(offsets_code, bytes(_slice(column, start, count * size)))
                last = start
            size = struct.calcsize(code)
            lengths = array(code, bytes(_slice(column, last - size * count, size * count)))
            if _LITTLE:  # whoosh writes its arrays big-endian
                lengths.byteswap()
                if offsets is not None:
                    offsets.byteswap()
            if offsets is None:  # fixed order, no offsets written: each starts where one ends
                offsets = array("q", accumulate(lengths, initial=0))
            self._extents = offsets, lengths
        return self._extents


# A length byte's length, as Whoosh reads it back (`doc_field_length`: none for 0).
LENGTH_OF_BYTE = (0, *(byte_to_length(b) for b in range(1, 256)))

_LITTLE = struct.pack("=H", 1) == struct.pack("<H", 1)


def open_segments(
    folder: Path, fields: frozenset[str], expected: Mapping[str, Identity] | None = None
) -> tuple[IndexFolder, list[Segment]]:
    """The index's segments, in the order of its table of contents."""
    files = IndexFolder(folder, expected)
    try:
        name, generation = files.latest_toc()
        facts = read_toc(bytes(files.read(name)), generation, fields)
        unpickle = _Unpickle(expected is not None)
        return files, [Segment(files, fact, unpickle) for fact in facts]
    except BaseException:
        files.close()
        raise


@contextlib.contextmanager
def reading(folder: Path) -> Iterator[None]:
    """Whatever damaged or hostile bytes make the decoding raise becomes one ArtifactError
    naming the folder."""
    try:
        yield
    except KnowlError:
        raise
    except Exception as exc:  # crafted bytes can make the decoding raise anything
        raise ArtifactError(f"{folder}: {problem(exc)}") from None


def problem(exc: BaseException) -> str:
    """One line saying why the index cannot be read."""
    cause = exc
    if isinstance(cause, UnsafePickle | BadIndex):
        text = str(cause)
    else:
        text = f"the index is damaged ({type(cause).__name__}: {cause})"
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."
