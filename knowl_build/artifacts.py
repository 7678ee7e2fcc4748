"""The build artifact: layout, manifest, atomic publication, pruning, the locks, validation.

The reader imports this module (never the build pipeline): it defines what an artifact is.

    <out_dir>/.knowl-out        a random token: this output folder belongs to knowl
    <out_dir>/.knowl-lock       while a build runs: `knowl-build <pid> <host>`
    <out_dir>/CURRENT           one line: the name of the published build folder
    <out_dir>/<build-id>/       manifest.json, pages.jsonl, catalog.json, entities.json,
                                graph.json, diagnostics.json, signatures.json, index/
                                (Whoosh), vectors/ (optional), written once, never changed;
                                .knowl-build holds the token of the output folder that made it
                                and, on a second line, the seal of its manifest

knowl deletes only folders it made: a build or staging folder whose `.knowl-build` holds the
token of the output folder it lies in, never a folder recognised by a file name alone.

A build reuses the previous one (or answers with it, for an unchanged tree) only when its
manifest carries a seal made with this machine's key (`trust`): the manifest holds every
file's sha256, and the folder is validated against it, so a sealed build is one this machine
wrote. A build folder committed with the project, or built elsewhere, is not reused.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import socket
import stat
import tempfile
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from knowl_build import __version__
from knowl_build.config import MAX_BOOST
from knowl_build.errors import ArtifactError, KnowlError, UsageError
from knowl_build.trust import Sealer, cache_home

if TYPE_CHECKING:
    from knowl_build.config import Config

try:
    import fcntl
except ImportError:  # Windows: readers then do not pin the build they read
    fcntl = None  # type: ignore[assignment]

FORMAT = "knowl-build"
SCHEMA_VERSION = "1.0"
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
LOCK = ".knowl-lock"
LOCK_OWNER = "knowl-build"  # a lock file holds `knowl-build <pid> <host>`, nothing else
BUILD_SEAL = "build-manifest"
STAGING_PREFIX = ".tmp-"
OUT_MARKER = ".knowl-out"
BUILD_MARKER = ".knowl-build"
JSON_FILES = ("pages.jsonl", "entities.json", "graph.json", "diagnostics.json", "catalog.json")
INDEX_JSON = ("index/stats.json", "index/docs.json")
# A build folder's name (CURRENT holds one): a build id, maybe with a `.<n>` suffix.
BUILD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_TOKEN = re.compile(r"[0-9a-f]{32}")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dump_json(data: Any) -> bytes:
    """Sorted keys, compact (json's C encoder), no time stamps: the same data, the same bytes."""
    return (
        json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
    ).encode()


def file_table(folder: Path) -> dict[str, str]:
    """Every file of a build folder except the manifest and the marker, with its sha256."""
    table = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name not in (MANIFEST, BUILD_MARKER):
            table[path.relative_to(folder).as_posix()] = sha256_file(path)
    return table


# --- which output folders knowl may use, and which folders in them it made -------------------


class OutputFolderError(KnowlError):
    """The output folder cannot be made or used (one line, naming it)."""


def check_out_dir(root: Path, config: Config, out: Path | None = None) -> Path:
    """The output folder to use: `out` (the user's choice, anywhere; a symlink is resolved)
    or the configured `out_dir`, which must lie inside the project with no symlink along
    its way there (a committed `.knowl/build` link would lead the build's writes, and its
    takeover of a stale lock, anywhere).

    Either way, refuse a folder where pruning could reach the project's own files: the
    project root or an ancestor of it, the knowledge or semantics folder, an ancestor of
    them or a folder inside them (symlinks resolved)."""
    base = root.resolve()
    if out is None:
        out_dir = root / config.out_dir
        here = base
        for part in PurePosixPath(config.out_dir).parts:
            here = here / part
            try:
                info = os.lstat(here)
            except OSError:
                break  # made by the build below, as a folder
            if stat.S_ISLNK(info.st_mode):
                raise UsageError(
                    f"output folder {config.out_dir}: {here.relative_to(base).as_posix()} is a "
                    "symlink, and knowl writes through no link inside the project; remove it "
                    "(or pass --out <folder>)"
                )
        resolved = Path(os.path.realpath(out_dir))
        if base not in resolved.parents:
            raise UsageError(
                f"output folder {config.out_dir} leads outside the project; "
                "give knowl a folder of its own inside it (default .knowl/build)"
            )
    else:
        resolved = Path(os.path.realpath(out))
        # A link is followed once, here: the build works in the folder it leads to.
        out_dir = out if os.path.abspath(out) == str(resolved) else resolved
    if resolved == base or resolved in base.parents:
        raise UsageError(
            f"output folder {out_dir} is the project root or holds it; "
            "give knowl a folder of its own (default .knowl/build)"
        )
    for name in (config.knowledge_dir, config.semantics_dir):
        guarded = (base / name).resolve()
        if resolved == guarded or resolved in guarded.parents or guarded in resolved.parents:
            raise UsageError(
                f"output folder {out_dir} overlaps the project's {name}/ folder; "
                "give knowl a folder of its own (default .knowl/build)"
            )
    return out_dir


def make_out_dir(out_dir: Path) -> None:
    """Create the output folder (and its parents); OutputFolderError when it cannot be
    made, is not a folder, or cannot be written."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputFolderError(f"output folder {out_dir} is not a folder") from None
    except OSError as exc:
        raise OutputFolderError(
            f"output folder {out_dir} cannot be created ({_reason(exc)})"
        ) from None
    if not out_dir.is_dir():
        raise OutputFolderError(f"output folder {out_dir} is not a folder")
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise OutputFolderError(f"output folder {out_dir} cannot be written")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def output_failure(out_dir: Path, exc: OSError, *, writing: bool = False) -> KnowlError | None:
    """The one-line error for an OSError on a file of the output folder; None for another
    file's. `writing`: the failed code wrote only the output folder, so an error without a
    file name (a full disk) is the output folder's too."""
    if any(_inside(out_dir, n) for n in (exc.filename, exc.filename2)) or (
        writing and exc.filename is None
    ):
        return OutputFolderError(f"output folder {out_dir} cannot be used ({_reason(exc)})")
    return None


@contextlib.contextmanager
def output_errors(out_dir: Path) -> Iterator[None]:
    """Turn an OSError on a file of the output folder into a one-line error naming the
    folder (not an internal error); any other OSError goes on up."""
    try:
        yield
    except OSError as exc:
        failure = output_failure(out_dir, exc)
        if failure is None:
            raise
        raise failure from None


def _inside(folder: Path, name: object) -> bool:
    if not isinstance(name, str | bytes | os.PathLike):
        return False
    path = os.path.abspath(os.fsdecode(name))
    top = os.path.abspath(folder)
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


# Opening never follows a symlink and never waits (a FIFO planted as a file would block).
_OPEN_FLAGS = (
    os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
)


def _open_regular(path: Path) -> int:
    """A descriptor of the regular file at `path` (OSError for anything else)."""
    fd = os.open(path, _OPEN_FLAGS)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


def _read_regular(path: Path, limit: int = -1) -> bytes:
    """A regular file's bytes (at most `limit`), never through a symlink."""
    with os.fdopen(_open_regular(path), "rb") as handle:
        return handle.read(limit)


def _read_small(path: Path, limit: int = 256) -> bytes | None:
    """A small regular file's bytes; None when there is none."""
    try:
        return _read_regular(path, limit)
    except OSError:
        return None


def out_token(out_dir: Path, *, create: bool = False) -> str | None:
    """The random token that marks `out_dir` as knowl's; made on first use when `create`."""
    data = _read_small(out_dir / OUT_MARKER)
    token = data.decode("ascii", "replace").strip() if data is not None else ""
    if _TOKEN.fullmatch(token):
        return token
    if not create:
        return None
    token = secrets.token_hex(16)
    _write_marker(out_dir / OUT_MARKER, token)
    return token


def _write_marker(path: Path, token: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".marker.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(token + "\n")
    os.replace(tmp, path)


def _made_by_knowl(folder: Path, token: str | None) -> bool:
    """A real folder (not a symlink) whose marker holds this output folder's token."""
    try:
        if token is None or not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
    except OSError:
        return False
    data = _read_small(folder / BUILD_MARKER)
    return data is not None and data.split(b"\n")[0].decode("ascii", "replace").strip() == token


# --- the build lock ---------------------------------------------------------------------------


class BuildBusy(KnowlError):
    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _lock_holder(lock: Path) -> tuple[int, str] | None:
    """The pid and host in a lock knowl wrote; None for anything else (another program's
    file, a link, garbage), which knowl never removes."""
    data = _read_small(lock)
    try:
        owner, pid_text, host = (data or b"").decode("utf-8").rstrip("\n").split(" ", 2)
        pid = int(pid_text)
    except ValueError:  # UnicodeDecodeError is a ValueError
        return None
    if owner != LOCK_OWNER or pid <= 0 or not host or "\n" in host:
        return None
    return pid, host


def _take_lock(lock: Path) -> bool:
    """Create the lock whole (written beside, then linked into place); False when a lock
    is there already."""
    fd, tmp = tempfile.mkstemp(prefix=".knowl-lock.", dir=lock.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"{LOCK_OWNER} {os.getpid()} {socket.gethostname()}\n")
        try:
            os.link(tmp, lock)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            # No hard links here: exclusive creation (a reader may see it empty briefly).
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(f"{LOCK_OWNER} {os.getpid()} {socket.gethostname()}\n")
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def build_lock(out_dir: Path) -> Iterator[None]:
    """One build at a time per output folder; a lock knowl left (its process is dead, or
    on another host) is taken over. A lock file knowl did not write is never removed."""
    make_out_dir(out_dir)
    lock = out_dir / LOCK
    try:
        for _attempt in range(2):
            if _take_lock(lock):
                break
            holder = _lock_holder(lock)
            if holder is None:
                if not os.path.lexists(lock):
                    continue  # released meanwhile
                raise BuildBusy(
                    f"{lock} is not a lock knowl wrote; knowl leaves it alone: move it away "
                    "if no knowl build is running"
                )
            pid, host = holder
            # Another host's pid says nothing here: its lock counts as left behind (a CI
            # cache can restore the lock of a container long gone).
            if host == socket.gethostname() and _alive(pid):
                raise BuildBusy(f"another build (pid {pid}) holds {lock}; wait for it to finish")
            if _lock_holder(lock) == holder:
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()  # left by a dead build: take it over
        else:
            raise BuildBusy(f"could not take the build lock {lock}")
    except OSError as exc:
        raise OutputFolderError(
            f"output folder {out_dir} cannot be used: {lock} ({_reason(exc)})"
        ) from None
    try:
        _remove_stale_staging(out_dir)
        yield
    finally:
        if _lock_holder(lock) == (os.getpid(), socket.gethostname()):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()


def _remove_stale_staging(out_dir: Path) -> None:
    """Staging folders of interrupted builds (we hold the lock, so nobody writes them): those
    knowl marked, and empty ones (a build that died before marking its folder)."""
    token = out_token(out_dir)
    for path in out_dir.glob(STAGING_PREFIX + "*"):
        if _made_by_knowl(path, token):
            shutil.rmtree(path, ignore_errors=True)
        elif not path.is_symlink() and path.is_dir():
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty


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
    gone = Vanished(f"{folder}: removed by a newer build while opening it; run the command again")
    try:
        fd = _open_regular(folder / MANIFEST)
    except FileNotFoundError:
        if folder.is_dir():
            raise Vanished(f"{folder}: not a knowl-build artifact (no {MANIFEST})") from None
        raise gone from None
    except OSError as exc:
        raise ArtifactError(f"{folder}: {MANIFEST} cannot be opened ({exc.strerror})") from None
    pinned = Hold(fd)
    if fcntl is None:
        return pinned
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:  # a build is deleting the folder right now
        pinned.close()
        raise gone from None
    except OSError:
        return pinned  # a file system without locks: read unpinned, as without fcntl
    try:
        # Pruned between opening and locking: the name no longer leads to what we hold.
        linked = os.stat(folder / MANIFEST).st_ino == os.fstat(fd).st_ino
    except OSError:
        linked = False
    if not linked:
        pinned.close()
        raise gone
    return pinned


# --- CURRENT and publication --------------------------------------------------------------------


def current_name(out_dir: Path) -> str | None:
    """The build folder CURRENT names; None without CURRENT; ArtifactError when it is
    corrupt (not UTF-8, not one folder name)."""
    try:
        data = _read_regular(out_dir / CURRENT, 4096)
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
    folder = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))
    _write_marker(folder / BUILD_MARKER, token)
    return folder


def publish(out_dir: Path, staging: Path, build_id: str, sealer: Sealer | None = None) -> Path:
    """Seal the finished folder's manifest (with `sealer`, the machine's: see `sealed`),
    rename the folder into place, then switch CURRENT to it atomically. The build wrote
    every file of it, so it counts as validated on this machine."""
    if sealer is not None:
        token = (
            (_read_small(staging / BUILD_MARKER) or b"").split(b"\n")[0].decode("ascii", "replace")
        )
        tag = sealer.seal(_read_regular(staging / MANIFEST)).decode("ascii")
        _write_marker(staging / BUILD_MARKER, f"{token}\n{tag}")
    name, n = build_id, 1
    while (out_dir / name).exists():
        n += 1
        name = f"{build_id}.{n}"
    final = out_dir / name
    os.rename(staging, final)
    fd, tmp = tempfile.mkstemp(prefix=".CURRENT.", dir=out_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(name + "\n")
    try:
        os.replace(tmp, out_dir / CURRENT)  # whatever CURRENT was (garbage, a link), but...
    except IsADirectoryError:  # ...a folder is not knowl's to remove
        os.unlink(tmp)
        raise ArtifactError(
            f"{out_dir / CURRENT} is a folder, not knowl's pointer file; move it away"
        ) from None
    state = _state(final)
    if state is not None:
        _remember(final, state)
    return final


def sealed(folder: Path, sealer: Sealer) -> bytes | None:
    """The manifest of a build this machine published (its seal, in the folder's marker,
    checks), else None. With the folder validated against it, every file is the one this
    machine wrote: only then may a build reuse the folder."""
    marker = _read_small(folder / BUILD_MARKER)
    lines = marker.split(b"\n") if marker is not None else []
    if len(lines) < 2:
        return None
    try:
        manifest = _read_regular(folder / MANIFEST)
    except OSError:
        return None
    return manifest if sealer.check(manifest, lines[1].strip()) else None


def prune(out_dir: Path, keep: int) -> list[str]:
    """Remove the oldest build folders beyond `keep`: only folders knowl made in this output
    folder, never the current one, never one a reader holds (the next build tries again)."""
    token = out_token(out_dir)
    current = current_folder(out_dir)
    builds = []
    for folder in out_dir.iterdir():
        if not folder.name.startswith(".") and _made_by_knowl(folder, token):
            builds.append((folder.lstat().st_mtime, folder.name, folder))
    builds.sort(reverse=True)
    removed = []
    kept = 1 if current is not None else 0
    for _mtime, name, folder in builds:
        if current is not None and name == current.name:
            continue
        if kept < keep:
            kept += 1
            continue
        if _remove_build(folder):
            removed.append(name)
    return removed


def _remove_build(folder: Path) -> bool:
    """Delete a build folder unless a reader holds it (the exclusive lock on its manifest is
    kept while deleting, so a reader arriving meanwhile sees it vanish and moves on)."""
    try:
        fd: int | None = _open_regular(folder / MANIFEST)
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
        _forget(folder)
        shutil.rmtree(folder, ignore_errors=True)  # rmtree never follows symlinks
        return True
    finally:
        if fd is not None:
            os.close(fd)


# --- opening ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Artifact:
    """An opened, validated artifact folder, pinned (`hold`) until `close()`."""

    folder: Path
    manifest: dict[str, Any]
    hold: Hold | None = None

    def path(self, name: str) -> Path:
        return self.folder / name

    def close(self) -> None:
        if self.hold is not None:
            self.hold.close()


def read_manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(_read_regular(folder / MANIFEST))
    except FileNotFoundError:
        raise ArtifactError(f"{folder}: not a knowl-build artifact (no {MANIFEST})") from None
    except (OSError, ValueError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not JSON"
        raise ArtifactError(f"{folder}: {MANIFEST} is unreadable ({reason})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"{folder}: {MANIFEST} is not a knowl-build manifest")
    version = manifest.get("schema_version")
    major = version.split(".")[0] if isinstance(version, str) else ""
    if major != SCHEMA_VERSION.split(".")[0]:
        plain = isinstance(version, str) and re.fullmatch(r"[0-9A-Za-z.+-]{1,20}", version)
        raise ArtifactError(
            f"{folder}: artifact schema {version if plain else '?'} is not readable by this knowl "
            f"(reads {SCHEMA_VERSION.split('.')[0]}.x); rebuild it with this version"
        )
    if not isinstance(manifest.get("files"), dict):
        raise ArtifactError(f"{folder}: {MANIFEST} has no file table")
    return manifest


def open_artifact(folder: Path) -> Artifact:
    """Open an artifact folder for reading: pin it (so no build prunes it while it is read),
    then refuse a corrupt or hostile one with a one-line reason. When the folder vanished
    between resolving CURRENT and pinning it (a build pruned it), the build CURRENT names now
    is opened instead, once. The full validation (`validate`) runs unless this machine
    already validated this exact state of the folder (see `_state`)."""
    try:
        pinned = hold(folder)
    except Vanished:
        newer = successor(folder)
        if newer is None:
            raise
        folder, pinned = newer, hold(newer)
    try:
        return Artifact(folder, _checked_manifest(folder), pinned)
    except BaseException:
        pinned.close()
        raise


def _checked_manifest(folder: Path) -> dict[str, Any]:
    manifest = read_manifest(folder)
    state = _state(folder)
    if state is None or not _validated(folder, state):
        problems = validate(folder)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ArtifactError(
                f"{folder}: corrupt artifact: {problems[0]}{more}; run knowl verify"
            )
        if state is not None:
            _remember(folder, state)
    return manifest


def verify(folder: Path, *, full: bool = True) -> list[str]:
    """Problems with an artifact: everything `validate` checks (`full`), or only the
    checksums of the JSON files and the sizes of the index files."""
    if full:
        state = _state(folder)
        problems = validate(folder)
        if not problems and state is not None:
            _remember(folder, state)
        return problems
    manifest = read_manifest(folder)
    problems = []
    sizes = manifest.get("sizes")
    sizes = sizes if isinstance(sizes, dict) else {}
    for name, expected in sorted(manifest["files"].items()):
        path = folder / name
        if not _safe_name(name) or not path.is_file():
            problems.append(f"{_shown(name)}: missing")
        elif not name.startswith("index/") or name in INDEX_JSON:
            if sha256_file(path) != expected:
                problems.append(f"{name}: checksum mismatch")
        elif name in sizes and path.stat().st_size != sizes[name]:
            problems.append(f"{name}: size differs from the manifest")
    return problems


# --- full validation ------------------------------------------------------------------------------


def validate(folder: Path) -> list[str]:
    """Every problem of an artifact folder, relative to its manifest.

    Checks the manifest's shape; that the folder holds exactly the files the manifest lists
    (regular files, no symlinks), each with its size and sha256; that every JSON file parses
    and has the shape of its schema, record by record (with the catalog's offsets pointing at
    the matching pages.jsonl lines); and that the Whoosh index opens through the restricted
    unpickler and every pickle in it decodes (`index.verify_index`).

    What an empty list proves: the folder is intact against its own manifest, and no file in
    it can make a reader run code or fail with anything but a one-line error. It does not
    prove where the artifact came from: anyone can write a consistent manifest, so this is
    integrity and safety, not authenticity."""
    manifest = read_manifest(folder)
    problem = _MANIFEST(manifest)
    if problem is not None:
        return [f"{MANIFEST}: {_where(problem)}"]
    contents, problems = _check_files(folder, manifest)
    if problems:
        return problems
    problems = _check_records(contents)
    if problems:
        return problems
    if "vectors/meta.json" in contents:
        problems = _check_vectors(folder, contents["vectors/meta.json"])
        if problems:
            return problems
    from knowl_build.index import verify_index

    return [f"index: {p}" for p in verify_index(folder / "index")]


def _shown(name: str) -> str:
    """A name from a file, safe to print on one line."""
    return repr(name[:60] + ("..." if len(name) > 60 else ""))


def _safe_name(name: str) -> bool:
    """A manifest entry names a file inside the folder, at the top or under index/, vectors/."""
    pure = PurePosixPath(name)
    parts = pure.parts
    return (
        bool(parts)
        and not pure.is_absolute()
        and "\\" not in name
        and all(part not in ("", ".", "..") for part in parts)
        and pure.as_posix() == name
        and (len(parts) == 1 or (len(parts) == 2 and parts[0] in ("index", "vectors")))
        and name not in (MANIFEST, BUILD_MARKER)
        and all(ch.isprintable() for ch in name)
    )


def _listing(folder: Path) -> tuple[dict[str, os.stat_result], list[str]]:
    """Every entry below `folder` by relative name (lstat), and what is not a regular file."""
    found: dict[str, os.stat_result] = {}
    odd: list[str] = []
    stack = [("", folder)]
    while stack:
        prefix, here = stack.pop()
        with os.scandir(here) as entries:
            for entry in entries:
                name = prefix + entry.name
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and not prefix:
                    stack.append((name + "/", Path(entry.path)))
                elif stat.S_ISREG(info.st_mode):
                    found[name] = info
                else:
                    odd.append(name)
    return found, odd


def _check_files(folder: Path, manifest: dict[str, Any]) -> tuple[dict[str, bytes], list[str]]:
    """The folder holds exactly the listed files, with their sizes and checksums; returns the
    bytes of the JSON files (hashed and parsed from the same read)."""
    files: dict[str, str] = manifest["files"]
    sizes: dict[str, int] = manifest.get("sizes", {})
    problems = [
        f"{_shown(n)}: not a file name inside the artifact" for n in files if not _safe_name(n)
    ]
    if problems:
        return {}, problems
    for name in (*JSON_FILES, *INDEX_JSON):
        if name not in files:
            problems.append(f"{name}: missing from the manifest")
    if not any(re.fullmatch(r"index/_MAIN_[0-9]+\.toc", n) for n in files):
        problems.append("index: no table of contents in the manifest")
    try:
        found, odd = _listing(folder)
    except OSError as exc:
        return {}, [f"cannot list the folder ({exc.strerror})"]
    problems += [f"{_shown(n)}: not a regular file" for n in sorted(odd)]
    extra = set(found) - set(files) - {MANIFEST, BUILD_MARKER}
    problems += [f"{_shown(n)}: not listed in the manifest" for n in sorted(extra)]
    contents: dict[str, bytes] = {}
    for name, expected in sorted(files.items()):
        if name not in found:
            problems.append(f"{name}: missing")
        elif name in sizes and found[name].st_size != sizes[name]:
            problems.append(f"{name}: size differs from the manifest")
        elif name.endswith((".json", ".jsonl")):
            data = (folder / name).read_bytes()
            if hashlib.sha256(data).hexdigest() != expected:
                problems.append(f"{name}: checksum mismatch")
            contents[name] = data
        elif sha256_file(folder / name) != expected:
            problems.append(f"{name}: checksum mismatch")
    return contents, problems


# --- JSON schemas -----------------------------------------------------------------------------------
#
# A check takes a parsed JSON value and returns None, or where and what is wrong. Messages
# name keys and positions from the schema, never a value from the file (which could be huge,
# hold a secret, or span lines). Extra keys are allowed: minor schema versions add fields.

Problem = tuple[str, str]
Check = Callable[[Any], Problem | None]
MAX_INT = 1 << 53


def _where(problem: Problem) -> str:
    path, what = problem
    return f"'{path.lstrip('.')}' {what}" if path else what


def _kind(*kinds: type, what: str) -> Check:
    def check(value: Any) -> Problem | None:
        return None if type(value) in kinds else ("", f"must be {what}")

    return check


STR = _kind(str, what="a string")
OPT_STR = _kind(str, type(None), what="a string or null")
BOOL = _kind(bool, what="true or false")
DICT = _kind(dict, what="an object")


def _int(low: int = 0, high: int = MAX_INT) -> Check:
    def check(value: Any) -> Problem | None:
        ok = type(value) is int and low <= value <= high
        return None if ok else ("", f"must be a whole number from {low} to {high}")

    return check


def _number(low: float = -math.inf) -> Check:
    def check(value: Any) -> Problem | None:
        ok = type(value) in (int, float) and math.isfinite(value) and value >= low
        return None if ok else ("", f"must be a finite number from {low}")

    return check


INT = _int()


def _opt(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


def _one_of(*values: Any) -> Check:
    def check(value: Any) -> Problem | None:
        ok = type(value) is str and value in values
        return None if ok else ("", f"must be one of {', '.join(values)}")

    return check


def _obj(optional: dict[str, Check] | None = None, **shape: Check) -> Check:
    """An object with the keys of `shape` (and maybe those of `optional`), each passing its
    check; other keys are allowed."""
    items = tuple(shape.items())
    extra = tuple((optional or {}).items())

    def check(value: Any) -> Problem | None:
        if type(value) is not dict:
            return ("", "must be an object")
        for key, sub in items:
            if key not in value:
                return (f".{key}", "is missing")
            problem = sub(value[key])
            if problem is not None:
                return (f".{key}{problem[0]}", problem[1])
        for key, sub in extra:
            problem = sub(value[key]) if key in value else None
            if problem is not None:
                return (f".{key}{problem[0]}", problem[1])
        return None

    return check


def _list(item: Check) -> Check:
    def check(value: Any) -> Problem | None:
        if type(value) is not list:
            return ("", "must be a list")
        for i, element in enumerate(value):
            problem = item(element)
            if problem is not None:
                return (f"[{i}]{problem[0]}", problem[1])
        return None

    return check


def _strings(value: Any) -> Problem | None:
    ok = type(value) is list and all(type(x) is str for x in value)
    return None if ok else ("", "must be a list of strings")


def _text_or_strings(value: Any) -> Problem | None:
    ok = type(value) is str or _strings(value) is None
    return None if ok else ("", "must be a string or a list of strings")


def _map(item: Check) -> Check:
    """An object with any string keys, each value passing `item`."""

    def check(value: Any) -> Problem | None:
        if type(value) is not dict:
            return ("", "must be an object")
        for element in value.values():
            problem = item(element)
            if problem is not None:
                return (f"[…]{problem[0]}", problem[1])
        return None

    return check


HEX64 = re.compile(r"[0-9a-f]{64}")


def _boost(value: Any) -> Problem | None:
    ok = type(value) in (int, float) and 0 < value <= MAX_BOOST  # NaN fails too
    return None if ok else ("", f"must be a number greater than 0, at most {MAX_BOOST:g}")


def _hex64(value: Any) -> Problem | None:
    ok = type(value) is str and HEX64.fullmatch(value) is not None
    return None if ok else ("", "must be a sha256 (64 hex digits)")


_COMMIT = _opt(_obj(commit=OPT_STR))
_MANIFEST = _obj(
    tool_version=STR,
    build_id=_kind(str, what="a string"),
    commit=OPT_STR,
    dirty=BOOL,
    inputs_sha256=STR,
    config_sha256=STR,
    built_at=STR,
    repo=STR,
    counts=_map(INT),
    error_count=INT,
    search=_obj(boosts=_map(_boost), max_caveats=_int(0, 10_000)),
    files=_map(_hex64),
    optional={"sizes": _map(INT)},
)
_FIELDS = _obj(
    summary=STR,
    tags=_strings,
    sl_refs=_strings,
    refs=_strings,
    usage_mode=STR,
    category=OPT_STR,
    status=STR,
    superseded_by=OPT_STR,
    freshness=STR,
    confidence=_number(),
    source=OPT_STR,
    source_commit=OPT_STR,
    affected_paths=_strings,
    conflict=_opt(_obj(key=STR, normalized_key=STR, scope=DICT, exclusive=BOOL)),
    visibility=STR,
    reasoning=OPT_STR,
    alternatives=_strings,
    steps=_strings,
    provenance=STR,
    last_validated_at=OPT_STR,
    bound_fingerprints=_map(STR),
    frozen=BOOL,
)
_FRESHNESS = _obj(value=STR, reasons=_list(_obj(code=STR, message=STR)))
_RECORD = _obj(
    id=STR,
    scope=STR,
    owner=OPT_STR,
    path=STR,
    title=STR,
    frontmatter=DICT,
    fields=_FIELDS,
    body=STR,
    raw_body=STR,
    headings=_list(_obj(level=INT, text=STR, line=INT)),
    links=_list(_obj(target=STR, kind=STR, heading=OPT_STR, line=INT, column=INT)),
    freshness=_FRESHNESS,
    drift=_list(_obj(entity=STR, bound=STR, live=STR, changed_in=_COMMIT)),
    last_commit=_COMMIT,
)
_CATALOG_ENTRY = _obj(
    key=STR,
    id=STR,
    scope=STR,
    owner=OPT_STR,
    title=STR,
    summary=STR,
    tags=_strings,
    sl_refs=_strings,
    usage_mode=STR,
    category=OPT_STR,
    status=STR,
    superseded_by=OPT_STR,
    visibility=STR,
    freshness=STR,
    drift_flag=BOOL,
    offset=INT,
)
_SCALAR = _kind(str, int, float, bool, type(None), what="a plain value")
_NODE = _obj(id=STR, type=_one_of("page", "entity"), label=STR)
_PAGE_NODE = _obj(scope=STR, page_id=STR, path=STR, usage_mode=STR, status=STR)
_ENTITY_NODE = _obj(kind=STR)
_EDGE = _obj(source=STR, target=STR, kind=STR, kinds=_strings)
_GRAPH = _obj(
    directed=_kind(bool, what="true"),
    multigraph=_kind(bool, what="false"),
    graph=_map(_SCALAR),
    nodes=_list(_map(_SCALAR)),
    edges=_list(_map(_text_or_strings)),
)
_ENTITIES = _obj(
    entities=_list(
        _obj(
            name=STR,
            kind=STR,
            connection=STR,
            source=STR,
            member=OPT_STR,
            definition=DICT,
            file=STR,
            line=INT,
            fingerprint=STR,
            introduced_in=_COMMIT,
            changed_in=_COMMIT,
        )
    )
)
_DIAGNOSTICS = _obj(
    version=INT,
    diagnostics=_list(
        _obj(
            code=STR,
            severity=_one_of("error", "warning", "info"),
            path=STR,
            line=INT,
            column=INT,
            end_line=_opt(INT),
            end_column=_opt(INT),
            message=STR,
            hint=OPT_STR,
        )
    ),
    summary=_obj(error=INT, warning=INT, info=INT),
)
_SHAPES: dict[str, Check] = {
    "catalog.json": _obj(pages=_list(_CATALOG_ENTRY)),
    "entities.json": _ENTITIES,
    "graph.json": _GRAPH,
    "diagnostics.json": _DIAGNOSTICS,
    "signatures.json": _obj(graph=STR, pages=_map(STR)),
    "index/stats.json": _obj(
        optional={
            "scopes": _map(
                _obj(doc_count=INT, length_sums=_obj(title=INT, summary=INT, tags=INT, body=INT))
            )
        },
        doc_count=INT,
        length_sums=_obj(title=INT, summary=INT, tags=INT, body=INT),
    ),
    "index/docs.json": _map(STR),
    "vectors/meta.json": _obj(model=DICT, keys=_strings, digests=_strings, dim=_int(1, 65536)),
}


class _Malformed(Exception):
    """A JSON file that does not parse or does not have its shape (the message says where)."""


def _parsed(name: str, data: bytes, shape: Check) -> Any:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise _Malformed(f"{name}: not valid JSON") from None
    problem = shape(value)
    if problem is not None:
        raise _Malformed(f"{name}: {_where(problem)}")
    return value


def _check_records(contents: dict[str, bytes]) -> list[str]:
    """Every JSON file against its schema; the graph's nodes and edges; the catalog against
    pages.jsonl. One problem per file (the first): the rest of a broken file says little."""
    problems = []
    parsed: dict[str, Any] = {}
    for name, shape in _SHAPES.items():
        if name in contents:
            try:
                parsed[name] = _parsed(name, contents[name], shape)
            except _Malformed as exc:
                problems.append(str(exc))
    if "graph.json" in parsed:
        problems += _check_graph(parsed["graph.json"])
    try:
        lines = _check_pages(contents["pages.jsonl"])
    except _Malformed as exc:
        return [*problems, str(exc)]
    if "catalog.json" in parsed:
        problems += _check_catalog(parsed["catalog.json"]["pages"], lines)
    return problems


def _check_graph(graph: dict[str, Any]) -> list[str]:
    """node_link_data of a DiGraph: the node and edge attributes the readers use."""
    if graph["directed"] is not True or graph["multigraph"] is not False:
        return ["graph.json: not a directed graph (networkx DiGraph)"]
    for i, node in enumerate(graph["nodes"]):
        problem = _NODE(node) or (_PAGE_NODE if node["type"] == "page" else _ENTITY_NODE)(node)
        if problem is not None:
            return [f"graph.json: 'nodes[{i}]{problem[0]}' {problem[1]}"]
    for i, edge in enumerate(graph["edges"]):
        problem = _EDGE(edge)
        if problem is not None:
            return [f"graph.json: 'edges[{i}]{problem[0]}' {problem[1]}"]
    return []


def _check_pages(data: bytes) -> dict[int, tuple[str, str, str]]:
    """Each line of pages.jsonl against the record schema, split as the reader reads it (at
    `\\n` only): line offset -> (path, id, scope)."""
    lines: dict[int, tuple[str, str, str]] = {}
    *complete, rest = data.split(b"\n")
    if rest:
        raise _Malformed(f"pages.jsonl line {len(complete) + 1}: truncated (no end of line)")
    offset = 0
    for number, line in enumerate(complete, start=1):
        record = _parsed(f"pages.jsonl line {number}", line, _RECORD)
        lines[offset] = (record["path"], record["id"], record["scope"])
        offset += len(line) + 1
    return lines


def _check_catalog(
    pages: list[dict[str, Any]], lines: dict[int, tuple[str, str, str]]
) -> list[str]:
    keys: set[str] = set()
    for i, entry in enumerate(pages):
        if lines.get(entry["offset"]) != (entry["key"], entry["id"], entry["scope"]):
            return [f"catalog.json: 'pages[{i}]' does not point at its line of pages.jsonl"]
        if entry["key"] in keys:
            return [f"catalog.json: 'pages[{i}]' lists a page twice"]
        keys.add(entry["key"])
    return []


def _check_vectors(folder: Path, data: bytes) -> list[str]:
    meta = json.loads(data)
    if len(meta["digests"]) != len(meta["keys"]):
        return ["vectors/meta.json: keys and digests differ in number"]
    try:
        size = (folder / "vectors" / "vectors.f32").stat().st_size
    except OSError:
        return ["vectors/vectors.f32: missing"]
    if size != 4 * meta["dim"] * len(meta["keys"]):
        return ["vectors/vectors.f32: size does not match vectors/meta.json"]
    return []


# --- the validation memo ------------------------------------------------------------------------------
#
# Full validation reads every byte (about a second per 10k pages); a reader opens the same
# build again and again. So a folder validated once on this machine is remembered, keyed by
# its real path and every file's (size, mtime_ns, ctime_ns, inode), and by the manifest's
# sha256. Any write to a file changes its ctime, which no user can set back, so a changed
# file is validated again. The memo only spares work: the restricted unpickler guards every
# read whatever the memo says. Without a writable cache folder, every open validates.

# 2: validations decode every pickle with the bounded unpickler (1 used the C one).
MEMO_VERSION = 2
MAX_MEMOS = 256  # the newest are kept; a pruned build's memo goes with it


def validated_files(folder: Path) -> dict[str, tuple[int, int, int, int]] | None:
    """Each file's (size, mtime_ns, ctime_ns, inode) as this machine's full validation saw
    it, when the folder is still in that state; None otherwise."""
    state = _state(folder)
    if state is None or not _validated(folder, state):
        return None
    return {name: (s, m, c, i) for name, (s, m, c, i) in state["files"].items()}


def _cache_folder() -> Path:
    return cache_home() / "validated"


def _memo_path(real: str) -> Path:
    return _cache_folder() / (
        hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".json"
    )


def _state(folder: Path) -> dict[str, Any] | None:
    """This folder's identity and every file's stat, or None when it cannot be taken."""
    try:
        real = os.path.realpath(folder)
        found, odd = _listing(Path(real))
        manifest = hashlib.sha256(_read_regular(Path(real) / MANIFEST)).hexdigest()
    except OSError:
        return None
    files = {
        name: [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
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


def _validated(folder: Path, state: dict[str, Any]) -> bool:
    try:
        memo = json.loads(_memo_path(state["folder"]).read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return bool(memo == state)


def _remember(folder: Path, state: dict[str, Any]) -> None:
    path = _memo_path(state["folder"])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".memo.", dir=path.parent)
    except OSError:
        return  # no cache: the next open validates again, which is only slower
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(dump_json(state))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return
    _trim(path.parent)


def _trim(cache: Path) -> None:
    """Keep the cache small: the MAX_MEMOS newest memos (memos of folders that are gone or
    long unused go first)."""
    try:
        memos = [(entry.stat().st_mtime, entry.path) for entry in os.scandir(cache)]
    except OSError:
        return
    if len(memos) <= MAX_MEMOS:
        return
    for _mtime, name in sorted(memos)[: len(memos) - MAX_MEMOS]:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _forget(folder: Path) -> None:
    """Drop the memo of a build folder about to be deleted."""
    with contextlib.suppress(OSError):
        _memo_path(os.path.realpath(folder)).unlink()
