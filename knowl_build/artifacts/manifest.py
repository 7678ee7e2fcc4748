"""The manifest of a build: read, checked for a format this version reads, and typed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from knowl_build.artifacts.folders import read_regular
from knowl_build.artifacts.layout import FORMAT, MANIFEST, SCHEMA_VERSION
from knowl_build.artifacts.schema import Manifest, decode
from knowl_build.core.errors import ArtifactError


class MalformedManifest(ArtifactError):
    """A manifest of this format whose keys or values do not have their schema."""

    def __init__(self, folder: Path, problem: str) -> None:
        super().__init__(f"{folder}: {problem}")
        self.problem = problem


def read_manifest(folder: Path) -> Manifest:
    try:
        data = read_regular(folder / MANIFEST)
        header = json.loads(data)
    except FileNotFoundError:
        raise ArtifactError(f"{folder}: not a knowl-build artifact (no {MANIFEST})") from None
    except (OSError, ValueError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not JSON"
        raise ArtifactError(f"{folder}: {MANIFEST} is unreadable ({reason})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ArtifactError(f"{folder}: {MANIFEST} is not a knowl-build manifest")
    version = header.get("schema_version")
    major = version.split(".")[0] if isinstance(version, str) else ""
    if major != SCHEMA_VERSION.split(".")[0]:
        plain = isinstance(version, str) and re.fullmatch(r"[0-9A-Za-z.+-]{1,20}", version)
        raise ArtifactError(
            f"{folder}: artifact schema {version if plain else '?'} is not readable by this knowl "
            f"(reads {SCHEMA_VERSION.split('.')[0]}.x); rebuild it with this version"
        )
    try:
        return decode(MANIFEST, data, Manifest)
    except ArtifactError as exc:
        raise MalformedManifest(folder, str(exc)) from None
