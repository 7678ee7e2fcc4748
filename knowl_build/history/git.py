"""Running git, and the repository that holds the project: the only place git is started.

GitPython does what it does well: finding the repository (as git does, from the project
upward, without a process), reading refs (HEAD) and configuration (the remote, a partial
clone's promisor). Objects are read by one `git cat-file --batch` per batch
(`history.objects` says why not GitPython's persistent reader). What it would only wrap, the one `git log` pass and the other commands,
is started directly with `subprocess`, one process for the whole project (never one per file
or per commit). GitPython is imported by the first function that needs it (its import and
its `git version` cost every command that reads history about 45 ms; `knowl --help` and the
reader pay nothing). Without git, or outside a repository, `GitRepo.find` returns None and
history features are skipped (KB009).

A repository's configuration may hold commands git runs on its own: `core.fsmonitor` (run by
`git status`) is turned off for every command started here (`SAFE_CONFIG`).
"""

from __future__ import annotations

import configparser
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowl_build.core.errors import KnowlError
from knowl_build.secrets.scanner import redact


def _env() -> dict[str, str]:
    # Read at each call: the environment (an identity, a config path) may change in-process.
    # A partial clone fetches missing objects on demand: never wait for a password prompt.
    return {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


# Set on every git command knowl starts: a hostile repository's `core.fsmonitor` would make
# `git status` run it (no command here needs a file-system monitor).
SAFE_CONFIG = ("-c", "core.fsmonitor=false")


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
            ["git", *SAFE_CONFIG, *args],
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


def _open(project: Path) -> Any:
    """GitPython's repository holding `project`, found as git finds it (upward from the
    project, or `GIT_DIR`), or None: not in a work tree, or where git's own answer may differ
    (an environment that moves the work tree or bounds the search, a repository another user
    owns, which git refuses unless `safe.directory` says otherwise: `find` asks git)."""
    if any(os.environ.get(name) for name in _DISCOVERY_ENV):
        return None
    # start-up: GitPython is imported by the commands that read a repository, not by `--help`.
    import git

    try:
        repo = git.Repo(
            None if os.environ.get("GIT_DIR") else project,
            search_parent_directories=True,
            expand_vars=False,
        )
    except (git.GitError, OSError, ValueError):
        return None
    try:
        tree = repo.working_tree_dir
        owners = {os.stat(path).st_uid for path in (tree, repo.git_dir) if path is not None}
    except (OSError, ValueError):
        owners = set()
    if repo.bare or tree is None or owners != {os.geteuid()}:
        repo.close()
        return None
    repo.git.update_environment(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    return repo


# Environment variables with which git's discovery is not GitPython's.
_DISCOVERY_ENV = (
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)


def _gitpython_find(project: Path) -> tuple[Path, str, bool, Any] | None:
    """The toplevel, prefix and shallowness of the repository GitPython finds, with it."""
    repo = _open(project)
    if repo is None:
        return None
    toplevel = Path(os.path.realpath(repo.working_tree_dir))
    here = Path(os.path.realpath(project))
    try:
        inside = here.relative_to(toplevel).as_posix()
    except ValueError:  # GIT_DIR with a work tree elsewhere: git says what it makes of it
        repo.close()
        return None
    prefix = "" if inside == "." else inside + "/"
    shallow = os.path.exists(os.path.join(repo.common_dir, "shallow"))
    return toplevel, prefix, shallow, repo


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A git work tree holding the project. `prefix` is the project's path inside it."""

    toplevel: Path
    project: Path
    prefix: str  # "" or "sub/dir/" with a trailing slash
    shallow: bool = False  # a shallow clone: history before its oldest commits is absent
    # GitPython's repository (None where git was asked instead): refs, config, objects.
    handle: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def find(cls, project: Path) -> GitRepo | None:
        found = _gitpython_find(project)
        if found is not None:
            toplevel, prefix, shallow, repo = found
            return cls(toplevel, project, prefix, shallow, repo)
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

    def close(self) -> None:
        """End GitPython's persistent `git cat-file --batch-check` (HEAD's check), if started
        (it starts again if asked)."""
        if self.handle is not None:
            self.handle.git.clear_cache()

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
        """The commit HEAD names: read by GitPython from HEAD and the refs it points to (no
        process), else asked of git (a ref storage GitPython does not read, such as reftable).
        None on an unborn branch."""
        if self.handle is not None and (found := _read_head(self.handle)) is not None:
            return found
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
        url = self.config_value("remote", "origin", "url")
        return redact(url) or None if url is not None else None

    def config_value(self, name: str, subsection: str, key: str) -> str | None:
        """The configuration value `name.subsection.key` as git reads it (system, global and
        the repository's files, includes followed), or None; read by GitPython without a
        process."""
        if self.handle is None:
            try:
                out = self.run("config", "--get", f"{name}.{subsection}.{key}")
            except GitFailed:
                return None
            return out.decode("utf-8", "replace").strip()
        try:
            value = self.handle.config_reader().get_value(f'{name} "{subsection}"', key)
        except (configparser.Error, LookupError, ValueError, OSError):  # none, or unreadable
            return None
        return str(value)

    def config_sections(self) -> list[str]:
        """The sections of the configuration (`remote "origin"`, ...), as GitPython reads
        them; empty without GitPython."""
        if self.handle is None:
            return []
        try:
            return list(self.handle.config_reader().sections())
        except (configparser.Error, ValueError, OSError):
            return []

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


def _read_head(repo: Any) -> str | None:
    """HEAD's commit id as GitPython reads it from the files (HEAD, the ref it names, packed
    refs); None when GitPython cannot say (an unborn branch, a ref storage it does not read):
    git is asked. The refs are read, never an object: GitPython checks objects through a
    persistent `git cat-file` process that is not safe to share between threads (the
    language server analyses in threads), and two threads on it wait for each other forever."""
    # start-up: only reached with a GitPython repository (imported by `_open`).
    import git
    from git.refs.symbolic import SymbolicReference

    try:
        found = SymbolicReference.dereference_recursive(repo, "HEAD")
    except (git.GitError, ValueError, TypeError, OSError, AttributeError):
        return None
    return found if isinstance(found, str) and len(found) in (40, 64) else None
