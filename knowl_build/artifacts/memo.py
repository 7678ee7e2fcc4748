"""The validation memo: a folder validated once on this machine is not read whole again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from knowl_build import __version__
from knowl_build.artifacts.folders import listing, read_regular
from knowl_build.artifacts.layout import MANIFEST
from knowl_build.artifacts.schema import encode
from knowl_build.support.trust import cache_home, machine_key, read_sealed

# --- the validation memo ------------------------------------------------------------------------------
#
# Full validation reads every byte (about a second per 10k pages); a reader opens the same
# build again and again. So a folder validated once on this machine is remembered, keyed by
# its real path and every file's stat, and by the manifest's sha256, and sealed with this
# machine's key (`trust`): a memo this machine did not write is no memo. A file written
# since has another size, modification time or inode, or, when a tool wrote it in place and
# set its modification time back (`unzip -o`, `tar -x`, `rsync -t --inplace` do), another
# change time, which no tool sets: it is validated again. Kept builds share unchanged files
# (hard links), and a build that links or prunes one changes its change time without
# changing a byte: the build remembers the kept builds again (`relinked`), under its lock.
# The memo only spares work: the restricted unpickler guards every read whatever the memo
# says. Without a writable cache folder or a key, every open validates.

# 2: validations decode every pickle with the bounded unpickler (1 used the C one); 3: sealed,
# files identified without their change time; 4: with it; 5: catalog-heads.json checked span
# by span (a memo of a validation that never checked it vouches for nothing).
MEMO_VERSION = 5
MAX_MEMOS = 256  # the newest are kept; a pruned build's memo goes with it
MEMO_SEAL = "validation-memo"

# A file as the index identifies it when it opens it: size, mtime_ns, inode, ctime_ns. The
# change time too: a reader checks each file against it when it reads the file, after this
# memo was checked, so a rewrite in place in between (mtime set back) is refused there too.
Identity = tuple[int, int, int, int]


def validated_files(folder: Path) -> dict[str, Identity] | None:
    """Each file's (size, mtime_ns, inode, ctime_ns) as this machine's full validation saw
    it, when the folder is still in that state; None otherwise."""
    state = folder_state(folder)
    if state is None or not was_validated(folder, state):
        return None
    return {name: (s, m, i, c) for name, (s, m, i, c) in state["files"].items()}


def _cache_folder() -> Path:
    return cache_home() / "validated"


def _memo_path(real: str) -> Path:
    return _cache_folder() / (
        hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".json"
    )


def folder_state(folder: Path) -> dict[str, Any] | None:
    """This folder's identity and every file's stat, or None when it cannot be taken."""
    try:
        real = os.path.realpath(folder)
        found, odd = listing(Path(real))
        manifest = hashlib.sha256(read_regular(Path(real) / MANIFEST)).hexdigest()
    except OSError:
        return None
    files = {
        name: [info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]
        for name, info in sorted(found.items())
    }
    return {
        "version": MEMO_VERSION,
        "knowl": __version__,
        "folder": real,
        "manifest_sha256": manifest,
        "files": files,
        "other": sorted(odd),
    }


def was_validated(folder: Path, state: dict[str, Any]) -> bool:
    sealed = read_sealed(_memo_path(state["folder"]), machine_key().sealer(MEMO_SEAL))
    if sealed is None:
        return False
    try:
        memo = json.loads(sealed)
    except (ValueError, RecursionError):
        return False
    return bool(memo == state)


def validated_state(folder: Path) -> dict[str, Any] | None:
    """The folder's state, when this machine validated it in this very state."""
    state = folder_state(folder)
    return state if state is not None and was_validated(folder, state) else None


def relinked(folder: Path, before: dict[str, Any] | None) -> None:
    """Remember `folder` again after this process linked its files into another folder or
    removed their other names (a build sharing or pruning files, under its lock): when it was
    validated in state `before` and what changed since is only files' change times. A file
    written in place before `before` was taken is not in that state, so it stays unvalidated."""
    after = folder_state(folder) if before is not None else None
    if before is None or after is None or after == before:
        return
    then, now = before["files"], after["files"]
    if {**before, "files": None} != {**after, "files": None} or then.keys() != now.keys():
        return
    if any(stat[:3] != then[name][:3] for name, stat in now.items()):
        return
    remember(folder, after)


def remember(folder: Path, state: dict[str, Any]) -> None:
    sealer = machine_key().sealer(MEMO_SEAL)
    if sealer is None:
        return  # nothing to seal it with: the next open validates again
    # Imported here: start-up time (a reader of a remembered build writes no memo).
    import tempfile

    path = _memo_path(state["folder"])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".memo.", dir=path.parent)
    except OSError:
        return  # no cache: the next open validates again, which is only slower
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(sealer.wrap(encode(state)))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return
    trim(path.parent, MAX_MEMOS)


def trim(cache: Path, keep: int) -> None:
    """Keep a cache folder small: its `keep` newest files (memos of folders that are gone or
    long unused go first)."""
    memos: list[tuple[float, str]] = []
    try:
        # Closed on every path: another process trimming the same cache can remove an entry
        # between listing and stat, and an iterator left open is a leaked descriptor.
        with os.scandir(cache) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    memos.append((entry.stat().st_mtime, entry.path))
    except OSError:
        return
    if len(memos) <= keep:
        return
    for _mtime, name in sorted(memos)[: len(memos) - keep]:
        with contextlib.suppress(OSError):
            os.unlink(name)


def forget(folder: Path) -> None:
    """Drop the memo of a build folder about to be deleted."""
    with contextlib.suppress(OSError):
        _memo_path(os.path.realpath(folder)).unlink()
