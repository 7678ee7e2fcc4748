"""Running git, and the repository that holds the project: the only place git is started.

Every call is one `git` process for the whole project (never one per file or per commit),
started directly with `subprocess` (GitPython's runner cost every build its import, about
45 ms, and two `git version` processes, for nothing a plain `subprocess` does not do here).
Without git, or outside a repository, `GitRepo.find` returns None and history features are
skipped (KB009).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from knowl_build.errors import KnowlError
from knowl_build.secrets.scanner import redact


def _env() -> dict[str, str]:
    # Read at each call: the environment (an identity, a config path) may change in-process.
    # A partial clone fetches missing objects on demand: never wait for a password prompt.
    return {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


class GitFailed(KnowlError):
    """A git command failed. History reading keeps such failures as problems (KB012); one
    that escapes elsewhere ends the run with its one-line message, never a traceback."""


def run_git(args: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    """Run `git ARGS` in `cwd`; its standard output, or GitFailed with what git wrote on
    standard error."""
    code, out, err = git_process(args, cwd, stdin)
    if code != 0:
        raise GitFailed(err.decode("utf-8", "replace").strip())
    return out


def git_process(args: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
    """Run `git ARGS`: the exit code, standard output and standard error, whatever the
    outcome (for a reader that makes sense of a partial answer)."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=_env(),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise GitFailed(str(exc)) from exc
    return proc.returncode, proc.stdout, proc.stderr


def _probe(args: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    """Run `git ARGS`; its standard output, or GitFailed (the probes of every run)."""
    return run_git(args, cwd, stdin)


def first_line(error: BaseException | str | bytes) -> str:
    """The first line git wrote about a failure, short enough for a finding."""
    text = error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
    line = next((s.strip() for s in text.splitlines() if s.strip()), "no message")
    return line if len(line) <= 200 else line[:199] + "…"


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A git work tree holding the project. `prefix` is the project's path inside it."""

    toplevel: Path
    project: Path
    prefix: str  # "" or "sub/dir/" with a trailing slash
    shallow: bool = False  # a shallow clone: history before its oldest commits is absent

    @classmethod
    def find(cls, project: Path) -> GitRepo | None:
        try:
            out = _probe(
                ["rev-parse", "--show-toplevel", "--show-prefix", "--is-shallow-repository"],
                project,
            )
        except GitFailed:
            return None
        lines = out.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) < 1 or not lines[0]:
            return None
        prefix = lines[1] if len(lines) > 1 else ""
        shallow = len(lines) > 2 and lines[2] == "true"
        return cls(Path(lines[0]), project, prefix, shallow)

    def run(self, *args: str) -> bytes:
        """A probe: git started directly (see the module's docstring)."""
        return _probe(list(args), self.project)

    def command(self, *args: str, stdin: bytes | None = None) -> bytes:
        """Any other git command."""
        return run_git(list(args), self.project, stdin)

    def commit_of(self, rev: str) -> str | None:
        """The full id of the commit `rev` (an id, a tag, a branch) names, or None."""
        try:
            return self.run("rev-parse", "--verify", "-q", f"{rev}^{{commit}}").decode().strip()
        except GitFailed:
            return None

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

    def check_ignore(self, paths: list[str], *, index: bool = True) -> set[str]:
        """Which of `paths` (project-relative, any place in the project) git ignores: one
        `git check-ignore` for all of them. With `index`, a tracked file is never ignored (as
        git sees it); without, only the ignore rules count, which also answers for paths inside
        a submodule (that git refuses with the index). Raises GitFailed when git cannot say."""
        if not paths:
            return set()
        args = ["check-ignore", "--stdin", "-z", *([] if index else ["--no-index"])]
        try:
            out = _probe(args, self.project, stdin=b"".join(os.fsencode(p) + b"\0" for p in paths))
        except GitFailed as exc:
            if str(exc):
                raise
            return set()  # exit 1 without a message: none of the paths is ignored
        return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}

    def head(self) -> str | None:
        try:
            return self.run("rev-parse", "--verify", "-q", "HEAD^{commit}").decode().strip() or None
        except GitFailed:
            return None

    def dirty(self, paths: list[str]) -> bool:
        """True when any of `paths` (project-relative) differs from HEAD, untracked included."""
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
        return bool(out.strip(b"\0"))

    def remote_url(self) -> str | None:
        """`origin`'s URL, redacted (it may carry a token, and the repository's name that a
        build takes from it is in every answer)."""
        try:
            url = self.run("config", "--get", "remote.origin.url").decode().strip()
        except GitFailed:
            return None
        return redact(url) or None

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
