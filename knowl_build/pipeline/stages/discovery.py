"""The discover stage: where the build goes, what it reads, and the build before it (whether
this one has anything to add, and whether it can extend that one)."""

from __future__ import annotations

import json
from pathlib import Path

from knowl_build import __version__
from knowl_build.artifacts import folders, layout, opening, publication, schema
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.core.errors import KnowlError, UsageError
from knowl_build.history.gitdir import git_folders
from knowl_build.pipeline.cache import CachePlace, cache_place
from knowl_build.pipeline.inputs import inputs_sha256, read_inputs
from knowl_build.pipeline.stages.state import BuildRequest, BuildResult, BuildState, Stopwatch
from knowl_build.pipeline.stats import stat_cache
from knowl_build.support.trust import Sealer


def prepare(request: BuildRequest) -> BuildState:
    """The output folder and the caches. A project root that cannot be written is not
    written to: the caches go under `<out>/.cache/` (a notice says so), and without `out`
    the build stops here."""
    root, config = request.root, request.config
    caches: CachePlace
    if request.out is None:
        caches = cache_place(root)
        if caches.problem is not None:
            raise UsageError(
                f"the project root {root} {caches.problem}, so the build has nowhere to go: "
                "pass --out <a writable folder>"
            )
        out_dir = folders.check_out_dir(root, config, git=git_folders(root))
    else:
        out_dir = folders.check_out_dir(root, config, request.out, git_folders(root))
        caches = cache_place(root, out_dir)
    return BuildState(
        request,
        out_dir,
        caches,
        caches.sealer(layout.BUILD_SEAL),
        list(caches.notices),
        Stopwatch(request.progress),
    )


def discover(state: BuildState) -> None:
    """The inputs read and hashed, the commit, and the current build when this machine
    sealed it and it is whole (nothing of any other is reused)."""
    state.clock.start("discover")
    # A full build reads every page (and so refreshes the stat cache).
    stats = None if state.request.full else stat_cache(state.caches, state.root)
    state.inputs = read_inputs(state.root, state.config, stats)
    state.git = git = state.inputs.discovery.git
    state.head = git.head() if git is not None else None
    state.input_hash = inputs_sha256(state.root, state.inputs, state.config)
    current = publication.current_folder(state.out_dir)
    state.previous = _manifest_or_none(current, state.sealer)
    state.current = current if state.previous is not None else None
    state.incremental = _extends(state)


def unchanged(state: BuildState) -> BuildResult | None:
    """The no-op: same inputs, configuration, tool and day as the current build, whose
    findings then say everything this build would."""
    previous, current = state.previous, state.current
    if state.request.full or previous is None or current is None:
        return None
    same = (
        previous.commit == state.head,
        previous.inputs_sha256 == state.input_hash,
        previous.config_sha256 == state.config.sha256,
        previous.tool_version == __version__,
        # An artifact of another schema is rebuilt (a newer reader reads it more slowly).
        previous.schema_version == layout.SCHEMA_VERSION,
        previous.built_at[:10] == state.today.isoformat(),
    )
    published = _published_findings(current) if all(same) else None
    if published is None:
        return None
    return BuildResult(
        published,
        "no-op",
        previous.build_id,
        current,
        dict(previous.counts),
        False,
        [],
        notices=state.notices,
    )


def _extends(state: BuildState) -> bool:
    """Whether this build updates the current one's records and index (incremental)."""
    previous, current = state.previous, state.current
    return (
        not state.request.full
        and current is not None
        and previous is not None
        and previous.tool_version == __version__
        # A record or an index of another schema is not this build's to extend.
        and previous.schema_version == layout.SCHEMA_VERSION
        and (current / "index").is_dir()
    )


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
