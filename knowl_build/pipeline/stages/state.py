"""The one value `knowl build` passes from stage to stage (`pipeline.publish.build`).

`BuildRequest` is what was asked, frozen. `BuildState` is a mutable record with one typed
field per thing a stage finds, each written by exactly one stage and read by the later
ones. It is mutable rather than a chain of frozen values because a build holds resources
(the staging folder, the index written apart, the records' writer thread) that whichever
stage fails must release: one object that always says what is open is what the clean-up
reads. A field a stage fills has no default: reading it before that stage ran is an
AttributeError, not a silent None."""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.pipeline.cache import CachePlace
from knowl_build.pipeline.inputs import Inputs
from knowl_build.pipeline.stages.values import Analysis, ParsedProject, Resolved
from knowl_build.support.trust import Sealer

if TYPE_CHECKING:
    from knowl_build.artifacts.schema import Entities, Manifest
    from knowl_build.history.git import GitRepo
    from knowl_build.index.writer import Apart, IndexUpdate
    from knowl_build.pipeline.reuse import Previous, Rows

Gate = Callable[[list[Diagnostic]], list[Diagnostic]]


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


@dataclass(frozen=True, slots=True)
class BuildRequest:
    """`knowl build`'s options (`pipeline.publish.build` says what each does)."""

    root: Path
    config: Config
    today: dt.date
    full: bool = False
    allow_errors: bool = False
    out: Path | None = None
    progress: Callable[[str], object] | None = None
    gate: Gate | None = None


@dataclass(slots=True)
class Stopwatch:
    """Seconds per named stage; `progress` hears each stage's name as it starts."""

    progress: Callable[[str], object] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    running: tuple[str, float] | None = None

    def start(self, name: str) -> None:
        now = time.perf_counter()
        if self.running is not None:
            self.timings[self.running[0]] = round(now - self.running[1], 3)
        self.running = (name, now)
        if self.progress is not None:
            self.progress(name)


@dataclass(slots=True)
class BuildState:
    """One build as the stages work it out (see the module's docstring)."""

    request: BuildRequest
    out_dir: Path
    caches: CachePlace
    sealer: Sealer | None  # only a build this machine sealed is reused
    notices: list[str]
    clock: Stopwatch
    # What is open, for the clean-up of a build that stops (`release.discard`).
    apart: Apart | None = None  # the index written by a forked process (full builds)
    staging: Path | None = None  # the artifact being made
    writer: ThreadPoolExecutor | None = None  # writes and hashes the records
    # discover
    inputs: Inputs = field(init=False)
    git: GitRepo | None = field(init=False)
    head: str | None = field(init=False)
    input_hash: str = field(init=False)
    current: Path | None = field(init=False)  # the current build, when it can be trusted
    previous: Manifest | None = field(init=False)  # its manifest
    incremental: bool = field(init=False)
    # parse, analyse, check
    content: dict[str, str] = field(init=False)  # each page's sha256
    readable: dict[str, str] = field(init=False)  # each readable page's sha256
    parsed: ParsedProject = field(init=False)
    resolved: Resolved = field(init=False)
    analysis: Analysis = field(init=False)
    counts: dict[str, int] = field(init=False)
    dirty: bool = field(init=False)
    build_id: str = field(init=False)
    # render: the sha256 of each file written from memory or copied from the previous build
    # (it was validated), so that the manifest does not read them back
    known: dict[str, str] = field(default_factory=dict)
    old: Previous | None = field(init=False)  # the previous build's rows, to reuse
    rows: Rows = field(init=False)
    entities: Entities = field(init=False)
    graph_key: str = field(init=False)
    # the kept builds, as validated before this build links their files
    shared_from: list[tuple[Path, dict[str, Any] | None]] = field(init=False)
    records_written: Future[str] = field(init=False)  # the records file's sha256
    # index
    update: IndexUpdate = field(init=False)
    vectors: dict[str, Any] = field(init=False)
    # publish
    folder: Path = field(init=False)

    @property
    def root(self) -> Path:
        return self.request.root

    @property
    def config(self) -> Config:
        return self.request.config

    @property
    def today(self) -> dt.date:
        return self.request.today

    def discard(self) -> None:
        """Stop the index being written apart and remove the staging folder: a build that
        stops publishes nothing, and the current build stays current."""
        if self.apart is not None:
            self.apart.cancel()
            self.apart = None
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)

    @contextlib.contextmanager
    def discarded_on_failure(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            self.discard()
            raise
