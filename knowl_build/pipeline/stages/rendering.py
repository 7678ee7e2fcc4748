"""The render stage: each page's record (reused where its inputs did not change), the
catalog, the entities, the reference graph, the signatures and the findings, written to
the staging folder; the records, the largest file, in a thread while the rest is made."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from knowl_build.artifacts import layout, publication, schema
from knowl_build.artifacts.catalog import catalog_file
from knowl_build.core.diagnostics import diagnostics_document
from knowl_build.core.errors import UsageError
from knowl_build.parse.text import decode
from knowl_build.pipeline import records, reuse
from knowl_build.pipeline.inputs import read_file
from knowl_build.pipeline.reuse import Span
from knowl_build.pipeline.stages.sharing import share
from knowl_build.pipeline.stages.state import BuildState


def render(state: BuildState) -> None:
    """The rows of every record, and the staging folder to write them to (`write`)."""
    state.clock.start("render")
    assemble(state)
    if state.staging is None:
        state.staging = publication.staging_folder(state.out_dir)
    # The kept builds as validated before this build links their files.
    state.shared_from = publication.kept_builds(state.out_dir)


def write(state: BuildState) -> None:
    """The artifact's files but the index and the manifest, in the staging folder."""
    if state.staging is None:
        raise ValueError("the render stage writes after it made the staging folder")
    write_files(state, state.staging)


def assemble(state: BuildState) -> None:
    """Each page's record, reused from the current build where its signature is unchanged;
    the entities and the digest of what the graph is made of."""
    analysis = state.analysis
    texts = Texts(state.root, state.readable)
    current = state.current
    state.old = reuse.Previous.load(current) if state.incremental and current else None
    state.rows = rows = reuse.assemble(analysis, texts, state.content, state.old)
    state.entities = records.entity_records(analysis)
    state.graph_key = reuse.graph_digest(analysis, rows.pages, rows.resolved)


def write_files(state: BuildState, staging: Path) -> None:
    """The records (in a thread: writing and hashing both release the GIL), the catalog,
    the entities, the graph, the signatures and the findings."""
    rows = state.rows
    state.writer = ThreadPoolExecutor(max_workers=1)
    state.records_written = state.writer.submit(
        write_members, staging / layout.RECORDS, rows.members, rows.source
    )
    catalog, heads = catalog_file(rows.catalog)
    put(state, staging, "catalog.json", catalog)
    put(state, staging, layout.CATALOG_HEADS, schema.encode(heads))
    put(state, staging, "entities.json", schema.encode(state.entities))
    write_graph(state, staging)
    put(
        state,
        staging,
        reuse.SIGNATURES,
        schema.encode(reuse.signatures_record(rows, state.graph_key)),
    )
    document = diagnostics_document(state.analysis.diagnostics)
    put(state, staging, "diagnostics.json", schema.encode(document))


def put(state: BuildState, staging: Path, name: str, data: bytes) -> None:
    """Write one file of the artifact, or share the current build's when it has the same
    bytes (`sharing.share`)."""
    digest = hashlib.sha256(data).hexdigest()
    state.known[name] = digest
    previous, current = state.previous, state.current
    if (
        current is not None
        and previous is not None
        and previous.files.get(name) == digest
        and share(current / name, staging / name)
    ):
        return
    (staging / name).write_bytes(data)


def write_graph(state: BuildState, staging: Path) -> None:
    """The reference graph: the current build's when nothing it is made of changed."""
    old, previous = state.old, state.previous
    if old is not None and old.graph == state.graph_key and previous is not None:
        if not share(old.folder / "graph.json", staging / "graph.json"):
            shutil.copyfile(old.folder / "graph.json", staging / "graph.json")
        state.known["graph.json"] = previous.files["graph.json"]
        return
    # networkx loads only for a graph built anew (start-up time of an edit).
    from knowl_build.artifacts.graph import to_json as graph_json

    graph = records.reference_graph(state.analysis)
    put(state, staging, "graph.json", graph_json(graph).encode("utf-8"))


def write_members(path: Path, members: list[bytes | Span], source: Path | None) -> str:
    """Write the records' members to `path`: new ones from memory, reused ones copied from
    `source` (the previous records) by the kernel, run by run, never through this
    process's memory. Returns the file's sha256, read back in blocks."""
    with path.open("wb") as out, contextlib.ExitStack() as stack:
        copier = _Copier(stack.enter_context(source.open("rb")), out) if source else None
        pending: list[bytes] = []
        size = 0
        run: tuple[int, int] | None = None
        for member in [*members, b""]:
            if isinstance(member, tuple):
                if pending:
                    out.write(b"".join(pending))
                    pending, size = [], 0
                if run is not None and run[1] == member[0]:
                    run = (run[0], member[1])
                    continue
                if run is not None:
                    _copied(copier, run)
                run = member
                continue
            if run is not None:
                _copied(copier, run)
                run = None
            pending.append(member)
            size += len(member)
            if size >= 1 << 20:
                out.write(b"".join(pending))
                pending, size = [], 0
        out.write(b"".join(pending))
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _copied(copier: _Copier | None, run: tuple[int, int]) -> None:
    if copier is None:
        raise ValueError("a reused record without the previous records")
    copier.copy(*run)


class _Copier:
    """Copies byte ranges of one open file to the end of another: by copy_file_range where
    the system has it, else through a small buffer."""

    def __init__(self, source: BinaryIO, out: BinaryIO) -> None:
        self.source, self.out = source, out
        self.kernel = hasattr(os, "copy_file_range")

    def copy(self, start: int, end: int) -> None:
        self.out.flush()
        source, out = self.source.fileno(), self.out.fileno()
        while start < end and self.kernel:
            try:
                done = os.copy_file_range(source, out, end - start, start)
            except OSError:
                self.kernel = False  # another file system, or a kernel without it
                break
            if done == 0:
                raise OSError(f"{self.source.name}: shorter than its catalog says")
            start += done
        self.out.seek(0, os.SEEK_END)
        while start < end:
            block = os.pread(source, min(end - start, 1 << 20), start)
            if not block:
                raise OSError(f"{self.source.name}: shorter than its catalog says")
            self.out.write(block)
            start += len(block)


class Texts(Mapping[str, str]):
    """Each readable page's text, read again and decoded when a record is built from it:
    most records of an incremental build are copied and never need it, and the build does
    not hold every page's bytes from the analysis on (the peak memory of an edit)."""

    def __init__(self, root: Path, digests: dict[str, str]) -> None:
        self.root = str(root)
        self.digests = digests  # each readable page's sha256, as the analysis read it

    def __getitem__(self, path: str) -> str:
        expected = self.digests[path]
        data, digest = read_file(self.root, path)
        if data is None or digest != expected:
            raise UsageError(f"{path} changed while the build ran; run the build again")
        return decode(data) or ""

    def __contains__(self, path: object) -> bool:
        return path in self.digests

    def __iter__(self) -> Iterator[str]:
        return iter(self.digests)

    def __len__(self) -> int:
        return len(self.digests)
