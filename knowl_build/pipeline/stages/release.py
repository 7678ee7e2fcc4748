"""The publish stage: the manifest written, the staging folder made the current build in one
atomic switch, the oldest builds pruned. Until that switch the build before stays current,
and a build that stops on the way publishes nothing (`writing`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from msgspec import UNSET

from knowl_build import __version__
from knowl_build.artifacts import folders, layout, publication, schema
from knowl_build.core.config import Config
from knowl_build.history.git import GitRepo
from knowl_build.pipeline.stages.state import BuildResult, BuildState
from knowl_build.support import clock


@contextlib.contextmanager
def writing(state: BuildState) -> Iterator[None]:
    """What writes the artifact: when it stops, the records' writer and the index written
    apart are stopped, the staging folder removed, and an OSError on the output folder is
    the one-line error of knowl's that says so."""
    try:
        yield
    except BaseException as exc:
        if state.writer is not None:
            state.writer.shutdown(wait=True, cancel_futures=True)
        state.discard()
        if isinstance(exc, OSError):
            failure = folders.output_failure(state.out_dir, exc, writing=True)
            if failure is not None:
                raise failure from None
        raise


def publish(state: BuildState) -> None:
    """The manifest (the sha256 of every file), then the publication."""
    state.clock.start("publish")
    staging, writer = state.staging, state.writer
    if staging is None or writer is None:
        raise ValueError("the publish stage runs after the render stage wrote the artifact")
    state.known[layout.RECORDS] = state.records_written.result()
    writer.shutdown()
    files = layout.file_table(staging, state.known)
    (staging / layout.MANIFEST).write_bytes(schema.encode(manifest(state, staging, files)))
    publication.relink(state.shared_from)
    state.folder = publication.publish(state.out_dir, staging, state.build_id, state.sealer)


def finish(state: BuildState) -> BuildResult:
    """The builds beyond `keep_builds` pruned; the build's answer."""
    pruned = publication.prune(state.out_dir, state.config.keep_builds)
    state.clock.start("done")
    return BuildResult(
        state.analysis.diagnostics,
        "published",
        state.build_id,
        state.folder,
        state.counts,
        state.incremental,
        pruned,
        state.clock.timings,
        state.notices,
    )


def manifest(state: BuildState, staging: Path, files: dict[str, str]) -> schema.Manifest:
    config, head, rows, update = state.config, state.head, state.rows, state.update
    pinned = clock.pinned() is not None
    return schema.Manifest(
        format=layout.FORMAT,
        schema_version=layout.SCHEMA_VERSION,
        tool_version=__version__,
        build_id=state.build_id,
        commit=head,
        dirty=bool(state.dirty) if head is not None else True,
        inputs_sha256=state.input_hash,
        config_sha256=config.sha256,
        built_at=f"{state.today.isoformat()}T00:00:00Z" if pinned else clock.stamp(),
        repo=repo_name(config, state.root, state.git),
        counts=state.counts,
        error_count=state.counts["errors"],
        search=schema.SearchSettings(
            boosts=dict(sorted(config.search.boosts.items())),
            max_caveats=config.search.max_caveats,
        ),
        records=schema.RecordCounts(reused=rows.reused, built=len(rows.pages) - rows.reused),
        index=schema.IndexUpdateCounts(
            added=update.added,
            updated=update.updated,
            deleted=update.deleted,
            merged=update.merged,
            incremental=state.incremental,
        ),
        vectors=state.vectors or UNSET,
        files=files,
        sizes={
            name: (staging / name).stat().st_size for name in files if name.startswith("index/")
        },
    )


def repo_name(config: Config, root: Path, git: GitRepo | None) -> str:
    if config.repo_name:
        return config.repo_name
    url: str | None = git.remote_url() if git is not None else None
    if url:
        name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return name[:-4] if name.endswith(".git") else name
    return root.name
