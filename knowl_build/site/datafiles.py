"""The site's data files (search shards, graph neighbourhoods): JSON with sorted keys, written
atomically and only when their bytes change, and the files no longer produced pruned.

A rebuild after one page changed thus rewrites the few files whose content changed, not the
folder: a static host syncs (or a browser revalidates) only those, and a reader in the middle
of a page load never sees half a file."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder(order="sorted")


def encode(data: Any) -> bytes:
    """Compact JSON, sorted keys, UTF-8, no trailing new line: the same data, the same bytes."""
    return _ENCODER.encode(data)


def digest(data: bytes) -> str:
    """A content name: 16 hex digits of SHA-256 (files named by it never go stale in a cache)."""
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass
class Written:
    """What one write of a folder did: files (re)written, left as they were, and removed."""

    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    bytes: int = 0  # the size of every file produced, written or not

    def merge(self, other: Written) -> Written:
        return Written(
            self.written + other.written,
            self.unchanged + other.unchanged,
            self.removed + other.removed,
            self.bytes + other.bytes,
        )


class Folder:
    """A folder of generated files: `put` each one, then `prune` what was not put."""

    def __init__(self, root: Path, base: Path) -> None:
        self.root = root
        self.base = base  # names in `Written` are relative to it (the site's root)
        self.kept: set[Path] = set()
        self.result = Written()

    def put(self, name: str, data: bytes) -> None:
        path = self.root / name
        self.kept.add(path)
        self.result.bytes += len(data)
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                self.result.unchanged += 1
                return
        except FileNotFoundError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        # A temporary name in the same folder, then one rename: readers see the old file or the
        # new one. The leading dot keeps it out of a pruned glob's way should a run stop here.
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            temp.write_bytes(data)
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        self.result.written.append(path.relative_to(self.base).as_posix())

    def prune(self, folders: Iterable[str]) -> Written:
        """Remove every file under `folders` (relative to the root) that was not put."""
        for name in folders:
            folder = self.root / name
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                if path.is_file() and path not in self.kept:
                    path.unlink()
                    self.result.removed.append(path.relative_to(self.base).as_posix())
        return self.result
