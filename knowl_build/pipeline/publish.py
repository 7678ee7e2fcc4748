"""`knowl build`: validate, render, fingerprint, index and publish a versioned artifact.

`build()` is the table of contents: each stage is a module of `pipeline.stages`, and they
pass one `BuildState` along (see `pipeline/stages/state.py` for why it is one mutable
value)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from knowl_build.artifacts import folders, lock
from knowl_build.core.config import Config
from knowl_build.pipeline.stages import STAGES as STAGES  # the stages a front end shows
from knowl_build.pipeline.stages import discovery, findings, parsing, resolution
from knowl_build.pipeline.stages.state import BuildRequest, Gate
from knowl_build.pipeline.stages.state import BuildResult as BuildResult
from knowl_build.support import clock, process


@process.held()  # no cyclic collection while the run allocates
def build(
    root: Path,
    config: Config,
    *,
    full: bool = False,
    allow_errors: bool = False,
    out: Path | None = None,
    today: dt.date | None = None,
    progress: Callable[[str], object] | None = None,
    gate: Gate | None = None,
) -> BuildResult:
    """`knowl build`: validate, render, fingerprint, index and publish an artifact.

    `gate` picks the findings whose errors refuse the publication (all of them by default;
    with `--baseline`, the new ones); the artifact records every finding either way.

    The previous artifact stays current until the new one is complete; a refused or failed
    build publishes nothing. A project root that cannot be written is not written to: the
    caches go under `<out>/.cache/` (a notice says so), and without `out` the run stops."""
    # Imported here, not above: the stages after the check load the index (Whoosh) and
    # write the artifact, which only a build does (start-up time of `knowl check`).
    from knowl_build.pipeline.stages import indexing, release, rendering

    request = BuildRequest(
        root, config, today or clock.today(), full, allow_errors, out, progress, gate
    )
    state = discovery.prepare(request)
    with folders.output_errors(state.out_dir), lock.build_lock(state.out_dir):
        discovery.discover(state)
        if (same := discovery.unchanged(state)) is not None:
            return same
        with state.discarded_on_failure():
            parsing.parse(state)
            resolution.analyse(state)
            if (refused := findings.check(state)) is not None:
                return refused
            rendering.render(state)
        with release.writing(state):
            rendering.write(state)
            indexing.index(state)
            indexing.vectors(state)
            release.publish(state)
        return release.finish(state)
