"""The stat cache: each page's sha256 by its stat data, so that a run reads only the pages
that changed since the last one (git's index does the same for `git status`).

A page whose size, mtime, ctime, inode and device are those the cache holds has the digest
the cache holds: it is not read again, and its parsed page comes from the parse cache by that
digest (`parse_pages` reads it after all when the parse cache has no such entry). A change to
a file's bytes changes its mtime and its ctime, and no program can set a ctime back.

Timestamps have a granularity (a clock tick, a second, two on some file systems), so a file
written in the same tick as it was read may change again and keep its stamp: git calls such
an entry racily clean. Here an entry is written only for a file whose mtime and ctime are
older than the run that read it by more than `SETTLE_NS`; a file changed since that run
started has a newer stamp, so an entry is never taken for a changed file. A page edited just
before a run is read again by the next one too, which costs one read.

The cache is untrusted input like every cache: it is sealed with the machine's key
(`support.trust`), and a file without a valid seal, of another format or of another project
root is ignored (every page is read). What a forged or stale entry could do is limited to
the digest it names: a digest the parse cache does not know makes the page read, so an
entry can only ever point at a page this machine parsed and sealed itself."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import msgspec

from knowl_build.pipeline.cache import CachePlace
from knowl_build.support.clock import SETTLE_NS
from knowl_build.support.files import atomic_write
from knowl_build.support.trust import Sealer, read_sealed

STAT_CACHE = "stats.json"
STAT_SEAL = "stat-cache"
STAT_FORMAT = 1

Stamp = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device


class _File(msgspec.Struct, frozen=True):
    format: int
    root: str
    files: dict[str, tuple[Stamp, str]]


_DECODER = msgspec.json.Decoder(_File)
_ENCODER = msgspec.json.Encoder()


def stamp_of(path: str) -> Stamp | None:
    """The stat data that says a file is unchanged (None: it cannot be stat'ed)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


class StatCache:
    """The stamps and digests of the last run (`known`) and of this one (`seen`)."""

    def __init__(self, path: Path | None, sealer: Sealer | None, root: Path) -> None:
        self.path = path
        self.sealer = sealer
        self.root = os.path.realpath(root)
        # Taken before any file is stat'ed: a stamp settled against it predates this run.
        self.settled_before = time.time_ns() - SETTLE_NS
        self.known: dict[str, tuple[Stamp, str]] = {}
        self.seen: dict[str, tuple[Stamp, str]] = {}
        if path is not None and sealer is not None:
            self.known = self._load(path, sealer)

    def _load(self, path: Path, sealer: Sealer) -> dict[str, tuple[Stamp, str]]:
        raw = read_sealed(path, sealer)
        if raw is None:
            return {}
        try:
            loaded = _DECODER.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return {}
        if loaded.format != STAT_FORMAT or loaded.root != self.root:
            return {}
        return loaded.files

    def digest(self, path: str, stamp: Stamp | None) -> str | None:
        """The digest the cache holds for `path` with this stamp (None: read the file)."""
        entry = self.known.get(path)
        if stamp is None or entry is None or entry[0] != stamp:
            return None
        self.seen[path] = entry
        return entry[1]

    def remember(self, path: str, stamp: Stamp | None, digest: str) -> None:
        """`path`, stat'ed as `stamp` before it was read, read as `digest`: kept when its
        stamp is settled (see the module's docstring), so a later change cannot share it."""
        if stamp is not None and max(stamp[1], stamp[2]) < self.settled_before:
            self.seen[path] = (stamp, digest)

    def save(self) -> None:
        """Write this run's entries when they differ from the last run's. A cache that
        cannot be written costs only a read of every page next time."""
        if self.path is None or self.sealer is None or self.seen == self.known:
            return
        files = dict(sorted(self.seen.items()))
        with contextlib.suppress(OSError, msgspec.EncodeError, UnicodeEncodeError):
            data = _ENCODER.encode(_File(STAT_FORMAT, self.root, files))
            self.path.parent.mkdir(parents=True, exist_ok=True)  # `<out>/.cache/`, say
            atomic_write(self.path, self.sealer.wrap(data))


def stat_cache(caches: CachePlace, root: Path) -> StatCache:
    """The project's stat cache where the caches live (an empty one, never saved, when
    caches are off)."""
    return StatCache(caches.file(STAT_CACHE), caches.sealer(STAT_SEAL), root)
