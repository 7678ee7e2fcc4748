"""Where the knowledge folder's pages and files went, for `knowl fix`: renames git saw on the
first-parent line of HEAD and between HEAD and the working tree (a `git mv`, staged or not),
and moves it cannot see, of a file deleted since HEAD to an untracked one (the same bytes,
else the only untracked file of its name).

Three git commands per `knowl fix`, none per file. A git failure leaves the moves it could
not read out: a link is then reported broken as before, never rewritten on a guess.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from knowl_build.history.git import GitFailed, GitRepo
from knowl_build.history.objects import git_blob_id


def _name_status(out: bytes) -> list[tuple[str, str, str]]:
    """(status letter, old path, new path) of `--name-status -z` output, in its order."""
    tokens = out.decode("utf-8", "surrogateescape").split("\0")
    found: list[tuple[str, str, str]] = []
    i = 0
    while i < len(tokens):
        status = tokens[i].strip("\n")
        if not status:
            i += 1
            continue
        if status[0] in "RC" and i + 2 < len(tokens):
            found.append((status[0], tokens[i + 1], tokens[i + 2]))
            i += 3
        elif i + 1 < len(tokens):
            found.append((status[0], tokens[i + 1], tokens[i + 1]))
            i += 2
        else:
            break
    return found


def _command(repo: GitRepo, *args: str) -> bytes:
    try:
        return repo.command(*args)
    except GitFailed:
        return b""


def page_moves(repo: GitRepo, knowledge_dir: str, present: Iterable[str]) -> dict[str, str]:
    """Each project-relative path under `knowledge_dir` that is gone -> the path in `present`
    (the files there now) it was moved to, renames of renames followed."""
    present = set(present)
    moved: dict[str, str] = {}
    if repo.head() is None:
        return {}
    # Committed renames, newest first: applied oldest first, so a later rename of the same
    # file continues the chain.
    log = _command(
        repo,
        "log",
        "--first-parent",
        "-M",
        "--diff-filter=R",
        "--name-status",
        "-z",
        "--relative",
        "--format=",
        "HEAD",
        "--",
        knowledge_dir,
    )
    for _, old, new in reversed(_name_status(log)):
        moved[old] = new
    # HEAD against the working tree: staged renames, and what was deleted.
    diff = _command(
        repo, "diff", "-M", "--name-status", "-z", "--relative", "HEAD", "--", knowledge_dir
    )
    deleted: list[str] = []
    for status, old, new in _name_status(diff):
        if status == "R":
            moved[old] = new
        elif status == "D":
            deleted.append(old)
    if deleted:
        moved.update(_untracked_moves(repo, knowledge_dir, deleted, present))
    return {old: end for old in moved if (end := _end(moved, old)) in present and end != old}


def _end(moved: dict[str, str], path: str) -> str:
    seen = {path}
    while path in moved and moved[path] not in seen:
        path = moved[path]
        seen.add(path)
    return path


def _untracked_moves(
    repo: GitRepo, knowledge_dir: str, deleted: list[str], present: set[str]
) -> dict[str, str]:
    """A deleted file -> the untracked file with its bytes, else the only one of its name."""
    listed = _command(repo, "ls-files", "-z", "--", knowledge_dir)
    tracked = {p for p in listed.decode("utf-8", "surrogateescape").split("\0") if p}
    untracked = sorted(present - tracked)
    if not untracked:
        return {}
    tree = _command(repo, "ls-tree", "-r", "-z", "HEAD", "--", *deleted)
    blobs: dict[str, str] = {}
    for entry in tree.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3:
            blobs[path] = parts[2]
    by_blob: dict[str, list[str]] = defaultdict(list)
    by_name: dict[str, list[str]] = defaultdict(list)
    root = Path(repo.project)
    for path in untracked:
        try:
            data = (root / path).read_bytes()
        except OSError:
            continue
        by_blob[git_blob_id(data, len(next(iter(blobs.values()), "0" * 40)))].append(path)
        by_name[posixpath.basename(path)].append(path)
    found: dict[str, str] = {}
    for old in deleted:
        same = by_blob.get(blobs.get(old, ""), [])
        named = by_name.get(posixpath.basename(old), [])
        if len(same) == 1:
            found[old] = same[0]
        elif len(named) == 1:
            found[old] = named[0]
    return found
