"""The parse cache: ParsedPage records by content hash, under `.knowl/cache/` (JSON).

A second `knowl check` on an unchanged tree reads each file and hashes it, but parses nothing.
The cache key includes the tool version and the configuration that page-local rules read, so
a change to either starts a fresh cache. A damaged cache file is ignored, never trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from knowl_build.model import ParsedPage

CACHE_FORMAT = 1


def ensure_knowl_dir(root: Path) -> Path:
    """Create `.knowl/` with a `.gitignore` of `*`, so knowl's output is never committed."""
    folder = root / ".knowl"
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    return folder


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class ParseCache:
    def __init__(self, root: Path, key: str, enabled: bool = True) -> None:
        self.root = root
        self.key = key
        self.enabled = enabled
        self.path = root / ".knowl" / "cache" / "pages.json"
        self.entries: dict[str, dict[str, Any]] = {}
        self.used: dict[str, dict[str, Any]] = {}
        self.dirty = False
        if enabled:
            self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return
        if (
            isinstance(data, dict)
            and data.get("format") == CACHE_FORMAT
            and data.get("key") == self.key
            and isinstance(data.get("entries"), dict)
        ):
            self.entries = data["entries"]

    def get(self, digest: str) -> ParsedPage | None:
        raw = self.entries.get(digest)
        if raw is None:
            return None
        try:
            page = ParsedPage.from_json(raw)
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        self.used[digest] = raw
        return page

    def put(self, digest: str, page: ParsedPage) -> None:
        self.used[digest] = page.to_json()
        self.dirty = True

    def save(self) -> None:
        """Keep the entries this run used; write only when something changed."""
        if not self.enabled or (not self.dirty and len(self.used) == len(self.entries)):
            return
        try:
            ensure_knowl_dir(self.root)
            payload = {"format": CACHE_FORMAT, "key": self.key, "entries": self.used}
            atomic_write(self.path, json.dumps(payload, separators=(",", ":")).encode())
        except OSError:
            pass  # a read-only checkout still checks; it is only slower next time
