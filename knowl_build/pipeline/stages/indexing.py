"""The index stage: the search index (written apart while the pages are parsed, for a full
build; updated here, for an incremental one) and, with the embeddings extra, the vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from knowl_build.artifacts import publication
from knowl_build.core.model import Page
from knowl_build.index import embeddings, writer
from knowl_build.parse.text import decode
from knowl_build.pipeline import records
from knowl_build.pipeline.stages.sharing import share_index
from knowl_build.pipeline.stages.state import BuildState
from knowl_build.pipeline.stages.values import Parsed
from knowl_build.semantic.layer import SemanticLayer


def write_apart(state: BuildState) -> Parsed | None:
    """For a full build: the index written by a forked process from the documents sent to
    it as the pages are parsed, while the rules and the records are worked out here (a
    document needs only its page and the layer). Returns what sends them (None: the index
    is written in the index stage)."""
    if state.incremental:
        return None
    state.staging = publication.staging_folder(state.out_dir)
    state.apart = apart = writer.write_apart(state.staging / "index", state.config.index_memory_mb)
    if apart is None:
        return None
    inputs = state.inputs

    def send(placed: list[Page], layer: SemanticLayer) -> None:
        found = []
        for page in placed:
            data = inputs.read(page.path)[0] if page.parsed.text_ok else None
            if data is not None:
                found.append(records.page_document(page, decode(data) or "", layer))
        apart.send(found)

    return send


def index(state: BuildState) -> None:
    """The index: the one written apart when it holds every record's document as this
    build made it, else written (or the current one updated) here."""
    state.clock.start("index")
    staging, rows = _staging(state), state.rows
    update = None
    if state.apart is not None:
        expected = writer.documents_digest(
            rows.index_document(key) for key in sorted(rows.index_digests)
        )
        update = state.apart.wait(rows.index_digests, expected)
        state.apart = None
    if update is None:
        if state.incremental and state.current is not None:
            share_index(state.current / "index", staging / "index")
        update = writer.write_index(
            staging / "index",
            rows.index_digests,
            rows.index_document,
            state.incremental,
            state.config.index_memory_mb,
        )
    state.update = update
    _known_segments(state)


def _known_segments(state: BuildState) -> None:
    """A segment file is never written again once it exists (Whoosh adds segments and
    records deletions in its table of contents): a copied one is unchanged."""
    if not state.incremental or state.previous is None:
        return
    staging, sizes = _staging(state), state.previous.sizes or {}
    for name, digest in state.previous.files.items():
        if not (name.startswith("index/") and name.endswith(".seg")):
            continue
        path = staging / name
        if path.is_file() and path.stat().st_size == sizes.get(name):
            state.known[name] = digest


def vectors(state: BuildState) -> None:
    """With the embeddings extra: one vector per page (unchanged pages reuse theirs)."""
    state.clock.start("vectors")
    state.vectors = _write_vectors(state)


def _write_vectors(state: BuildState) -> dict[str, Any]:
    if not embeddings.available():
        return {}
    texts = [
        (row.path, embeddings.page_text(row.fields.summary, row.body))
        for row in state.rows.records()
    ]
    previous = state.current if state.incremental else None
    old = previous / embeddings.FOLDER if previous is not None else None
    counts = embeddings.write_vectors(_staging(state) / embeddings.FOLDER, texts, old)
    return {"model": embeddings.Embedder.get().identity, **counts}


def _staging(state: BuildState) -> Path:
    staging = state.staging
    if staging is None:
        raise ValueError("the index stage runs after the render stage made the staging folder")
    return staging
