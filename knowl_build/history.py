"""The only module that talks to git.

Every call is one `git` process for the whole project (never one per file or per commit).
Without git, or outside a repository, `GitRepo.find` returns None and history features are
skipped (KB009).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

_ENV = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


class GitFailed(Exception):
    pass


def _run(args: list[str], cwd: Path) -> bytes:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=_ENV, capture_output=True, check=False)
    except OSError as exc:
        raise GitFailed(str(exc)) from exc
    if proc.returncode != 0:
        raise GitFailed(proc.stderr.decode("utf-8", "replace").strip())
    return proc.stdout


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A git work tree holding the project. `prefix` is the project's path inside it."""

    toplevel: Path
    project: Path
    prefix: str  # "" or "sub/dir/" with a trailing slash

    @classmethod
    def find(cls, project: Path) -> GitRepo | None:
        try:
            out = _run(["rev-parse", "--show-toplevel", "--show-prefix"], project)
        except GitFailed:
            return None
        lines = out.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) < 1 or not lines[0]:
            return None
        prefix = lines[1] if len(lines) > 1 else ""
        return cls(Path(lines[0]), project, prefix)

    def run(self, *args: str) -> bytes:
        return _run(list(args), self.project)

    def ignored(self, folders: list[str]) -> set[str]:
        """Project-relative paths git ignores under `folders` (folders end with `/`)."""
        try:
            out = self.run(
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
                "--",
                *folders,
            )
        except GitFailed:
            return set()
        return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}

    def head(self) -> str | None:
        try:
            return self.run("rev-parse", "--verify", "-q", "HEAD^{commit}").decode().strip() or None
        except GitFailed:
            return None

    def changed_files(self) -> set[str] | None:
        """Project-relative paths that differ from HEAD, untracked ones included.

        None when there is no HEAD yet (every file counts as changed)."""
        if self.head() is None:
            return None
        out = self.run(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", "."
        )
        changed: set[str] = set()
        for entry in out.decode("utf-8", "surrogateescape").split("\0"):
            if len(entry) < 4:
                continue
            path = entry[3:]  # porcelain paths are relative to the repository root
            if path.startswith(self.prefix):
                changed.add(path[len(self.prefix) :])
        return changed
