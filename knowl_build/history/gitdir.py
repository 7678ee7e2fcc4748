"""The folders git keeps for itself: the git directory and the hooks folder of the project.

knowl must never write there: a build folder under `.git/refs/heads` is a branch git cannot
read (every later git command fails), and a file in a hooks folder is code git runs. They are
found as git finds them: `git rev-parse` (which honours `GIT_DIR`, gitfiles, worktrees and
`core.hooksPath`), and, as well, by looking for `.git` upward from the project as git would, so
a repository git refuses to open (not installed, a safe.directory it does not trust) is still
kept apart.
"""

from __future__ import annotations

import os
from pathlib import Path

from knowl_build.history.git import GitFailed, run_git

GIT_DIRECTORY = "the git directory"
HOOKS_FOLDER = "the git hooks folder"


def git_folders(project: Path) -> list[tuple[Path, str]]:
    """Each folder git keeps for itself around `project` (absolute, symlinks resolved), with
    what it is; empty outside a repository."""
    found: dict[Path, str] = {}
    for folder, what in [*_by_looking(project), *_by_asking_git(project)]:
        found.setdefault(Path(os.path.realpath(folder)), what)
    return sorted(found.items())


def _by_asking_git(project: Path) -> list[tuple[Path, str]]:
    try:
        out = run_git(
            ["rev-parse", "--absolute-git-dir", "--git-common-dir", "--git-path", "hooks"], project
        )
    except GitFailed:
        return []
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) != 3 or not all(lines):
        return []
    git_dir, common, hooks = (project / line for line in lines)  # relative ones: to `project`
    return [(git_dir, GIT_DIRECTORY), (common, GIT_DIRECTORY), (hooks, HOOKS_FOLDER)]


def _by_looking(project: Path) -> list[tuple[Path, str]]:
    """`GIT_DIR`, else the first `.git` folder or gitfile from `project` upward, with the
    common directory a worktree's git directory names."""
    env = os.environ.get("GIT_DIR")
    if env:
        git_dir: Path | None = Path(os.path.abspath(env))
    else:
        git_dir = None
        here = project.resolve()
        for folder in [here, *here.parents]:
            dot_git = folder / ".git"
            if dot_git.is_dir():
                git_dir = dot_git
            elif dot_git.is_file():
                git_dir = _gitfile_target(dot_git)
            else:
                continue
            break
    if git_dir is None:
        return []
    found = [(git_dir, GIT_DIRECTORY), (git_dir / "hooks", HOOKS_FOLDER)]
    common = _read_line(git_dir / "commondir")
    if common:
        common_dir = git_dir / common
        found += [(common_dir, GIT_DIRECTORY), (common_dir / "hooks", HOOKS_FOLDER)]
    return found


def _gitfile_target(gitfile: Path) -> Path | None:
    line = _read_line(gitfile)
    if line is None or not line.startswith("gitdir:"):
        return None
    return gitfile.parent / line[len("gitdir:") :].strip()


def _read_line(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(4096)
    except OSError:
        return None
    text = data.decode("utf-8", "surrogateescape").splitlines()
    return text[0].strip() if text else None
