"""A repository's own configuration may name commands git runs by itself: knowl's git
commands never run `core.fsmonitor` (history.git.SAFE_CONFIG), and GitPython reads the
repository without starting any of them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from knowl_build.history.git import GitRepo
from knowl_build.history.log import GitHistory


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com"}
    env |= {"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"}
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=True)
    return done.stdout.decode()


def test_a_hostile_fsmonitor_is_never_run(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "page.md").write_text("# A page\n")
    _git(root, "add", "page.md")
    _git(root, "commit", "-q", "-m", "one")
    marker = tmp_path / "ran"
    hook = tmp_path / "monitor.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    hook.chmod(0o755)
    _git(root, "config", "core.fsmonitor", str(hook))
    (root / "page.md").write_text("# A page, edited\n")

    repo = GitRepo.find(root)
    assert repo is not None and repo.handle is not None  # found by GitPython
    assert repo.changed_files() == {"page.md"}
    assert repo.dirty(["page.md"]) is True
    head = repo.head()
    assert head == _git(root, "rev-parse", "HEAD").strip()
    reader = GitHistory(repo)
    try:
        log = reader.log([":(glob)**/*.md"])
    finally:
        reader.close()
    assert log is not None and [c.sha for c, _ in log] == [head]
    assert not marker.exists()

    # The control: git itself runs the monitor on `status` with this configuration.
    _git(root, "status", "--porcelain")
    assert marker.exists()


def test_gitpython_reads_head_and_the_remote_without_a_process(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    repo = GitRepo.find(root / ".")
    assert repo is not None and repo.prefix == ""
    assert repo.head() is None  # an unborn branch
    (root / "sub").mkdir()
    (root / "sub" / "a.md").write_text("a\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "one")
    _git(
        root,
        "remote",
        "add",
        "origin",
        "https://user:ghp_abcdefghijklmnopqrstuvwxyz0123456789@example.com/x.git",
    )
    inner = GitRepo.find(root / "sub")
    assert inner is not None
    assert (inner.toplevel, inner.prefix) == (Path(os.path.realpath(root)), "sub/")
    assert inner.head() == _git(root, "rev-parse", "HEAD").strip()
    url = inner.remote_url()
    assert url is not None and "example.com/x.git" in url and "ghp_" not in url
    inner.close()
