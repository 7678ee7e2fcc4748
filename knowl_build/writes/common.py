"""What every write shares: loading the tree, picking pages, writing files, committing."""

from __future__ import annotations

import datetime as dt
import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowl_build.build import Analysis, Inputs, analyse, read_inputs, utc_today
from knowl_build.config import Config
from knowl_build.diagnostics import Diagnostic
from knowl_build.errors import KnowlError, UsageError
from knowl_build.files import atomic_write
from knowl_build.model import Page
from knowl_build.pageref import candidates


class WriteRefused(KnowlError):
    """A write that the rules refuse (exit 1); nothing was written."""

    exit_code = 1


def utc_now() -> str:
    """Now, as knowl writes timestamps; SOURCE_DATE_EPOCH pins it for reproducible runs."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        now = dt.datetime.fromtimestamp(int(epoch), dt.UTC)
    else:
        now = dt.datetime.now(dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def quoted_timestamp(value: str) -> str:
    return f'"{value}"'


@dataclass(slots=True)
class Change:
    path: str  # project-relative
    before: str | None  # None for a new file
    after: str

    def diff(self) -> str:
        before = [] if self.before is None else self.before.splitlines(keepends=True)
        return "".join(
            difflib.unified_diff(
                before,
                self.after.splitlines(keepends=True),
                fromfile="/dev/null" if self.before is None else f"a/{self.path}",
                tofile=f"b/{self.path}",
            )
        )


@dataclass(slots=True)
class Tree:
    """The project as it is on disk, analysed, with overlays for changes not yet written."""

    root: Path
    config: Config
    inputs: Inputs
    analysis: Analysis
    overlays: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path, config: Config) -> Tree:
        inputs = read_inputs(root, config)
        return cls(root, config, inputs, analyse(root, config, inputs=inputs, today=utc_today()))

    def text(self, path: str) -> str:
        if path in self.overlays:
            return self.overlays[path]
        return (self.root / path).read_text(encoding="utf-8")

    def with_changes(self, changes: list[Change]) -> Analysis:
        """The analysis the tree would have with `changes` written (nothing is written)."""
        import hashlib

        inputs = Inputs(self.inputs.discovery, dict(self.inputs.pages), dict(self.inputs.semantics))
        for change in changes:
            data = change.after.encode("utf-8")
            inputs.pages[change.path] = (data, hashlib.sha256(data).hexdigest())
        return analyse(self.root, self.config, inputs=inputs, today=utc_today(), use_cache=False)

    def page(self, ref: str, user: str | None = None) -> Page:
        """PAGE (`id`, `global:<id>`, `user:<owner>:<id>`), as the reader resolves it."""
        index = self.analysis.index.by_id  # (scope, id) -> pages, each list in path order
        texts = (
            [p for p in index.get(c, []) if p.parsed.text_ok]
            for c in candidates(ref, user, any_owner=True)
        )
        found = next(
            (min(pages, key=lambda p: p.path) for pages in texts if pages),
            None,
        )
        if found is None:
            raise WriteRefused(f"no page '{ref}'" + (f" visible to {user}" if user else ""))
        return found

    def errors_for(self, analysis: Analysis, path: str) -> list[Diagnostic]:
        return [d for d in analysis.diagnostics if d.path == path and d.severity == "error"]


def write_changes(root: Path, changes: list[Change]) -> None:
    """Each file is written to a temporary file and renamed into place."""
    for change in changes:
        target = root / change.path
        if change.before is not None and target.read_text(encoding="utf-8") != change.before:
            raise WriteRefused(f"{change.path} changed while the write was prepared; run it again")
        if change.before is None and target.exists():
            raise WriteRefused(f"{change.path} appeared while the write was prepared; run it again")
    for change in changes:
        atomic_write(root / change.path, change.after.encode("utf-8"))


def commit(root: Path, paths: list[str], message: str) -> str:
    from knowl_build.history import GitFailed, GitRepo, IdentityMissing, commit_paths

    repo = GitRepo.find(root)
    if repo is None:
        raise UsageError("--commit needs a git repository")
    try:
        return commit_paths(repo, paths, message)
    except IdentityMissing as exc:
        raise UsageError(str(exc)) from None
    except GitFailed as exc:
        raise UsageError(f"git commit failed: {exc}") from None


def answer_diagnostics(diagnostics: list[Diagnostic]) -> list[dict[str, Any]]:
    return [d.to_json() for d in sorted(diagnostics)]
