"""The index's schema and analyzer, and writing it: full or incremental, with the collection
statistics the ranking uses."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from knowl_build.core.errors import ArtifactError
from knowl_build.index.analysis import DOCS_FILE, INDEX_NAME, STATS_FILE
from knowl_build.index.codec import KnowlCodec
from knowl_build.index.fields import SCHEMA_FIELDS
from knowl_build.index.segments import Segment, open_segments
from knowl_build.index.stats import segment_stats
from knowl_build.index.storage import CheckedStorage, create_index, open_index, reading
from knowl_build.index.unpickler import BadIndex

# Merge everything into one segment once this share of the stored documents is deleted.
MERGE_DELETED_SHARE = 0.25


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


def _stats(folder: Path) -> dict[str, Any]:
    """The statistics of the index just written, read back by `segments` (the full validation
    checks them again through Whoosh)."""
    files, found = open_segments(folder, SCHEMA_FIELDS)
    try:
        return segment_stats(found)
    finally:
        files.close()


def documents_digest(documents: Iterable[IndexDocument]) -> str:
    """One digest of the documents, in their order: what `Apart.wait` checks an index written
    apart against."""
    digest = hashlib.sha256()
    for document in documents:
        digest.update(_ENCODE([document.key, document.fields]))
    return digest.hexdigest()


_ENCODE = msgspec.json.Encoder(order="sorted").encode
# A batch of documents on their way to the writer: (key, fields) pairs.
_BATCH = msgspec.msgpack.Encoder()
_BATCH_OF = msgspec.msgpack.Decoder(list[tuple[str, dict[str, str]]])


class Apart:
    """A full index written by a forked process (`write_apart`) from the documents this one
    sends it as they are made, in key order. A batch goes to a spool file both processes
    hold and its length down a pipe: sending never waits for the writer."""

    def __init__(self, pid: int, spool: int, notices: int, report: int, folder: Path) -> None:
        self.pid, self.spool, self.notices, self.report = pid, spool, notices, report
        self.folder = folder
        self.failed = False  # the writer stopped reading: the index is written here instead
        self.finished = False

    def send(self, documents: list[IndexDocument]) -> None:
        if self.failed or not documents:
            return
        data = _BATCH.encode([(d.key, d.fields) for d in documents])
        try:
            _write_all(self.spool, data)
            _write_all(self.notices, len(data).to_bytes(8, "big"))
        except OSError:
            self.failed = True

    def finish(self) -> None:
        """No more documents (once; again does nothing)."""
        if not self.failed and not self.finished:
            self.finished = True
            try:
                _write_all(self.notices, bytes(8))  # a batch of length 0 ends the stream
            except OSError:
                self.failed = True

    def wait(self, digests: Mapping[str, str], expected: str) -> IndexUpdate | None:
        """The written index, once the process is done: its statistics written, and its
        documents those of `digests` (written to docs.json here), their contents digested
        as `expected` (`documents_digest`). None when the process failed or wrote other
        documents: the caller writes the index itself."""
        self.finish()
        _, status = os.waitpid(self.pid, 0)
        with os.fdopen(self.report, "rb") as handle:
            report = handle.read()
        self._close()
        if self.failed or status != 0 or report != f"ok {len(digests)} {expected}".encode():
            shutil.rmtree(self.folder, ignore_errors=True)
            return None
        (self.folder / DOCS_FILE).write_text(
            json.dumps(dict(digests), sort_keys=True), encoding="utf-8"
        )
        return IndexUpdate(len(digests), 0, 0, False)

    def cancel(self) -> None:
        self.failed = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.report)
        self._close()

    def _close(self) -> None:
        for fd in (self.spool, self.notices):
            with contextlib.suppress(OSError):
                os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_apart(folder: Path, memory_mb: int) -> Apart | None:
    """Fork a process that writes a full index in `folder` of the documents this one then
    sends it (`Apart.send`, in key order), while this one parses the pages, runs the rules
    and builds the records: the writer is the longest stage of a cold build, and its
    documents need nothing but their pages. None where forking is not safe (another thread
    runs) or possible: the caller writes the index itself, with `write_index`."""
    if threading.active_count() > 1 or not hasattr(os, "fork"):
        return None
    folder.mkdir(parents=True, exist_ok=True)
    spool, name = tempfile.mkstemp(prefix=".spool-", dir=folder.parent)
    os.unlink(name)  # both processes hold it open; nobody else ever sees it
    incoming, notices = os.pipe()
    report_in, report_out = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: it reports on a pipe and ends without the parent's exit
        os.close(notices)
        os.close(report_in)
        status, report = 1, b"failed"
        try:
            with os.fdopen(incoming, "rb") as lengths:
                count, digest = _write_received(folder, spool, lengths, memory_mb)
            status, report = 0, f"ok {count} {digest}".encode()
        finally:
            os.write(report_out, report)
            os._exit(status)
    os.close(incoming)
    os.close(report_out)
    return Apart(pid, spool, notices, report_in, folder)


def _write_received(folder: Path, spool: int, lengths: BinaryIO, memory_mb: int) -> tuple[int, str]:
    """The writer's work: each batch of documents, as its length comes down `lengths`, read
    from the spool and added in order; the index committed and its statistics written.
    Returns the number of documents and their digest."""
    ix = create_index(folder)
    writer = _writer(ix, memory_mb)
    digest = hashlib.sha256()
    count = offset = 0
    while size := int.from_bytes(lengths.read(8), "big"):
        data = os.pread(spool, size, offset)
        offset += size
        for key, fields in _BATCH_OF.decode(data):
            writer.add_document(key=key, **fields)
            digest.update(_ENCODE([key, fields]))
            count += 1
    writer.commit(optimize=False)
    ix.close()
    (folder / STATS_FILE).write_text(json.dumps(_stats(folder), sort_keys=True), encoding="utf-8")
    return count, digest.hexdigest()


def _writer(ix: Any, memory_mb: int) -> Any:
    """Whoosh's writer with knowl's codec (`codec`), keeping `memory_mb` of postings in
    memory before it sorts them on disk."""
    return ix.writer(limitmb=memory_mb, codec=KnowlCodec())


def _has_index(folder: Path) -> bool:
    return any(folder.glob(f"_{INDEX_NAME}_*.toc"))


def write_index(
    folder: Path,
    digests: Mapping[str, str],
    document: Callable[[str], IndexDocument],
    incremental: bool,
    memory_mb: int,
) -> IndexUpdate:
    """Write (or, when `incremental`, update in place) the index in `folder`.

    `digests` names every document and its content digest; `document(key)` builds the ones
    that must be (re)indexed. One writer adds documents in key order; only documents whose
    content changed are deleted and added again. Whoosh reads the previous index only through
    `storage.CheckedStorage` (its table of contents rebuilt from checked values, a segment it
    merges once every pickle in it decoded through the restricted unpickler); one that cannot
    be read (damaged, or refused) is replaced by a full one. The writer keeps
    `memory_mb` megabytes of postings in memory before it sorts them on disk (`[index]
    memory_mb`)."""
    if incremental and _has_index(folder):
        try:
            with reading(folder):
                return _write_index(folder, digests, document, True, memory_mb)
        except (ArtifactError, OSError, ValueError):
            shutil.rmtree(folder, ignore_errors=True)
    return _write_index(folder, digests, document, False, memory_mb)


def _write_index(
    folder: Path,
    digests: Mapping[str, str],
    document: Callable[[str], IndexDocument],
    incremental: bool,
    memory_mb: int,
) -> IndexUpdate:
    previous: dict[str, str] = {}
    if incremental:
        previous = json.loads((folder / DOCS_FILE).read_text(encoding="utf-8"))
        if not isinstance(previous, dict):
            raise BadIndex(f"{DOCS_FILE} is not a table of documents")
        ix = open_index(folder, readonly=False)
    else:
        ix = create_index(folder)
    try:
        return _update(ix, folder, previous, digests, document, memory_mb)
    except BaseException:
        if isinstance(ix.storage, CheckedStorage):
            ix.storage.close_files()
        raise


def _live_documents(found: list[Segment], keys: list[str]) -> list[int]:
    """The index-wide numbers of the live documents of `keys` (as Whoosh's delete_by_term
    finds them: through the `key` field, deleted documents left out)."""
    numbers = []
    offset = 0
    for segment in found:
        for key in keys:
            for ids, _weights in segment.blocks("key", key):
                numbers += [offset + doc for doc in ids if doc not in segment.deleted]
        offset += segment.doc_count
    return sorted(set(numbers))


def _update(
    ix: Any,
    folder: Path,
    previous: dict[str, str],
    digests: Mapping[str, str],
    document: Callable[[str], IndexDocument],
    memory_mb: int,
) -> IndexUpdate:
    stale = sorted(key for key in previous if previous[key] != digests.get(key))
    fresh = sorted(key for key in digests if previous.get(key) != digests[key])
    merged = False
    if stale or fresh or not previous:
        # The stale documents are found, and the index counted, by `segments` (Whoosh's
        # delete_by_term and reader opened every segment's readers: 30 MB at 10k pages).
        files, found = open_segments(folder, SCHEMA_FIELDS)
        try:
            live = _live_documents(found, stale)
            total = sum(segment.doc_count for segment in found)
            deleted = sum(len(segment.deleted) for segment in found) + len(stale)
        finally:
            files.close()
        writer = _writer(ix, memory_mb)
        for docnum in live:
            writer.delete_document(docnum)
        for key in fresh:
            writer.add_document(key=key, **document(key).fields)
        stored = total + len(fresh)
        merged = bool(stale) and deleted > MERGE_DELETED_SHARE * max(stored, 1)
        writer.commit(optimize=merged)
    ix.close()
    (folder / STATS_FILE).write_text(json.dumps(_stats(folder), sort_keys=True), encoding="utf-8")
    (folder / DOCS_FILE).write_text(json.dumps(dict(digests), sort_keys=True), encoding="utf-8")
    added = len([k for k in fresh if k not in previous])
    return IndexUpdate(
        added, len(fresh) - added, len([k for k in stale if k not in digests]), merged
    )
