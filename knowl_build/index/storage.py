"""Opening an index: whatever Whoosh raises becomes one ArtifactError, and each file read is
tracked against the identity the full validation saw."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from whoosh.filedb.filestore import FileStorage
from whoosh.index import FileIndex
from whoosh.util import random_name

from knowl_build.errors import ArtifactError, KnowlError
from knowl_build.index.analysis import INDEX_NAME, schema
from knowl_build.index.toc import install_safe_loading
from knowl_build.index.unpickler import VALIDATED, BadIndex, UnsafePickle, shown_name

install_safe_loading()

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


class Reading:
    """`reading(folder)` for a Searcher (a class: a query enters it several times), which also
    says whether this index was validated as it is (`VALIDATED`)."""

    __slots__ = ("folder", "token", "validated")

    def __init__(self, folder: Path, validated: bool) -> None:
        self.folder, self.validated = folder, validated

    def __enter__(self) -> None:
        self.token = VALIDATED.set(self.validated)

    def __exit__(self, kind: object, exc: BaseException | None, _tb: object) -> None:
        VALIDATED.reset(self.token)
        if isinstance(exc, Exception) and not isinstance(exc, KnowlError):
            raise ArtifactError(f"{self.folder}: {index_problem(exc)}") from None


# How artifacts' validation memo identifies a file: size, mtime_ns, inode (artifacts.memo).
Identity = tuple[int, int, int]


def _identity(handle: Any) -> Identity | None:
    try:
        info = os.fstat(handle.file.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino)


class TrackedStorage(FileStorage):  # type: ignore[misc]
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
            raise BadIndex(
                f"{shown_name(name)} changed after it was validated; run the command again"
            )
        return handle

    def create_file(self, name: str, **kwargs: Any) -> Any:
        handle = super().create_file(name, **kwargs)
        self.opened.append(handle)
        return handle

    def temp_storage(self, name: str | None = None) -> Any:
        folder = Path(self.folder) / (name or f"{random_name()}.tmp")
        return TrackedStorage(str(folder), readonly=False, opened=self.opened).create()

    def close_files(self) -> None:
        for handle in self.opened:
            if not handle.is_closed:
                handle.close()
        self.opened.clear()


def open_index(
    folder: Path, *, readonly: bool = True, expected: Mapping[str, Identity] | None = None
) -> Any:
    """The index in `folder`, opened with knowl's schema (never the stored one); with
    `expected`, only files identical to those the full validation decoded (`TrackedStorage`)."""

    storage = TrackedStorage(str(folder), readonly=readonly, expected=expected)
    try:
        return FileIndex(storage, schema=schema(), indexname=INDEX_NAME)
    except BaseException:
        storage.close_files()
        raise
