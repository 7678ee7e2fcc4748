"""The project's inputs, read once per run: every page and semantic file with its content
hash (files come from discovery, SPEC 1). With a stat cache (`stats`), a page whose stat
data is unchanged is not read: its digest is known, and its bytes are read only if a stage
needs them (`Inputs.read`)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build import __version__
from knowl_build.core.config import Config
from knowl_build.pipeline.discover import Discovery, discover
from knowl_build.pipeline.stats import StatCache, stamp_of

UNREADABLE = "unreadable"  # the digest of a file that cannot be read


@dataclass(slots=True)
class Inputs:
    """Every input file's bytes and content hash, read once per run.

    A page's bytes are None when it cannot be read (its digest is `UNREADABLE`) or when the
    stat cache vouched for its digest and it was not read (`read` reads it then)."""

    discovery: Discovery
    pages: dict[str, tuple[bytes | None, str]] = field(default_factory=dict)
    semantics: dict[str, tuple[bytes | None, str]] = field(default_factory=dict)
    # Pages read after the fingerprint was taken whose digest was not the one vouched for
    # (changed meanwhile): what the fingerprint said no longer holds.
    changed: set[str] = field(default_factory=set)

    def read(self, path: str) -> tuple[bytes | None, str]:
        """A page's bytes and digest, reading the page when the stat cache spared it."""
        data, digest = self.pages[path]
        if data is not None or digest == UNREADABLE:
            return data, digest
        data, now = read_file(str(self.discovery.root), path)
        if now != digest:
            self.changed.add(path)
        self.pages[path] = (data, now)
        return data, now

    def fingerprint(self, config: Config, today: dt.date, pages: bool = True) -> str:
        """Everything a check's result depends on, hashed (`pages=False`: all but the
        pages' bytes and HEAD)."""
        digest = hashlib.sha256()
        header = [
            __version__,
            pages,
            config.sha256,
            today.isoformat(),
            self.discovery.git is not None,
            # History findings change with a new commit (a change no longer uncommitted) and
            # with `git fetch --unshallow` (KB010 goes, claims come back).
            # Without the pages, HEAD too is left out: a ledger compares what it reads of
            # the history itself (`pipeline.recheck`).
            ([git.head(), git.shallow] if pages else [git.shallow])
            if (git := self.discovery.git) is not None
            else None,
            self.discovery.knowledge_exists,
            sorted(self.discovery.other_files),
            # The findings themselves: a symlink's target can change what is refused while
            # every file's bytes stay the same.
            sorted((p, [f.to_list() for f in fs]) for p, fs in self.discovery.findings.items()),
        ]
        digest.update(json.dumps(header).encode())
        for table in (self.pages, self.semantics) if pages else (self.semantics,):
            for path in sorted(table):
                digest.update(f"\0{path}\0{table[path][1]}".encode())
        return digest.hexdigest()


def read_file(root: str, path: str) -> tuple[bytes | None, str]:
    """A file's bytes and sha256 (None and "unreadable" when it cannot be read)."""
    # os.read, not open(): a file object costs more than reading a page (every run reads
    # every input, 10,000 pages in 60 ms this way instead of 90).
    try:
        fd = os.open(os.path.join(root, path), os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            chunks = [os.read(fd, size + 1)]
            if len(chunks[0]) > size:  # it grew since: read on to its end
                while chunks[-1]:
                    chunks.append(os.read(fd, 1 << 20))
        finally:
            os.close(fd)
    except OSError:
        return None, UNREADABLE
    data = b"".join(chunks)
    return data, hashlib.sha256(data).hexdigest()


def read_inputs(root: Path, config: Config, stats: StatCache | None = None) -> Inputs:
    """Discovery, then every input file read and hashed; with `stats`, pages it vouches
    for are not read, and what this run read is saved in it."""
    discovery = discover(root, config)
    base = str(root)
    inputs = Inputs(discovery)
    if stats is None:
        inputs.pages = {path: read_file(base, path) for path in discovery.pages}
    else:
        inputs.pages = {path: _read_page(base, path, stats) for path in discovery.pages}
        stats.save()
    semantic = list(discovery.semantic_files)
    if discovery.dbt_project_file is not None:
        semantic.append(discovery.dbt_project_file)
    semantic += discovery.dbt_files
    inputs.semantics = {path: read_file(base, path) for path in semantic}
    return inputs


def _read_page(root: str, path: str, stats: StatCache) -> tuple[bytes | None, str]:
    """The page's digest from the stat cache (no bytes), or the page read (stat'ed first,
    so that a change while it is read leaves a stamp the next run does not match)."""
    stamp = stamp_of(os.path.join(root, path))
    digest = stats.digest(path, stamp)
    if digest is not None:
        return None, digest
    data, digest = read_file(root, path)
    if data is not None:
        stats.remember(path, stamp, digest)
    return data, digest


def inputs_sha256(root: Path, inputs: Inputs, config: Config) -> str:
    digest = hashlib.sha256()
    rows = [(p, h) for table in (inputs.pages, inputs.semantics) for p, (_, h) in table.items()]
    for path in inputs.discovery.other_files:
        rows.append((path, read_file(str(root), path)[1]))
    for path, content_hash in sorted(rows):
        digest.update(f"{path}\0{content_hash}\n".encode())
    if config.source is not None:
        source = Path(config.source)
        source = source if source.is_absolute() else root / source.name
        digest.update(b"config\0" + (read_file(str(source.parent), source.name)[1]).encode())
    return digest.hexdigest()
