"""What every write shares: loading the tree, picking pages, writing files, committing."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.core.errors import UsageError
from knowl_build.core.layouts import Layout
from knowl_build.core.model import Page
from knowl_build.core.names import normalize_owner, valid_user
from knowl_build.core.pageref import GLOBAL, Named, pick, writable
from knowl_build.history.git import GitFailed, GitRepo, first_line
from knowl_build.history.pages import IdentityMissing, check_identity, commit_paths
from knowl_build.pipeline.analysis import Analysis, analyse
from knowl_build.pipeline.inputs import Inputs, read_inputs
from knowl_build.secrets.scanner import redact
from knowl_build.support import clock
from knowl_build.writes.edit import EditError, FrontmatterEditor
from knowl_build.writes.pagefile import Change, PageBytes, WriteRefused, write_changes

__all__ = [
    "NOTHING_WRITTEN",
    "Change",
    "Committed",
    "PageBytes",
    "Tree",
    "WriteRefused",
    "answer_diagnostics",
    "commit",
    "commit_repo",
    "quoted_timestamp",
    "utc_now",
    "write_changes",
]


def utc_now() -> str:
    """Now, as knowl writes timestamps (see clock: SOURCE_DATE_EPOCH pins it)."""
    return clock.stamp()


def quoted_timestamp(value: str) -> str:
    return f'"{value}"'


def scope_of(path: str, layout: Layout) -> str | None:
    """The scope a file under the knowledge folder belongs to by its path (pages and other
    files alike), or None for a file no scope holds (outside global/ and user/<owner>/)."""
    inner = layout.inner(path)
    split = layout.split(inner) if inner is not None else None
    if split is None:
        return None
    scope = split[0]
    return scope if scope == GLOBAL else f"user:{normalize_owner(scope.removeprefix('user:'))}"


def writer_view(inputs: Inputs, layout: Layout, user: str | None) -> Inputs:
    """The project as `user` sees it (SPEC 6.2): another user's pages and files are left out.

    A write analyses this view, not the whole project, so nothing it answers (which page a
    PAGE names, its checks and their messages, the candidates it reconciles with) can depend
    on a page the writer may not see: another user's page is, to a write, a page that does not
    exist. Project-wide checks (`knowl check` in CI) still see every page."""

    def keep(path: str) -> bool:
        scope = scope_of(path, layout)
        return scope is None or writable(scope, user)

    found = inputs.discovery
    discovery = dataclasses.replace(
        found,
        pages=[p for p in found.pages if keep(p)],
        other_files=[p for p in found.other_files if keep(p)],
        findings={p: f for p, f in found.findings.items() if keep(p)},
    )
    pages = {p: entry for p, entry in inputs.pages.items() if keep(p)}
    return Inputs(discovery, pages, dict(inputs.semantics))


@dataclass(slots=True)
class Tree:
    """The project as the writing user sees it, analysed once; edits are computed from the same
    bytes the analysis read, and written only if the file still holds them."""

    root: Path
    config: Config
    inputs: Inputs
    analysis: Analysis
    user: str | None = None  # who writes; None: anonymous, who may write global pages only

    @classmethod
    def load(cls, root: Path, config: Config, user: str | None = None) -> Tree:
        user = valid_user(user)
        inputs = writer_view(read_inputs(root, config), config.layout, user)
        analysis = analyse(root, config, inputs=inputs, today=clock.today())
        return cls(root, config, inputs, analysis, user)

    def source(self, path: str) -> PageBytes:
        """The page's bytes as the analysis read them, decoded for editing."""
        data = self.inputs.pages.get(path, (None, ""))[0]
        return PageBytes.read(self.root, path) if data is None else PageBytes.of(path, data)

    def text(self, path: str) -> str:
        return self.source(path).text

    def with_changes(self, changes: list[Change]) -> Analysis:
        """The analysis the tree would have with `changes` written (nothing is written)."""

        inputs = Inputs(self.inputs.discovery, dict(self.inputs.pages), dict(self.inputs.semantics))
        for change in changes:
            data = change.data()
            inputs.pages[change.path] = (data, hashlib.sha256(data).hexdigest())
        return analyse(self.root, self.config, inputs=inputs, today=clock.today(), use_cache=False)

    def page(self, ref: str) -> Page:
        """PAGE (`id`, `global:<id>`, `user:<owner>:<id>`, or a path under the scope folder),
        as the reader resolves it for the writing user: a global page or their own, the only
        pages they may change. Another user's page answers exactly as a page that does not
        exist; an id several pages share is AmbiguousPage (`pageref.pick`)."""
        index = self.analysis.index.by_id  # (scope, id) -> pages

        def find(scope: str, page_id: str) -> list[Named[Page]]:
            pages = [p for p in index.get((scope, page_id), []) if p.parsed.text_ok]
            return [Named(p, p.path, p.rel) for p in sorted(pages, key=lambda p: p.path)]

        def ids(scope: str) -> list[str]:
            return [page_id for (held, page_id) in index if held == scope]

        return pick(ref, self.user, find, WriteRefused, ids)

    def errors_for(self, analysis: Analysis, path: str) -> list[Diagnostic]:
        return [d for d in analysis.diagnostics if d.path == path and d.severity == "error"]

    def write(self, changes: list[Change]) -> list[str]:
        """Write `changes`; the paths really written (see write_changes), in their order."""
        return write_changes(self.root, self.config.layout, changes)


def commit_repo(root: Path) -> GitRepo:
    """The repository `--commit` commits to, checked before a write writes anything: without
    a git repository or an identity to commit as, the write stops (exit 2) having written
    nothing, rather than failing once the files are on disk."""
    repo = GitRepo.find(root)
    if repo is None:
        raise UsageError("--commit needs a git repository")
    try:
        check_identity(repo)
    except IdentityMissing as exc:
        raise UsageError(str(exc)) from None
    return repo


# What `--commit` did, once the write was on disk.
COMMITTED, NOTHING, NOT_COMMITTED = "committed", "nothing", "failed"


@dataclass(frozen=True, slots=True)
class Committed:
    """What `--commit` did after the write. A commit git refuses once the files are written
    (a hook rejects it, another git process holds the index) does not undo the write: the
    answer is a success that says the files are not committed and why (a redacted line)."""

    status: str  # committed | nothing (no file changed) | failed
    commits: tuple[str, ...] = ()
    reason: str | None = None  # nothing, failed: why no commit (or not every commit) was made

    @property
    def committed(self) -> bool:
        return self.status == COMMITTED

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "commits": list(self.commits), "reason": self.reason}


# A write that wrote nothing (a duplicate, a review that changed no byte) commits nothing.
NOTHING_WRITTEN = Committed(NOTHING, (), "nothing to commit: no file was written")


def commit(repo: GitRepo, commits: list[tuple[list[str], str]]) -> Committed:
    """Commit each `(paths, message)` to `repo` (from `commit_repo`, before the write) in
    turn, stopping at the first that git refuses; the index is as it was for every commit not
    made (see history.pages.commit_paths). The files are on disk already: nothing here
    raises, whatever git answers."""
    made: list[str] = []
    for paths, message in commits:
        try:
            sha = commit_paths(repo, paths, message)
        except GitFailed as exc:
            # A hook's message may quote anything in the files: one redacted line only.
            return Committed(NOT_COMMITTED, tuple(made), redact(first_line(exc)))
        if sha is not None:
            made.append(sha)
    if not made:
        return Committed(NOTHING, (), "nothing to commit: the files hold what HEAD holds")
    return Committed(COMMITTED, tuple(made))


def answer_diagnostics(diagnostics: list[Diagnostic]) -> list[dict[str, Any]]:
    return [d.to_json() for d in sorted(diagnostics)]


def supersede_change(tree: Tree, old: Page, new_id: str) -> Change:
    """OLD's file with `status: superseded` and `superseded_by: NEW`; a layout that cannot be
    edited safely refuses the whole write (WriteRefused), so nothing is written."""
    source = tree.source(old.path)
    try:
        editor = FrontmatterEditor.of(source.text)
        editor.set_scalar(["status"], "superseded")
        editor.set_scalar(["superseded_by"], yaml_scalar(new_id))
    except EditError as exc:
        raise WriteRefused(f"{old.path}: {exc}; nothing was written") from None
    return Change.edit(old.path, source, editor.result())


def yaml_scalar(value: str) -> str:
    """A YAML scalar for `value`: plain when it reads back as the same string."""
    dumped = yaml.safe_dump(value, default_flow_style=True, width=1 << 30).strip()
    return dumped[:-4].rstrip() if dumped.endswith("\n...") else dumped.removesuffix("...").strip()
