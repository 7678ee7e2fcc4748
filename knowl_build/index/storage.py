"""Opening an index with Whoosh, through a Storage that hands Whoosh only bytes knowl's own
reader checked: whatever Whoosh raises becomes one ArtifactError.

Whoosh unpickles parts of an index with Python's unrestricted unpickler, so it never reads a
file of a previous or foreign index as it lies on disk (SPEC 9). `CheckedStorage`, passed to
Whoosh's `FileIndex`, serves such a file from memory, read once: the table of contents
rebuilt from the segment list `segments` checked (`toc.rebuilt_toc`), a segment once
`verify.check_segment` decoded every pickle in it with the bounded, restricted unpickler (or
once the full validation did, for files still as it saw them: `expected`). Files Whoosh
writes through it are its own, and read back as they are."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from whoosh.filedb.filestore import FileStorage
from whoosh.filedb.structfile import StructFile
from whoosh.index import FileIndex
from whoosh.util import random_name

from knowl_build.core.errors import ArtifactError, KnowlError
from knowl_build.index.analysis import INDEX_NAME, schema
from knowl_build.index.segments import (
    TOC_NAME,
    Identity,
    IndexFolder,
    Segment,
    SegmentFacts,
    _Unpickle,
)
from knowl_build.index.toc import rebuilt_toc
from knowl_build.index.unpickler import BadIndex, UnsafePickle, shown_name
from knowl_build.index.verify import check_compound, check_segment

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


# --- the storage Whoosh reads through --------------------------------------------------------


class _Files:
    """One file's bytes, as `Segment` reads its files."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self.data = name, data

    def read(self, name: str) -> bytes:
        if name != self.name:
            raise FileNotFoundError(name)
        return self.data

    def validated(self, name: str) -> bool:
        return False  # bytes being checked, so decoded by the bounded unpickler


def _checked_compound(name: str, data: bytes, facts: SegmentFacts, walk: bool) -> None:
    """A compound segment's bytes, checked as Whoosh will read them: its directory and the
    options pickled after it, and with `walk` every pickle of its parts."""
    check_compound(data, facts.segid)
    segment = Segment(_Files(name, data), facts, _Unpickle(False))  # type: ignore[arg-type]
    if walk:
        check_segment(segment)


class CheckedStorage(FileStorage):  # type: ignore[misc]
    """A FileStorage through which Whoosh reads only checked bytes (see the module), and
    that remembers the files it (and its temporary storage) opens: whoosh leaves them open
    when a read or a write fails half-way, so `close_files` closes them.

    With `expected` (file name -> Identity, as the full validation saw each file), every file
    read must be that very file (one that changed since is refused), and its segments are not
    walked again; a segment whose change time differs (linked by a build, or rewritten in
    place with its modification time set back: `IndexFolder`) is walked."""

    def __init__(
        self,
        folder: str,
        *,
        readonly: bool,
        opened: list[Any] | None = None,
        expected: Mapping[str, Identity] | None = None,
    ) -> None:
        super().__init__(folder, readonly=readonly, supports_mmap=False)
        self.opened: list[Any] = [] if opened is None else opened
        self.expected = expected
        self.written: set[str] = set()  # the files Whoosh wrote through this storage
        self._segments: dict[str, SegmentFacts] = {}
        self._served: dict[str, bytes] = {}

    def open_file(self, name: str, **kwargs: Any) -> Any:
        if name in self.written:
            handle = super().open_file(name, **kwargs)
        else:
            handle = StructFile(io.BytesIO(self._checked(name)), name=name, **kwargs)
        self.opened.append(handle)
        return handle

    def file_length(self, name: str) -> int:
        if name in self.written:
            return int(super().file_length(name))
        return len(self._checked(name))

    def create_file(self, name: str, **kwargs: Any) -> Any:
        handle = super().create_file(name, **kwargs)
        self.written.add(name)
        self._served.pop(name, None)
        self.opened.append(handle)
        return handle

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        super().rename_file(oldname, newname, safe=safe)
        self._served.pop(newname, None)
        if oldname in self.written:
            self.written.discard(oldname)
            self.written.add(newname)

    def delete_file(self, name: str) -> None:
        super().delete_file(name)
        self.written.discard(name)
        self._served.pop(name, None)

    def temp_storage(self, name: str | None = None) -> Any:
        folder = Path(self.folder) / (name or f"{random_name()}.tmp")
        return CheckedStorage(str(folder), readonly=False, opened=self.opened).create()

    def close_files(self) -> None:
        for handle in self.opened:
            if not handle.is_closed:
                handle.close()
        self.opened.clear()

    def _read(self, name: str) -> tuple[bytes, bool]:
        """A file's bytes, and whether they are the ones the full validation decoded."""
        files = IndexFolder(Path(self.folder), self.expected)
        try:
            return bytes(files.read(name)), files.validated(name)
        finally:
            files.close()

    def _checked(self, name: str) -> bytes:
        """A file of the index as it was when this storage first read it, once checked."""
        if name not in self._served:
            toc = TOC_NAME.match(name)
            if toc:
                data, facts = rebuilt_toc(self._read(name)[0], int(toc.group(1)))
                self._segments.update({f"{INDEX_NAME}_{f.segid}.seg": f for f in facts})
            else:
                data = self._read_segment(name)
            self._served[name] = data
        return self._served[name]

    def _read_segment(self, name: str) -> bytes:
        facts = self._segments.get(name)
        if facts is None or not facts.compound:
            # knowl writes compound segments only; Whoosh reads a segment's parts from it.
            raise BadIndex(f"{shown_name(name)} is no segment of the index's table of contents")
        data, validated = self._read(name)
        _checked_compound(name, data, facts, walk=not validated)
        return data


def open_index(
    folder: Path, *, readonly: bool = True, expected: Mapping[str, Identity] | None = None
) -> Any:
    """The index in `folder`, opened with knowl's schema (never the stored one) through a
    `CheckedStorage`; with `expected`, only files identical to those the full validation
    decoded."""

    storage = CheckedStorage(str(folder), readonly=readonly, expected=expected)
    try:
        return FileIndex(storage, schema=schema(), indexname=INDEX_NAME)
    except BaseException:
        storage.close_files()
        raise


def create_index(folder: Path) -> Any:
    """An empty index in `folder` (its previous files gone), through a `CheckedStorage`."""
    storage = CheckedStorage(str(folder), readonly=False).create()
    return FileIndex.create(storage, schema(), indexname=INDEX_NAME)
