"""`knowl build`: validate, render, fingerprint, index and publish a versioned artifact."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from msgspec import UNSET

from knowl_build import __version__, clock, embeddings, process
from knowl_build.artifacts import folders, layout, lock, opening, publication, schema
from knowl_build.config import Config
from knowl_build.diagnostics import Diagnostic, diagnostics_document
from knowl_build.errors import KnowlError, UsageError
from knowl_build.history.gitdir import git_folders
from knowl_build.parse.text import decode
from knowl_build.pipeline.analysis import analyse, summarize_counts
from knowl_build.pipeline.cache import cache_place
from knowl_build.pipeline.inputs import inputs_sha256, read_file, read_inputs
from knowl_build.trust import Sealer

if TYPE_CHECKING:
    from knowl_build.index.writer import Apart, IndexDocument
    from knowl_build.model import Page
    from knowl_build.pipeline.reuse import Span
    from knowl_build.semantic.layer import SemanticLayer

STAGES = ("discover", "parse", "render", "index", "vectors", "publish")


@dataclass(frozen=True, slots=True)
class BuildResult:
    diagnostics: list[Diagnostic]
    status: str  # "published" | "no-op" | "refused"
    build_id: str
    folder: Path | None  # the published (or current, for a no-op) artifact folder
    counts: dict[str, int]
    incremental: bool
    pruned: list[str]
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    notices: list[str] = field(default_factory=list)  # one line each, for stderr


def _repo_name(config: Config, root: Path, git: Any) -> str:
    if config.repo_name:
        return config.repo_name
    url: str | None = git.remote_url() if git is not None else None
    if url:
        name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return name[:-4] if name.endswith(".git") else name
    return root.name


@process.held()  # no cyclic collection while the run allocates
def build(
    root: Path,
    config: Config,
    *,
    full: bool = False,
    allow_errors: bool = False,
    out: Path | None = None,
    today: dt.date | None = None,
    progress: Any = None,
    gate: Callable[[list[Diagnostic]], list[Diagnostic]] | None = None,
) -> BuildResult:
    """`knowl build`: validate, render, fingerprint, index and publish an artifact.

    `gate` picks the findings whose errors refuse the publication (all of them by default;
    with `--baseline`, the new ones); the artifact records every finding either way.

    The previous artifact stays current until the new one is complete; a refused or failed
    build publishes nothing. A project root that cannot be written is not written to: the
    caches go under `<out>/.cache/` (a notice says so), and without `out` the run stops."""
    # Imported here, not above: the index (Whoosh) is loaded only by a build that writes an
    # artifact (start-up time of `knowl check`).
    from knowl_build.index.writer import documents_digest, write_apart, write_index
    from knowl_build.pipeline import records, reuse

    timings: dict[str, float] = {}
    started: dict[str, float] = {}

    def stage(name: str) -> None:
        now = time.perf_counter()
        for previous, since in started.items():
            timings[previous] = round(now - since, 3)
        started.clear()
        started[name] = now
        if progress is not None:
            progress(name)

    today = today or clock.today()
    if out is None:
        caches = cache_place(root)
        if caches.problem is not None:
            raise UsageError(
                f"the project root {root} {caches.problem}, so the build has nowhere to go: "
                "pass --out <a writable folder>"
            )
        out_dir = folders.check_out_dir(root, config, git=git_folders(root))
    else:
        out_dir = folders.check_out_dir(root, config, out, git_folders(root))
        caches = cache_place(root, out_dir)
    notices = list(caches.notices)
    # Only a build this machine sealed is reused (or answers for an unchanged tree).
    sealer = caches.sealer(layout.BUILD_SEAL)
    with folders.output_errors(out_dir), lock.build_lock(out_dir):
        stage("discover")
        inputs = read_inputs(root, config)
        git = inputs.discovery.git
        head = git.head() if git is not None else None
        input_hash = inputs_sha256(root, inputs, config)
        current = publication.current_folder(out_dir)
        previous = _manifest_or_none(current, sealer)
        if previous is None:
            current = None  # nothing of it is reused
        if (
            not full
            and previous is not None
            and current is not None
            and all(
                (
                    previous.commit == head,
                    previous.inputs_sha256 == input_hash,
                    previous.config_sha256 == config.sha256,
                    previous.tool_version == __version__,
                    previous.built_at[:10] == today.isoformat(),
                )
            )
        ):
            # Same inputs, same day: the published artifact already says everything.
            published = _published_findings(current)
        else:
            published = None
        if published is not None and previous is not None and current is not None:
            return BuildResult(
                published,
                "no-op",
                previous.build_id,
                current,
                dict(previous.counts),
                False,
                [],
                notices=notices,
            )

        incremental = (
            not full
            and current is not None
            and previous is not None
            and previous.tool_version == __version__
            # A record or an index of another schema is not this build's to extend.
            and previous.schema_version == layout.SCHEMA_VERSION
            and (current / "index").is_dir()
        )
        # A full index is written by a forked process from the documents sent to it as the
        # pages are parsed, while the rules and the records are worked out here
        # (`index.writer.write_apart`): a document needs only its page and the layer.
        apart: Apart | None = None
        staging: Path | None = None
        if not incremental:
            staging = publication.staging_folder(out_dir)
            try:
                apart = write_apart(staging / "index", config.index_memory_mb)
            except BaseException:
                _discard(None, staging)
                raise

        def index_pages(pages: list[Page], layer: SemanticLayer) -> None:
            if apart is not None:
                apart.send(_documents(pages, inputs.pages, layer))

        stage("parse")
        try:
            analysis = analyse(
                root,
                config,
                today=today,
                inputs=inputs,
                caches=caches,
                parsed=None if apart is None else index_pages,
            )
            if apart is not None:
                apart.finish()
        except BaseException:
            _discard(apart, staging)
            raise
        # From here on the build holds the pages' digests, not their bytes (`_Texts`).
        content = {path: digest for path, (_, digest) in inputs.pages.items()}
        readable = {path: d for path, (data, d) in inputs.pages.items() if data is not None}
        inputs.pages = {}
        diagnostics = analysis.diagnostics
        counts = summarize_counts(analysis)
        errors = counts["errors"]
        watched = [config.knowledge_dir, config.semantics_dir, "knowl.toml", "pyproject.toml"]
        if config.dbt_project_dir is not None:
            watched.append(config.dbt_project_dir or ".")
        dirty = head is not None and git is not None and git.dirty(watched)
        if head is None:
            build_id = f"nogit-{input_hash[:12]}"
        else:
            build_id = head[:12] + (f"-dirty-{input_hash[:8]}" if dirty else "")

        blocking = diagnostics if gate is None else gate(diagnostics)
        if any(d.severity == "error" for d in blocking) and not allow_errors:
            _discard(apart, staging)
            return BuildResult(
                diagnostics, "refused", build_id, None, counts, False, [], notices=notices
            )

        stage("render")
        texts = _Texts(root, readable)
        old = reuse.Previous.load(current) if incremental and current is not None else None
        rows = reuse.assemble(analysis, texts, content, old)
        entities = records.entity_records(analysis)
        graph_key = reuse.graph_digest(analysis, rows.pages, rows.resolved)

        if staging is None:
            staging = publication.staging_folder(out_dir)
        # The kept builds as validated before this build links their files.
        shared_from = publication.kept_builds(out_dir)
        # The sha256 of each file written from memory or copied from the previous build (it
        # was validated), so that the manifest does not read them back.
        known: dict[str, str] = {}

        def put(name: str, data: bytes) -> None:
            digest = hashlib.sha256(data).hexdigest()
            known[name] = digest
            # The same bytes as the current build's: share its file (`_share`).
            if (
                current is not None
                and previous is not None
                and previous.files.get(name) == digest
                and _share(current / name, staging / name)
            ):
                return
            (staging / name).write_bytes(data)

        # The records, the largest file, are written and hashed in a thread (both release the
        # GIL) while the rest of the artifact and the index are made.
        writer = ThreadPoolExecutor(max_workers=1)
        try:
            pages_written = writer.submit(
                _write_members, staging / layout.RECORDS, rows.members, rows.source
            )
            put(
                "catalog.json",
                schema.encode(
                    schema.Catalog(pages=rows.catalog, caveats=schema.catalog_caveats(rows.catalog))
                ),
            )
            put("entities.json", schema.encode(entities))
            if old is not None and old.graph == graph_key and previous is not None:
                if not _share(old.folder / "graph.json", staging / "graph.json"):
                    shutil.copyfile(old.folder / "graph.json", staging / "graph.json")
                known["graph.json"] = previous.files["graph.json"]
            else:
                # networkx loads only for a graph built anew (start-up time of an edit).
                from knowl_build.graph import to_json as graph_json

                graph = records.reference_graph(analysis)
                put("graph.json", graph_json(graph).encode("utf-8"))
            put(reuse.SIGNATURES, schema.encode(reuse.signatures_record(rows, graph_key)))
            put("diagnostics.json", schema.encode(diagnostics_document(diagnostics)))
            stage("index")
            update = None
            if apart is not None:
                expected = documents_digest(
                    rows.index_document(key) for key in sorted(rows.index_digests)
                )
                update = apart.wait(rows.index_digests, expected)
                apart = None
            if update is None:
                if incremental and current is not None:
                    _share_index(current / "index", staging / "index")
                update = write_index(
                    staging / "index",
                    rows.index_digests,
                    rows.index_document,
                    incremental,
                    config.index_memory_mb,
                )
            if incremental and previous is not None:
                # A segment file is never written again once it exists (Whoosh adds segments
                # and records deletions in its table of contents): a copied one is unchanged.
                for name, digest_of in previous.files.items():
                    if (
                        name.startswith("index/")
                        and name.endswith(".seg")
                        and (staging / name).is_file()
                        and (staging / name).stat().st_size == (previous.sizes or {}).get(name)
                    ):
                        known[name] = digest_of
            stage("vectors")
            vectors = _write_vectors(staging, rows, current if incremental else None)
            stage("publish")
            known[layout.RECORDS] = pages_written.result()
            writer.shutdown()
            files = layout.file_table(staging, known)
            manifest = schema.Manifest(
                format=layout.FORMAT,
                schema_version=layout.SCHEMA_VERSION,
                tool_version=__version__,
                build_id=build_id,
                commit=head,
                dirty=bool(dirty) if head is not None else True,
                inputs_sha256=input_hash,
                config_sha256=config.sha256,
                built_at=clock.stamp()
                if clock.pinned() is None
                else f"{today.isoformat()}T00:00:00Z",
                repo=_repo_name(config, root, git),
                counts=counts,
                error_count=errors,
                search=schema.SearchSettings(
                    boosts=dict(sorted(config.search.boosts.items())),
                    max_caveats=config.search.max_caveats,
                ),
                records=schema.RecordCounts(
                    reused=rows.reused, built=len(rows.pages) - rows.reused
                ),
                index=schema.IndexUpdateCounts(
                    added=update.added,
                    updated=update.updated,
                    deleted=update.deleted,
                    merged=update.merged,
                    incremental=incremental,
                ),
                vectors=vectors or UNSET,
                files=files,
                sizes={
                    name: (staging / name).stat().st_size
                    for name in files
                    if name.startswith("index/")
                },
            )
            (staging / layout.MANIFEST).write_bytes(schema.encode(manifest))
            publication.relink(shared_from)
            folder = publication.publish(out_dir, staging, build_id, sealer)
        except BaseException as exc:
            writer.shutdown(wait=True, cancel_futures=True)
            _discard(apart, staging)
            if isinstance(exc, OSError):
                failure = folders.output_failure(out_dir, exc, writing=True)
                if failure is not None:
                    raise failure from None
            raise
        pruned = publication.prune(out_dir, config.keep_builds)
        stage("done")
        return BuildResult(
            diagnostics,
            "published",
            build_id,
            folder,
            counts,
            incremental,
            pruned,
            timings,
            notices,
        )


def _documents(
    pages: list[Page], inputs: Mapping[str, tuple[bytes | None, str]], layer: SemanticLayer
) -> list[IndexDocument]:
    """The index documents of those of `pages` that get a record, in their order."""
    # Loaded with the build that writes an index (start-up time of `knowl check`).
    from knowl_build.pipeline import records

    found = []
    for page in pages:
        data = inputs[page.path][0]
        if page.parsed.text_ok and data is not None:
            found.append(records.page_document(page, decode(data) or "", layer))
    return found


def _discard(apart: Apart | None, staging: Path | None) -> None:
    """Stop an index being written apart, and remove the staging folder."""
    if apart is not None:
        apart.cancel()
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)


def _share(source: Path, target: Path) -> bool:
    """Link `target` to the unchanged file `source` of the build before (kept builds share
    what did not change; neither is ever written again). False where the file system links
    nothing: the caller writes or copies it."""
    try:
        os.link(source, target)
    except OSError:
        return False
    return True


def _share_index(source: Path, target: Path) -> None:
    """The previous index, to update in `target`: its segment files shared (Whoosh never
    writes a segment file again; it adds segments and records deletions in the table of
    contents), the small files it rewrites in place copied."""
    target.mkdir()
    with os.scandir(source) as entries:
        for entry in entries:
            if not entry.is_file(follow_symlinks=False):
                continue
            destination = target / entry.name
            if not (entry.name.endswith(".seg") and _share(Path(entry.path), destination)):
                shutil.copyfile(entry.path, destination)


def _write_members(path: Path, members: list[bytes | Span], source: Path | None) -> str:
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


class _Texts(Mapping[str, str]):
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


def _write_vectors(staging: Path, rows: Any, previous: Path | None) -> dict[str, Any]:
    """With the embeddings extra: one vector per page (unchanged pages reuse theirs)."""

    if not embeddings.available():
        return {}
    texts = [
        (row.path, embeddings.page_text(row.fields.summary, row.body)) for row in rows.records()
    ]
    old = previous / embeddings.FOLDER if previous is not None else None
    counts = embeddings.write_vectors(staging / embeddings.FOLDER, texts, old)
    return {"model": embeddings.Embedder.get().identity, **counts}


def _manifest_or_none(folder: Path | None, sealer: Sealer | None) -> schema.Manifest | None:
    """The current build's manifest once the build is known to be this machine's (sealed
    with its key) and whole (validated, as a reader would); None when there is none, it was
    written elsewhere (committed with the project, say) or it is damaged: then this build
    starts from nothing and replaces it, instead of reusing what it cannot trust."""
    if folder is None or sealer is None:
        return None
    manifest = publication.sealed(folder, sealer)
    if manifest is None:
        return None
    try:
        opened = opening.open_artifact(folder)
    except KnowlError:
        return None
    opened.close()
    try:
        same = schema.decode(layout.MANIFEST, manifest, schema.Manifest) == opened.manifest
    except KnowlError:
        return None
    return opened.manifest if same else None  # not swapped since the seal's check


def _published_findings(folder: Path) -> list[Diagnostic] | None:
    try:
        published = json.loads((folder / "diagnostics.json").read_bytes())
        return [Diagnostic.from_json(d) for d in published["diagnostics"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
