"""Where the caches live, and the parse cache: ParsedPage records by content hash (JSON lines).

A second run on an unchanged tree reads each file and hashes it, but parses nothing. The
cache key includes the tool version and the configuration that page-local rules read, so a
change to either starts a fresh cache. New entries are appended; the file is rewritten only
when more than half of it is no longer used. A damaged cache is ignored, never trusted.

The caches (this one, the check memo, the history replay) live in `.knowl/cache/` of the
project. A source tree that cannot be written (a read-only checkout or mount) is never written
to: the caches then go under `<out>/.cache/` when the build has an output folder of its own,
else they are off, and a notice says so once.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowl_build.files import atomic_write
from knowl_build.model import ParsedPage

CACHE_FORMAT = 4


def ensure_knowl_dir(root: Path) -> Path:
    """Create `.knowl/` with a `.gitignore` of `*`, so knowl's output is never committed."""
    folder = root / ".knowl"
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists() and not ignore.is_symlink():  # never write through a link
        ignore.write_text("*\n", encoding="utf-8")
    return folder


@dataclass(frozen=True, slots=True)
class CachePlace:
    """The folder of the caches (None: caches off) and the notice that explains a change."""

    folder: Path | None
    notice: str | None = None
    problem: str | None = None  # why the project root is not written to ("cannot be written")

    def file(self, name: str) -> Path | None:
        return self.folder / name if self.folder is not None else None


def cache_place(root: Path, out: Path | None = None) -> CachePlace:
    """`.knowl/cache/` when the project root can be written, else `<out>/.cache/`, else off.

    A `.knowl` that is a symlink is not written through: it may lead anywhere."""
    knowl = root / ".knowl"
    reason = "cannot be written"
    if knowl.is_symlink():
        reason = "has a .knowl that is a symlink"
    else:
        try:
            folder = ensure_knowl_dir(root) / "cache"
            folder.mkdir(exist_ok=True)
        except OSError:
            pass
        else:
            expected = os.path.join(os.path.realpath(root), ".knowl", "cache")
            if os.path.realpath(folder) != expected:
                reason = "has a .knowl/cache that is a symlink"
            # os.access sees a read-only mount even for root, whom permission bits do not stop.
            elif os.access(folder, os.W_OK | os.X_OK):
                return CachePlace(folder)
    if out is not None:
        folder = out / ".cache"
        return CachePlace(
            folder,
            f"the project root {root} {reason}; knowl writes nothing there and keeps its "
            f"caches in {folder}",
            reason,
        )
    return CachePlace(
        None,
        f"the project root {root} {reason}; knowl writes nothing there and runs without its caches",
        reason,
    )


class ParseCache:
    """`pages.jsonl`: a header line `{"format", "key"}`, then one `[digest, page]` per line."""

    def __init__(self, folder: Path | None, key: str, enabled: bool = True) -> None:
        self.folder = folder
        self.key = key
        self.enabled = enabled and folder is not None
        self.path = (folder or Path(".")) / "pages.jsonl"
        self.entries: dict[str, Any] = {}
        self.used: set[str] = set()
        self.new: dict[str, dict[str, Any]] = {}
        self.valid_file = False
        if enabled:
            self._load()

    def _load(self) -> None:
        try:
            lines = self.path.read_bytes().splitlines()
            header = json.loads(lines[0]) if lines else None
        except (OSError, ValueError):
            return
        if (
            not isinstance(header, dict)
            or header.get("format") != CACHE_FORMAT
            or header.get("key") != self.key
        ):
            return
        entries: dict[str, Any] = {}
        try:
            for line in lines[1:]:
                digest, page = json.loads(line)
                entries[digest] = page
        except (ValueError, TypeError):
            return  # a torn or damaged file: start again
        self.entries = entries
        self.valid_file = True

    def get(self, digest: str) -> ParsedPage | None:
        raw = self.entries.get(digest)
        if raw is None:
            return None
        try:
            page = ParsedPage.from_json(raw)
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        self.used.add(digest)
        return page

    def put(self, digest: str, page: ParsedPage) -> None:
        self.new[digest] = page.to_json()
        self.used.add(digest)

    def save(self) -> None:
        """Append new entries; rewrite the file when most of it is no longer used."""
        if not self.enabled:
            return
        stale = len(set(self.entries) - self.used)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.valid_file and stale <= len(self.used) // 2:
                if self.new:
                    with self.path.open("ab") as handle:
                        handle.write(self._lines(self.new.items()))
                return
            if not self.new and not stale and self.valid_file:
                return
            keep = [(d, self.entries[d]) for d in self.used if d in self.entries]
            header = json.dumps({"format": CACHE_FORMAT, "key": self.key}).encode() + b"\n"
            atomic_write(self.path, header + self._lines([*keep, *self.new.items()]))
        except OSError:
            pass  # a read-only checkout still works; it is only slower next time

    @staticmethod
    def _lines(items: Any) -> bytes:
        encode = json.JSONEncoder(separators=(",", ":")).encode
        return "".join(encode([digest, page]) + "\n" for digest, page in items).encode()
