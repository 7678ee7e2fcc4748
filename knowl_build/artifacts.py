"""The build artifact: layout, manifest, atomic publication, the build lock, verification.

The reader imports this module (never the build pipeline): it defines what an artifact is.

    <out_dir>/CURRENT           one line: the name of the published build folder
    <out_dir>/<build-id>/       manifest.json, pages.jsonl, entities.json, graph.json,
                                diagnostics.json, index/ (Whoosh), written once, never changed
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowl_build.errors import ArtifactError, KnowlError

FORMAT = "knowl-build"
SCHEMA_VERSION = "1.0"
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
LOCK = ".lock"
STAGING_PREFIX = ".tmp-"
JSON_FILES = ("pages.jsonl", "entities.json", "graph.json", "diagnostics.json", "catalog.json")


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
    """Every file of a build folder except the manifest, with its sha256."""
    table = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != MANIFEST:
            table[path.relative_to(folder).as_posix()] = sha256_file(path)
    return table


# --- the lock ---------------------------------------------------------------------------


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


@contextlib.contextmanager
def build_lock(out_dir: Path) -> Iterator[None]:
    """One build at a time per output folder; a lock left by a dead process is taken over."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = out_dir / LOCK
    me = f"{os.getpid()} {socket.gethostname()}\n"
    for _attempt in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid_text, _, host = lock.read_text().partition(" ")
                pid = int(pid_text)
            except (OSError, ValueError):
                pid, host = -1, ""
            same_host = host.strip() in ("", socket.gethostname())
            if pid > 0 and same_host and _alive(pid):
                raise BuildBusy(
                    f"another build (pid {pid}) holds {lock}; wait for it to finish"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()  # left by a dead build: take it over
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(me)
        break
    else:
        raise BuildBusy(f"could not take the build lock {lock}")
    try:
        _remove_stale_staging(out_dir)
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()


def _remove_stale_staging(out_dir: Path) -> None:
    """Staging folders of interrupted builds (we hold the lock, so nobody writes them)."""
    for path in out_dir.glob(STAGING_PREFIX + "*"):
        shutil.rmtree(path, ignore_errors=True)


# --- publication --------------------------------------------------------------------------


def staging_folder(out_dir: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))


def current_folder(out_dir: Path) -> Path | None:
    try:
        name = (out_dir / CURRENT).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not name or "/" in name or name.startswith("."):
        return None
    folder = out_dir / name
    return folder if folder.is_dir() else None


def publish(out_dir: Path, staging: Path, build_id: str) -> Path:
    """Rename the finished folder into place, then switch CURRENT to it atomically."""
    name, n = build_id, 1
    while (out_dir / name).exists():
        n += 1
        name = f"{build_id}.{n}"
    final = out_dir / name
    os.rename(staging, final)
    fd, tmp = tempfile.mkstemp(prefix=".CURRENT.", dir=out_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(name + "\n")
    os.replace(tmp, out_dir / CURRENT)
    return final


def prune(out_dir: Path, keep: int) -> list[str]:
    """Remove the oldest build folders beyond `keep` (the current one always stays)."""
    current = current_folder(out_dir)
    builds = []
    for folder in out_dir.iterdir():
        if folder.is_dir() and not folder.name.startswith(".") and (folder / MANIFEST).is_file():
            builds.append(folder)
    builds.sort(key=lambda f: (f.stat().st_mtime, f.name), reverse=True)
    removed = []
    kept = 1 if current is not None else 0
    for folder in builds:
        if current is not None and folder.resolve() == current.resolve():
            continue
        if kept < keep:
            kept += 1
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder.name)
    return removed


# --- opening and verifying ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Artifact:
    folder: Path
    manifest: dict[str, Any]

    def path(self, name: str) -> Path:
        return self.folder / name


def read_manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((folder / MANIFEST).read_bytes())
    except FileNotFoundError:
        raise ArtifactError(f"{folder}: not a knowl-build artifact (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{folder}: {MANIFEST} is unreadable or not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"{folder}: {MANIFEST} is not a knowl-build manifest")
    version = str(manifest.get("schema_version", ""))
    if version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise ArtifactError(
            f"{folder}: artifact schema {version or '?'} is not readable by this knowl "
            f"(reads {SCHEMA_VERSION.split('.')[0]}.x); rebuild it with this version"
        )
    if not isinstance(manifest.get("files"), dict):
        raise ArtifactError(f"{folder}: {MANIFEST} has no file table")
    return manifest


def verify(folder: Path, *, full: bool = True) -> list[str]:
    """Problems with an artifact: checksums of every file (`full`), or on open the checksums
    of the JSON files and the sizes of the index files."""
    manifest = read_manifest(folder)
    problems = []
    files: dict[str, str] = manifest["files"]
    sizes: dict[str, int] = manifest.get("sizes", {})
    for name, expected in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        if full or name in JSON_FILES or not name.startswith("index/"):
            if sha256_file(path) != expected:
                problems.append(f"{name}: checksum mismatch")
        elif name in sizes and path.stat().st_size != sizes[name]:
            problems.append(f"{name}: size differs from the manifest")
    return problems


def open_artifact(folder: Path) -> Artifact:
    """Open and check an artifact folder; refuse a corrupt one with a one-line reason."""
    problems = verify(folder, full=False)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ArtifactError(f"{folder}: corrupt artifact: {problems[0]}{more}; run knowl verify")
    return Artifact(folder, read_manifest(folder))


def resolve_artifact(out_dir: Path) -> Path:
    folder = current_folder(out_dir)
    if folder is None:
        raise ArtifactError(f"no published build in {out_dir} (run knowl build first)")
    return folder
