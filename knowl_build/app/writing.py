"""Governed writes: `store`, `supersede`, `review` and `fix` (SPEC 7).

Every write acts for a user (or anonymous), whose name is checked before anything is read;
the writes themselves enforce who may change what, keep files byte for byte and refuse what
they cannot do safely. `--commit` commits exactly the files written.

A write and the rebuild that makes it readable are two steps. Only a write that wrote nothing
fails; once files are written, whatever stops the rebuild (another build holding the lock, a
build error) is part of a successful answer (`rebuilt` false, and why), decided here once for
every front end. A caller that retried a write it was told had failed would write it twice.
The same holds for `--commit`: a commit git refuses once the files are written (a hook, a
held index lock) is a successful answer saying the files are not committed and why
(`committed` false), and a write that changed no file has nothing to commit.

Governed writes of one project run one at a time: each holds the write lock (not the build
lock, so a write runs while a build does) from reading the tree to writing and committing,
so two stores of one subject reconcile with each other as they would one after the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowl_build.app import checking
from knowl_build.app.project import Project
from knowl_build.artifacts import publication
from knowl_build.artifacts.lock import BuildBusy, write_lock
from knowl_build.artifacts.manifest import read_manifest
from knowl_build.core.diagnostics import EXIT_FINDINGS, EXIT_OK
from knowl_build.core.errors import ArtifactError, KnowlError, UsageError
from knowl_build.core.model import CATEGORIES, DRAFT
from knowl_build.core.names import valid_user
from knowl_build.pipeline.analysis import analyse
from knowl_build.secrets.scanner import redact
from knowl_build.writes import create, governance
from knowl_build.writes import fix as fixes
from knowl_build.writes.common import NOTHING_WRITTEN, Committed, commit, commit_repo
from knowl_build.writes.create import NewPage as NewPage  # the request `knowl new` builds
from knowl_build.writes.pagefile import Change, WriteRaced
from knowl_build.writes.request import Request
from knowl_build.writes.store import Outcome
from knowl_build.writes.store import store as run_store


def request(
    *,
    category: str,
    title: str,
    content: str,
    user: str | None = None,
    summary: str | None = None,
    tags: Sequence[str] | None = None,
    sl_refs: Sequence[str] | None = None,
    refs: Sequence[str] | None = None,
    usage_mode: str | None = None,
    confidence: float | None = None,
    provenance: str | None = None,
    source: str | None = None,
    source_commit: str | None = None,
    paths: Sequence[str] | None = None,
    reasoning: str | None = None,
    alternatives: Sequence[str] | None = None,
    steps: Sequence[str] | None = None,
    conflict_key: str | None = None,
    conflict_scope: Mapping[str, str] | None = None,
    exclusive: bool = False,
    supersedes: str | None = None,
) -> Request:
    """What `store` is asked to write, from any front end's arguments: the category and the
    conflict options are checked here (exit 2 / a tool error), the rest by the write."""
    if category not in CATEGORIES:
        raise UsageError(f"category must be one of {', '.join(CATEGORIES)}")
    if conflict_key is None and (conflict_scope or exclusive):
        raise UsageError("--conflict-scope and --exclusive need --conflict-key")
    return Request(
        category=category,
        title=title,
        content=content,
        user=user,
        summary=summary,
        tags=list(tags or ()),
        sl_refs=list(sl_refs or ()),
        refs=list(refs or ()),
        usage_mode=usage_mode,
        confidence=confidence,
        provenance=provenance,
        source=source,
        source_commit=source_commit,
        paths=list(paths or ()),
        reasoning=reasoning,
        alternatives=list(alternatives or ()),
        steps=list(steps or ()),
        conflict_key=conflict_key,
        conflict_scope=dict(conflict_scope or {}),
        exclusive=exclusive,
        supersedes=supersedes,
    )


# The build after a write: the statuses of a build that makes the write readable.
REBUILT = ("published", "no-op")


@dataclass(frozen=True, slots=True)
class Republished:
    """The build after a write, which makes the written page readable at once."""

    status: str  # published | no-op | refused | skipped | busy | failed
    build_id: str | None
    reason: str | None = None  # why the page is not readable yet (any status but REBUILT)

    @property
    def rebuilt(self) -> bool:
        return self.status in REBUILT

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "build_id": self.build_id, "reason": self.reason}


def republish(project: Project) -> Republished:
    """Rebuild incrementally after a write (the written pages are a cheap build), so search
    and read find them at once. Only a project that has a build is rebuilt: the first build
    is the user's to make. A project with error findings elsewhere keeps its last good build
    (a failed build never replaces it), and the answer says why; unless its current build was
    itself published with errors (`knowl build --allow-errors`), which the rebuild repeats.

    Called once the write is on disk, so it never raises: a rebuild that cannot run (another
    build holds the lock) or stops (any error) is an answer saying why, and the write stands."""
    try:
        return _republish(project)
    except BuildBusy as exc:
        return Republished("busy", None, f"{exc}, then run knowl build")
    except KnowlError as exc:
        return Republished("failed", None, f"the build stopped: {exc}; run knowl build")
    except Exception as exc:  # the write stands whatever stopped its build; the answer says so
        reason = f"the build stopped: internal error: {type(exc).__name__}: {exc}"
        return Republished("failed", None, redact(reason))


def _republish(project: Project) -> Republished:
    current = publication.current_folder(project.out_dir)
    if current is None:
        return Republished("skipped", None, "no build yet: run knowl build")
    try:
        # A current build published with errors (`--allow-errors`) is rebuilt the same way.
        allow_errors = read_manifest(current).error_count > 0
    except ArtifactError:
        allow_errors = False
    outcome = checking.build(project, checking.BuildOptions(allow_errors=allow_errors))
    result = outcome.result
    if result.status == "refused":
        errors = sum(d.severity == "error" for d in outcome.findings)
        return Republished(
            "refused",
            None,
            f"the project has {errors} error finding(s) (see knowl check); "
            "the last good build stays current",
        )
    return Republished(result.status, result.build_id)


def _after(build: Republished | None, commit: Committed | None) -> dict[str, Any]:
    """What every write answers after writing: the build and the commit that followed it."""
    return {
        "build": build.to_json() if build is not None else None,
        "rebuilt": build is not None and build.rebuilt,
        "commit": commit.to_json() if commit is not None else None,
        "committed": commit is not None and commit.committed,
    }


@dataclass(frozen=True, slots=True)
class Stored:
    outcome: Outcome
    exit_status: int
    status: str = "active"  # the written page's status (`draft` for an agent's, if so set)
    build: Republished | None = None  # None: nothing was written, or no rebuild was asked

    @property
    def rebuilt(self) -> bool:
        """Whether the build was refreshed after the write (search finds the page now)."""
        return self.build is not None and self.build.rebuilt

    @property
    def commit(self) -> Committed | None:
        """What `--commit` did (None without it, or for a refused write)."""
        return self.outcome.commit

    def to_json(self) -> dict[str, Any]:
        """The store answer, with the page's status, the build that made it readable and
        the commit."""
        answer = self.outcome.to_json()
        answer["status"] = self.status
        answer.update(_after(self.build, self.commit))
        return answer


def store(
    project: Project,
    request: Request,
    *,
    do_commit: bool = False,
    agent: bool = False,
    rebuild: bool = True,
) -> Stored:
    """Write knowledge as a new page, reconciled with what the tree holds (SPEC 7.1). An
    agent's page lands with `[writes] agent_status` (`draft`: held for a person's review).
    With `rebuild`, a write that changed files is followed by an incremental build; only a
    refusal (nothing written) is exit 1, whatever the rebuild answered."""
    if agent and project.config.agent_status == DRAFT:
        request.status = DRAFT
    try:
        with write_lock(project.out_dir):
            outcome = run_store(project.root, project.config, request, do_commit=do_commit)
    except WriteRaced as exc:
        if exc.written:
            raise  # part of the write is on disk: not a refusal, the message says what
        # Another program changed the tree under the write, nothing was written: a refusal
        # answered as every refusal is (`--json` and MCP get the answer, not an error).
        outcome = Outcome("refused", Path(exc.path).stem, exc.path, message=str(exc))
    build = republish(project) if rebuild and outcome.action == "inserted" else None
    status = EXIT_FINDINGS if outcome.action == "refused" else EXIT_OK
    return Stored(outcome, status, request.status or "active", build)


@dataclass(frozen=True, slots=True)
class Written:
    """What `supersede` or `review` wrote: the files changed, then the commit (None without
    `--commit`) and the build (None when nothing was written or no rebuild was asked)."""

    changes: list[Change]
    commit: Committed | None = None
    build: Republished | None = None

    @property
    def rebuilt(self) -> bool:
        """Whether the build was refreshed after the write (search finds the change now)."""
        return self.build is not None and self.build.rebuilt

    @property
    def committed(self) -> bool:
        return self.commit is not None and self.commit.committed

    def after(self) -> dict[str, Any]:
        """The answer's common part: the files written, the build and the commit."""
        return {"paths": [redact(c.path) for c in self.changes], **_after(self.build, self.commit)}


@dataclass(frozen=True, slots=True)
class Superseded(Written):
    old: str = ""  # the pages as asked
    new: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"superseded": redact(self.old), "superseded_by": redact(self.new), **self.after()}


@dataclass(frozen=True, slots=True)
class Review(Written):
    pages: list[governance.Reviewed] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        # Page names come from file names, which a secret may have reached.
        pages = [
            {
                "page": redact(p.page),
                "path": redact(p.path),
                "status": p.status,
                "changed": p.changed,
            }
            for p in self.pages
        ]
        return {"pages": pages, **self.after()}


def supersede(
    project: Project,
    old: str,
    new: str,
    *,
    user: str | None = None,
    do_commit: bool = False,
    rebuild: bool = True,
) -> Superseded:
    """Mark OLD superseded by NEW (SPEC 7.2); a refusal is exit 1 (WriteRefused)."""
    user = valid_user(user)
    with write_lock(project.out_dir):
        result = governance.supersede(
            project.root, project.config, old, new, user=user, do_commit=do_commit
        )
    build = republish(project) if rebuild and result.changes else None
    return Superseded(result.changes, result.commit, build, old, new)


def review(
    project: Project,
    pages: list[str],
    *,
    user: str | None = None,
    force: bool = False,
    do_commit: bool = False,
    rebuild: bool = True,
) -> Review:
    """A person re-read the pages (SPEC 7.3): validation date now, fingerprints refreshed, an
    agent's draft promoted to active. A page the review leaves byte for byte as it was is
    neither written nor committed."""
    user = valid_user(user)
    with write_lock(project.out_dir):
        result = governance.review(
            project.root, project.config, pages, user=user, force=force, do_commit=do_commit
        )
    build = republish(project) if rebuild and result.changes else None
    return Review(result.changes, result.commit, build, result.reviewed)


@dataclass(frozen=True, slots=True)
class Fixed:
    plan: fixes.FixPlan
    written: list[str]  # with apply: the paths written
    applied: bool
    exit_status: int
    commit: Committed | None = None  # with apply and --commit: what the commits did


def fix(
    project: Project, *, user: str | None = None, apply: bool = False, do_commit: bool = False
) -> Fixed:
    """Proposals for what is fixable (SPEC 7.4), written with `apply`: exit 1 when proposals
    (or refusals) are left unwritten, 0 otherwise (a commit git refuses included)."""
    user = valid_user(user)
    if not apply:
        plan = fixes.plan(analyse(project.root, project.config), user=user)
        status = EXIT_FINDINGS if plan.proposals or plan.refused else EXIT_OK
        return Fixed(plan, [], False, status)
    repo = commit_repo(project.root) if do_commit else None
    with write_lock(project.out_dir):
        plan = fixes.plan(analyse(project.root, project.config), user=user)
        written = fixes.apply(project.root, plan)
        committed = None
        if repo is not None:
            messages = [f"Fix {Path(proposal.path).stem}" for proposal in plan.proposals]
            pairs = zip(written, messages, strict=True)
            commits = [([path], message) for path, message in pairs]
            committed = commit(repo, commits) if commits else NOTHING_WRITTEN
    return Fixed(plan, written, True, EXIT_OK, committed)


@dataclass(frozen=True, slots=True)
class Created:
    """What `knowl new` wrote (or why not): the page, its findings, the commit."""

    outcome: Outcome
    exit_status: int

    def to_json(self) -> dict[str, Any]:
        answer = {
            "action": "created" if self.outcome.action == "inserted" else "refused",
            "page": self.outcome.to_json()["page"],
            "path": self.outcome.to_json()["path"],
            "diagnostics": self.outcome.diagnostics,
            "message": redact(self.outcome.message),
        }
        commit = self.outcome.commit
        answer["commit"] = commit.to_json() if commit is not None else None
        answer["committed"] = commit is not None and commit.committed
        return answer


def new_page(project: Project, request: NewPage, *, do_commit: bool = False) -> Created:
    """A person's new page with valid frontmatter (`knowl new`); a refusal (error findings, an
    id the scope already holds) writes nothing and is exit 1."""
    if request.category is not None and request.category not in CATEGORIES:
        raise UsageError(f"category must be one of {', '.join(CATEGORIES)}")
    try:
        with write_lock(project.out_dir):
            outcome = create.new(project.root, project.config, request, do_commit=do_commit)
    except WriteRaced as exc:
        if exc.written:
            raise
        outcome = Outcome("refused", Path(exc.path).stem, exc.path, message=str(exc))
    return Created(outcome, EXIT_FINDINGS if outcome.action == "refused" else EXIT_OK)
