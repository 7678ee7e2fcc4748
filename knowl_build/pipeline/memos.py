"""The sealed memos a run leaves in the cache (`knowl check`'s memo, the ledger of
`pipeline.recheck`), and the files outside the inputs whose state they depend on.

A memo is sealed with the machine's key: one this machine did not write (committed with the
project, whose key anyone can compute) could say that any tree is clean. It holds what the
files it depends on beyond its key were: the blob ids of the paths pages say a change
affects (KB204), and what Markdown links' files outside the knowledge folder were (`linked`);
a memo whose files changed since is not used."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import msgspec

from knowl_build.core.model import Page
from knowl_build.history.objects import git_blob_id
from knowl_build.pipeline.linked import answers
from knowl_build.support.files import atomic_write
from knowl_build.support.trust import Sealer, read_sealed


def outside_files(toplevel: Path | None, paths: set[str]) -> dict[str, str | None]:
    """Blob ids of files outside the inputs that findings depend on (KB204's affected paths)."""
    state: dict[str, str | None] = {}
    for path in sorted(paths):
        try:
            state[path] = git_blob_id((toplevel or Path(".")).joinpath(path).read_bytes())
        except OSError:
            state[path] = None
    return state


def affected_outside(pages: list[Page], toplevel: Path | None) -> dict[str, str | None]:
    """`outside_files` of the paths the pages with a `source_commit` say a change affects
    (none without git)."""
    if toplevel is None:
        return {}
    affected = {
        item.value
        for page in pages
        if page.parsed.fields.source_commit
        for item in page.parsed.fields.affected_paths
    }
    return outside_files(toplevel, affected)


def load(
    path: Path,
    form: int,
    key_name: str,
    key: str,
    toplevel: Path | None,
    root: Path,
    sealer: Sealer,
) -> dict[str, Any] | None:
    """The memo of format `form` at `path` whose `key_name` is `key`, when this machine sealed
    it and the files outside the inputs are as it says; None otherwise."""
    raw = read_sealed(path, sealer)
    if raw is None:
        return None
    try:
        memo = msgspec.json.decode(raw)
        if memo.get("format") != form or memo.get(key_name) != key:
            return None
        outside = memo["outside"]
        if outside_files(toplevel, set(outside)) != outside:
            return None
        if answers(root, memo["linked"]) != memo["linked"]:
            return None
        return memo  # type: ignore[no-any-return]
    except (msgspec.DecodeError, AttributeError, KeyError, TypeError, RecursionError):
        return None


def save(
    path: Path,
    memo: dict[str, Any],
    outside: dict[str, str | None],
    linked: dict[str, str],
    sealer: Sealer,
) -> None:
    """`memo` with the outside files' state, sealed. A cache that cannot be written costs only
    speed next time: it never fails the run."""
    held = {**memo, "outside": outside, "linked": dict(sorted(linked.items()))}
    with contextlib.suppress(OSError):
        atomic_write(path, sealer.wrap(msgspec.json.encode(held)))
