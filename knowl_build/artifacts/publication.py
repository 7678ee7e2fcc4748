"""CURRENT and publication: pinning the build a reader reads, atomic publication, pruning."""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any

from knowl_build.artifacts.folders import (
    made_by_knowl,
    open_regular,
    out_token,
    read_regular,
    read_small,
    write_beside,
    write_marker,
)
from knowl_build.artifacts.layout import (
    BUILD_MARKER,
    BUILD_NAME,
    CURRENT,
    MANIFEST,
    STAGING_PREFIX,
)
from knowl_build.artifacts.memo import folder_state, forget, relinked, remember, validated_state
from knowl_build.core.errors import ArtifactError
from knowl_build.support.trust import Sealer

try:
    import fcntl
except ImportError:  # Windows: readers then do not pin the build they read
    fcntl = None  # type: ignore[assignment]


# --- readers pin the build they read ---------------------------------------------------------


class Vanished(ArtifactError):
    """The build folder is gone, or is being pruned."""


class Hold:
    """A shared lock on a build folder's manifest while a reader uses the folder: pruning
    skips a folder it cannot lock exclusively. Released by `close()`, or when the Hold is
    garbage (a reader that forgot to close must not pin a build forever)."""

    def __init__(self, fd: int) -> None:
        self._close = weakref.finalize(self, os.close, fd)

    def close(self) -> None:
        self._close()


def hold(folder: Path) -> Hold:
    """Pin `folder` for reading; Vanished when it is gone or being pruned."""

    def gone() -> Vanished:  # made only when raised: an error redacts its message
        return Vanished(
            f"{folder}: removed by a newer build while opening it; run the command again"
        )

    try:
        fd = open_regular(folder / MANIFEST)
    except FileNotFoundError:
        if folder.is_dir():
            raise Vanished(f"{folder}: not a knowl-build artifact (no {MANIFEST})") from None
        raise gone() from None
    except OSError as exc:
        raise ArtifactError(f"{folder}: {MANIFEST} cannot be opened ({exc.strerror})") from None
    pinned = Hold(fd)
    if fcntl is None:
        return pinned
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:  # a build is deleting the folder right now
        pinned.close()
        raise gone() from None
    except OSError:
        return pinned  # a file system without locks: read unpinned, as without fcntl
    try:
        # Pruned between opening and locking: the name no longer leads to what we hold.
        linked = os.stat(folder / MANIFEST).st_ino == os.fstat(fd).st_ino
    except OSError:
        linked = False
    if not linked:
        pinned.close()
        raise gone()
    return pinned


# --- CURRENT and publication --------------------------------------------------------------------


def current_name(out_dir: Path) -> str | None:
    """The build folder CURRENT names; None without CURRENT; ArtifactError when it is
    corrupt (not UTF-8, not one folder name)."""
    try:
        data = read_regular(out_dir / CURRENT, 4096)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ArtifactError(f"{out_dir / CURRENT}: cannot be read ({exc.strerror})") from None
    try:
        name = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        name = ""
    if not BUILD_NAME.fullmatch(name) or ".." in name:
        raise ArtifactError(
            f"{out_dir / CURRENT}: corrupt (not the name of a build folder); "
            "run knowl build to replace it"
        )
    return name


def current_folder(out_dir: Path) -> Path | None:
    """The published build folder, or None when there is none (a corrupt CURRENT counts as
    none: the next build replaces it)."""
    try:
        name = current_name(out_dir)
    except ArtifactError:
        return None
    if name is None:
        return None
    folder = out_dir / name
    return folder if folder.is_dir() and not folder.is_symlink() else None


def resolve_artifact(out_dir: Path) -> Path:
    """The folder CURRENT names, for a reader: a missing or corrupt CURRENT is an ArtifactError."""
    seen: str | None = None
    for _attempt in range(5):
        name = current_name(out_dir)
        if name is None:
            raise ArtifactError(f"no published build in {out_dir} (run knowl build first)")
        folder = out_dir / name
        if folder.is_dir():
            return folder
        if name == seen:
            raise ArtifactError(f"{out_dir / CURRENT} names {name}, which does not exist")
        # A build may have published and pruned between reading CURRENT and looking: the
        # CURRENT it wrote names a folder that exists. Read it again.
        seen = name
    raise ArtifactError(f"{out_dir / CURRENT} keeps naming folders that do not exist")


def successor(folder: Path) -> Path | None:
    """The build its output folder's CURRENT names now, when that is another one."""
    try:
        name = current_name(folder.parent)
    except ArtifactError:
        return None
    if name is None or name == folder.name or not (folder.parent / name).is_dir():
        return None
    return folder.parent / name


def staging_folder(out_dir: Path) -> Path:
    """A fresh folder for a build to write, marked as knowl's before anything else."""
    token = out_token(out_dir, create=True)
    assert token is not None
    # Imported here: start-up time (a reader never stages a build).
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))
    try:
        write_marker(folder / BUILD_MARKER, token)
    except BaseException:  # a full disk: no unmarked folder is left behind
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def publish(out_dir: Path, staging: Path, build_id: str, sealer: Sealer | None = None) -> Path:
    """Seal the finished folder's manifest (with `sealer`, the machine's: see `sealed`),
    rename the folder into place, then switch CURRENT to it atomically. The build wrote
    every file of it, so it counts as validated on this machine."""
    if sealer is not None:
        token = (
            (read_small(staging / BUILD_MARKER) or b"").split(b"\n")[0].decode("ascii", "replace")
        )
        tag = sealer.seal(read_regular(staging / MANIFEST)).decode("ascii")
        write_marker(staging / BUILD_MARKER, f"{token}\n{tag}")
    name, n = build_id, 1
    while (out_dir / name).exists():
        n += 1
        name = f"{build_id}.{n}"
    final = out_dir / name
    os.rename(staging, final)
    try:
        # Whatever CURRENT was (garbage, a link) is replaced, but...
        write_beside(out_dir / CURRENT, (name + "\n").encode("utf-8"), ".CURRENT.")
    except IsADirectoryError:  # ...a folder is not knowl's to remove
        raise ArtifactError(
            f"{out_dir / CURRENT} is a folder, not knowl's pointer file; move it away"
        ) from None
    state = folder_state(final)
    if state is not None:
        remember(final, state)
    return final


def sealed(folder: Path, sealer: Sealer) -> bytes | None:
    """The manifest of a build this machine published (its seal, in the folder's marker,
    checks), else None. With the folder validated against it, every file is the one this
    machine wrote: only then may a build reuse the folder."""
    marker = read_small(folder / BUILD_MARKER)
    lines = marker.split(b"\n") if marker is not None else []
    if len(lines) < 2:
        return None
    try:
        manifest = read_regular(folder / MANIFEST)
    except OSError:
        return None
    return manifest if sealer.check(manifest, lines[1].strip()) else None


def prune(out_dir: Path, keep: int) -> list[str]:
    """Remove the oldest build folders beyond `keep`: only folders knowl made in this output
    folder, never the current one, never one a reader holds (the next build tries again)."""
    current = current_folder(out_dir)
    builds = _builds(out_dir)
    others = [folder for folder in builds if current is None or folder.name != current.name]
    room = max(keep - (current is not None), 0)
    doomed = others[room:]
    if not doomed:
        return []
    states = validated_builds([folder for folder in builds if folder not in doomed])
    removed = [folder.name for folder in doomed if _remove_build(folder)]
    relink(states)
    return removed


def validated_builds(builds: list[Path]) -> list[tuple[Path, dict[str, Any] | None]]:
    """Each build folder with its state as this machine validated it (None when it did
    not): taken before a build links or removes files they share."""
    return [(folder, validated_state(folder)) for folder in builds]


def kept_builds(out_dir: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """`validated_builds` of every build folder knowl made in `out_dir`."""
    return validated_builds(_builds(out_dir))


def relink(states: list[tuple[Path, dict[str, Any] | None]]) -> None:
    """Each folder of `validated_builds` remembered again as validated, where only the
    links to its files changed since (`memo.relinked`)."""
    for folder, state in states:
        if folder.is_dir():
            relinked(folder, state)


def _builds(out_dir: Path) -> list[Path]:
    """The build folders knowl made in `out_dir`, newest first."""
    token = out_token(out_dir)
    found = []
    for folder in out_dir.iterdir():
        if not folder.name.startswith(".") and made_by_knowl(folder, token):
            found.append((folder.lstat().st_mtime, folder.name, folder))
    return [folder for _mtime, _name, folder in sorted(found, reverse=True)]


def _remove_build(folder: Path) -> bool:
    """Delete a build folder unless a reader holds it (the exclusive lock on its manifest is
    kept while deleting, so a reader arriving meanwhile sees it vanish and moves on)."""
    try:
        fd: int | None = open_regular(folder / MANIFEST)
    except OSError:
        fd = None  # no manifest: no reader can hold it
    try:
        if fd is not None and fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # a reader is using it: the next build prunes it
            except OSError:
                pass  # a file system without locks: prune as without fcntl
        forget(folder)
        # Imported here: start-up time (a reader never prunes).
        import shutil

        shutil.rmtree(folder, ignore_errors=True)  # rmtree never follows symlinks
        return True
    finally:
        if fd is not None:
            os.close(fd)
