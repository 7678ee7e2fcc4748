"""Opening a published build: its manifest checked, its folder pinned while it is read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from knowl_build.artifacts.folders import safe_name, shown_name
from knowl_build.artifacts.layout import INDEX_JSON, sha256_file
from knowl_build.artifacts.manifest import read_manifest
from knowl_build.artifacts.memo import folder_state, remember, was_validated
from knowl_build.artifacts.publication import Hold, Vanished, hold, successor
from knowl_build.artifacts.schema import Manifest
from knowl_build.artifacts.validate import validate
from knowl_build.core.errors import ArtifactError

# --- opening ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Artifact:
    """An opened, validated artifact folder, pinned (`hold`) until `close()`."""

    folder: Path
    manifest: Manifest
    hold: Hold | None = None

    def close(self) -> None:
        if self.hold is not None:
            self.hold.close()


def open_artifact(folder: Path) -> Artifact:
    """Open an artifact folder for reading: pin it (so no build prunes it while it is read),
    then refuse a corrupt or hostile one with a one-line reason. When the folder vanished
    between resolving CURRENT and pinning it (a build pruned it), the build CURRENT names now
    is opened instead, once. The full validation (`validate`) runs unless this machine
    already validated this exact state of the folder (see `folder_state`)."""
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


def _checked_manifest(folder: Path) -> Manifest:
    manifest = read_manifest(folder)
    state = folder_state(folder)
    if state is None or not was_validated(folder, state):
        problems = validate(folder)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ArtifactError(
                f"{folder}: corrupt artifact: {problems[0]}{more}; run knowl verify"
            )
        if state is not None:
            remember(folder, state)
    return manifest


def verify(folder: Path, *, full: bool = True) -> list[str]:
    """Problems with an artifact: everything `validate` checks (`full`), or only the
    checksums of the JSON files and the sizes of the index files."""
    if full:
        state = folder_state(folder)
        problems = validate(folder)
        if not problems and state is not None:
            remember(folder, state)
        return problems
    manifest = read_manifest(folder)
    problems = []
    sizes = manifest.sizes or {}
    for name, expected in sorted(manifest.files.items()):
        path = folder / name
        if not safe_name(name) or not path.is_file():
            problems.append(f"{shown_name(name)}: missing")
        elif not name.startswith("index/") or name in INDEX_JSON:
            if sha256_file(path) != expected:
                problems.append(f"{name}: checksum mismatch")
        elif name in sizes and path.stat().st_size != sizes[name]:
            problems.append(f"{name}: size differs from the manifest")
    return problems
