"""Artifacts built for one run and thrown away: the project at another revision (`knowl eval
--baseline REF`), or the working tree without touching the project's own build (`--build`).

A revision is checked out as `knowl check --baseline` does it (`baseline.revision`: a clone that
borrows the repository's objects, only the project's files checked out), built with the
working tree's configuration, errors allowed (a base with a broken link still answers searches),
in a temporary folder removed when the `with` block ends.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.errors import UsageError
from knowl_build.history.git import GitFailed, first_line
from knowl_build.history.pages import checkout_at
from knowl_build.pipeline.baseline import project_paths, revision, share_parse_cache
from knowl_build.pipeline.publish import build


@dataclass(frozen=True, slots=True)
class Snapshot:
    folder: Path  # the artifact
    commit: str | None  # the revision it was built from; None for the working tree


def _published(result_folder: Path | None, what: str) -> Path:
    if result_folder is None:  # a build with errors allowed publishes; only a no-op has none
        raise UsageError(f"{what}: the build published no artifact")
    return result_folder


@contextmanager
def built_at(root: Path, config: Config, ref: str) -> Iterator[Snapshot]:
    """The project as it was at `ref`, built into a temporary folder."""
    repo, commit = revision(root, ref)
    workdir = Path(tempfile.mkdtemp(prefix="knowl-eval-"))
    try:
        try:
            project = checkout_at(repo, commit, project_paths(config), workdir / "repo")
        except GitFailed as exc:
            raise UsageError(f"--baseline: cannot check out '{ref}': {first_line(exc)}") from None
        share_parse_cache(root, project)
        result = build(project, config, full=True, allow_errors=True, out=workdir / "out")
        yield Snapshot(_published(result.folder, f"--baseline {ref}"), commit)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def built_now(root: Path, config: Config) -> Iterator[Snapshot]:
    """The working tree built into a temporary folder (the project's build is left alone)."""
    workdir = Path(tempfile.mkdtemp(prefix="knowl-eval-"))
    try:
        result = build(root, config, allow_errors=True, out=workdir / "out")
        yield Snapshot(_published(result.folder, "--build"), None)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
