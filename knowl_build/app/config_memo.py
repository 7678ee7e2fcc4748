"""What a reader keeps of a project's configuration: `out_dir` and `[peers] paths`, by the
stat data of the files the configuration was read from. The next `knowl search` in the same
project, with those files unchanged, then reads no TOML and imports none of the options
(start-up time of a reader: about a tenth of a search process at 10,000 pages).

A memo answers only while every file the configuration could be read from (`--config FILE`,
else knowl.toml and pyproject.toml) has the size, mtime, ctime, inode, device and type it
had, or is still absent; a file created, removed or written since sends the reader to the
configuration again. Stamps have a granularity, so a memo is written only when each file's
stamps are older than the read by more than `SETTLE_NS` (as the stat cache's entries,
`pipeline.stats`). A configuration with `[security] extra_patterns` is never remembered:
loading it also teaches the secret scanner those patterns, for the messages of the run.

The memo lives in the user's cache, sealed with the machine's key (`support.trust`): one
this machine did not write is no memo, and a project cannot ship one. Without a key or a
writable cache every reader reads its configuration, which is only slower."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from knowl_build import __version__
from knowl_build.artifacts.memo import trim
from knowl_build.support.clock import SETTLE_NS
from knowl_build.support.trust import cache_home, machine_key, read_sealed

MEMO_FORMAT = 1
MEMO_SEAL = "reader-config"
MAX_MEMOS = 64  # projects a user reads from; the newest memos are kept

Remembered = tuple[str, tuple[str, ...]]  # out_dir, [peers] paths: as configured


def sources(root: Path, explicit: Path | None) -> list[Path]:
    """The files a configuration of `root` is read from (`core.config_loader`)."""
    if explicit is not None:
        return [explicit]
    return [root / "knowl.toml", root / "pyproject.toml"]


def _stamp(path: Path) -> list[int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return [
        stat.S_IFMT(info.st_mode),
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_ino,
        info.st_dev,
    ]


def _state(root: Path, explicit: Path | None) -> dict[str, Any]:
    files = sources(root, explicit)
    return {
        "format": MEMO_FORMAT,
        "knowl": __version__,
        "root": os.path.realpath(root),
        "explicit": None if explicit is None else os.path.realpath(explicit),
        "files": [[os.path.realpath(path), _stamp(path)] for path in files],
    }


def _memo_path(state: dict[str, Any]) -> Path:
    key = json.dumps([state["root"], state["explicit"]]).encode("utf-8", "surrogateescape")
    return cache_home() / "configs" / (hashlib.sha256(key).hexdigest()[:32] + ".json")


def recall(root: Path, explicit: Path | None) -> Remembered | None:
    """`out_dir` and the peers' paths of the configuration, when this machine read it from
    these very files; None otherwise."""
    now = state(root, explicit)
    if now is None:
        return None
    try:
        sealed = read_sealed(_memo_path(now), machine_key().sealer(MEMO_SEAL))
    except (OSError, RuntimeError, ValueError):  # no home folder to find, an unusable path
        return None
    if sealed is None:
        return None
    try:
        memo = json.loads(sealed)
    except (ValueError, RecursionError):
        return None
    if not isinstance(memo, dict) or memo.get("state") != now:
        return None
    out_dir, peers = memo.get("out_dir"), memo.get("peers")
    if not isinstance(out_dir, str) or not isinstance(peers, list):
        return None
    if not all(isinstance(peer, str) for peer in peers) or not _inside(out_dir):
        return None
    return out_dir, tuple(peers)


def _inside(out_dir: str) -> bool:
    """An out_dir the configuration could have given: relative, never climbing (a memo is
    sealed, and this keeps one from ever naming a folder outside the project all the same)."""
    parts = PurePosixPath(out_dir).parts
    return bool(parts) and not PurePosixPath(out_dir).is_absolute() and ".." not in parts


def state(root: Path, explicit: Path | None) -> dict[str, Any] | None:
    """What a memo of this configuration is keyed by, as it is now (None: it cannot be taken):
    taken before the configuration is read, and given to `keep`."""
    try:
        return _state(root, explicit)
    except (OSError, ValueError):
        return None


def keep(
    root: Path,
    explicit: Path | None,
    before: dict[str, Any] | None,
    remembered: Remembered,
    read_at_ns: int,
) -> None:
    """Remember what the configuration gave, read at `read_at_ns` from files in the state
    `before`: when they are still in that state and their stamps had settled by then (a file
    created, removed or written while it was read is not remembered)."""
    # Imported here: start-up time (a reader that recalls its configuration writes nothing).
    from knowl_build.support.files import atomic_write

    sealer = machine_key().sealer(MEMO_SEAL)
    if sealer is None or before is None or state(root, explicit) != before:
        return
    settled = read_at_ns - SETTLE_NS
    for _path, stamp in before["files"]:
        if stamp is not None and max(stamp[2], stamp[3]) >= settled:
            return  # written too recently to tell a later change from it
    out_dir, peers = remembered
    data = json.dumps({"state": before, "out_dir": out_dir, "peers": list(peers)}).encode()
    try:
        path = _memo_path(before)
        atomic_write(path, sealer.wrap(data))
    except (OSError, RuntimeError):
        return  # no cache: the next reader reads the configuration, which is only slower
    trim(path.parent, MAX_MEMOS)
