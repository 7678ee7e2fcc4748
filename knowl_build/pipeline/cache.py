"""Where the caches live, and the parse cache: ParsedPage records by content hash (JSON lines).

A second run on an unchanged tree reads each file and hashes it, but parses nothing. The
cache key includes the tool version and the configuration that page-local rules read, so a
change to either starts a fresh cache. New entries are appended; the file is rewritten only
when more than half of it is no longer used. A damaged cache is ignored, never trusted.

knowl trusts only what this machine wrote (`trust`): every line of the parse cache carries
a seal made with the machine's key, checked when it is read; a line without a valid seal
(committed with the project, written elsewhere, torn) is ignored. Without a usable key the
caches are off, and a notice says so once.

The caches (this one, the check memo, the history replay) live in `.knowl/cache/` of the
project. A source tree that cannot be written (a read-only checkout or mount) is never written
to: the caches then go under `<out>/.cache/` when the build has an output folder of its own,
else they are off, and a notice says so once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from knowl_build.core.model import ParsedPage
from knowl_build.support.files import atomic_write
from knowl_build.support.trust import NO_KEY, MachineKey, Sealer, machine_key, read_cache_file

# 5: every line sealed; 6: block ids; 7: bound fingerprints of any hex length; 8: pages
# encoded by msgspec from the model's own types (decoding one is several times faster);
# 9: only real comments are suppressions (a cached page may hold one that is not); 10:
# KB003 and KB002 of a value name their key (Dendron owns `id`, `status`), block ids hold `_`;
# 11: Hugo shortcodes hold no links, and code shortcodes no headings, suppressions or block ids
# 12: Hugo's TOML front matter is no prose (no links, headings, suppressions); 13: Markdown
# links and images are links, and their http(s) targets URLs; 14: public values (SRI hashes,
# SVG path data, ids of public-id keys) are no KB401; 16: a number, date or boolean in a text
# field is its text as written (`title: 0.840`); 17: a bound value that is no hash is kept
# (not valid) beside its KB002, as drift; 18: a heading's trailing attribute list
# (`{ #id }`) is no part of its text, and its id is the heading's anchor
CACHE_FORMAT = 18


def ensure_knowl_dir(root: Path) -> Path:
    """Create `.knowl/` with a `.gitignore` of `*`, so knowl's output is never committed."""
    folder = root / ".knowl"
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists() and not ignore.is_symlink():  # never write through a link
        atomic_write(ignore, b"*\n")  # whole or not at all: an empty one would stay empty
    return folder


@dataclass(frozen=True, slots=True)
class CachePlace:
    """The folder of the caches (None: caches off), the key that seals them (None: no
    usable key, so caches are off and no earlier build is reused) and the notices that
    explain either."""

    folder: Path | None
    notices: tuple[str, ...] = ()
    problem: str | None = None  # why the project root is not written to ("cannot be written")
    key: MachineKey = NO_KEY

    def file(self, name: str) -> Path | None:
        return self.folder / name if self.folder is not None else None

    def sealer(self, purpose: str) -> Sealer | None:
        """What seals and checks the cache or build of `purpose` (None: nothing is trusted)."""
        return self.key.sealer(purpose)


def cache_place(root: Path, out: Path | None = None) -> CachePlace:
    """`.knowl/cache/` when the project root can be written, else `<out>/.cache/`, else off;
    off as well without a key to seal the caches with (see `trust.machine_key`).

    A `.knowl` that is a symlink is not written through: it may lead anywhere."""
    place = _cache_folder(root, out)
    key = machine_key()
    if key.secret is None:
        notice = (
            f"knowl cannot seal its caches ({key.problem}), so it trusts none: it runs "
            "without its caches and every build starts from nothing"
        )
        return CachePlace(None, (*place.notices, notice), place.problem, key)
    return CachePlace(place.folder, place.notices, place.problem, key)


def _cache_folder(root: Path, out: Path | None) -> CachePlace:
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
            (
                f"the project root {root} {reason}; knowl writes nothing there and keeps its "
                f"caches in {folder}",
            ),
            reason,
        )
    return CachePlace(
        None,
        (
            f"the project root {root} {reason}; knowl writes nothing there and runs without "
            "its caches",
        ),
        reason,
    )


class ParseCache:
    """`pages.jsonl`: a header line `{"format", "key"}`, then one `<seal> <digest> <page>`
    per line, the page as compact JSON and the seal over `<digest> <page>`.

    The seal is made for this cache key, so a line is used only under the key it was
    written for. `machine` is the key that seals (default: this machine's); without a
    usable one the cache is off."""

    def __init__(
        self,
        folder: Path | None,
        key: str,
        enabled: bool = True,
        machine: MachineKey | None = None,
        resident: bool = False,
    ) -> None:
        """`resident`: kept across runs (the language server's), so each page decoded is
        kept decoded, and each save appends only what is new since the last."""
        self.folder = folder
        self.key = key
        enabled = enabled and folder is not None
        if machine is None and enabled:
            machine = machine_key()
        self.sealer = machine.sealer(f"parse-cache\0{key}") if machine is not None else None
        self.enabled = enabled and self.sealer is not None
        self.path = (folder or Path(".")) / "pages.jsonl"
        self.entries: dict[str, memoryview] = {}  # digest -> the page's JSON, sealed when read
        self.used: set[str] = set()
        self.new: dict[str, bytes] = {}
        self.valid_file = False
        self.ignored = 0  # lines without a valid seal: the next save drops them
        self.decoded: dict[str, ParsedPage] | None = {} if resident else None
        if self.enabled:
            self._load()

    def _load(self) -> None:
        assert self.sealer is not None
        data = read_cache_file(self.path)
        if not data:
            return
        end = data.find(b"\n")
        try:
            header = json.loads(data[: end if end >= 0 else len(data)])
        except ValueError:
            return
        if (
            not isinstance(header, dict)
            or header.get("format") != CACHE_FORMAT
            or header.get("key") != self.key
        ):
            return
        check = self.sealer.check
        entries = self.entries
        # Each entry is a view of the file's bytes, not a copy of its line: the file is held
        # once, and freed whole with the cache.
        view = memoryview(data)
        at = end + 1 if end >= 0 else len(data)
        while at < len(data):
            stop = data.find(b"\n", at)
            if stop < 0:
                break
            line = view[at:stop]
            tag, rest = line[:64], line[65:]
            space = data.find(b" ", at + 65, stop)
            if data[at + 64 : at + 65] == b" " and space >= 0 and check(rest, tag):
                entries[data[at + 65 : space].decode("ascii", "replace")] = view[space + 1 : stop]
            else:
                self.ignored += 1
            at = stop + 1
        # A last line without its end (an append cut short) is ignored; appending after it
        # would glue the next line to it, so the next save rewrites the file.
        self.valid_file = at == len(data)

    def get(self, digest: str) -> ParsedPage | None:
        decoded = self.decoded
        if decoded is not None and (kept := decoded.get(digest)) is not None:
            self.used.add(digest)
            return kept
        raw = self.entries.get(digest)
        if raw is None:
            return None
        try:
            page = decode_page(raw)
        except (msgspec.DecodeError, RecursionError):
            return None
        self.used.add(digest)
        if decoded is not None:
            decoded[digest] = page
        return page

    def put(self, digest: str, page: ParsedPage, encoded: bytes | None = None) -> None:
        """Remember `page` (`encoded`: its `encode_page`, when already made)."""
        self.new[digest] = encoded if encoded is not None else encode_page(page)
        self.used.add(digest)
        if self.decoded is not None:
            self.decoded[digest] = page

    def save(self) -> None:
        """Append new entries; rewrite the file when most of it is no longer used."""
        if not self.enabled:
            return
        try:
            self._write()
        finally:
            decoded = self.decoded
            if decoded is not None:  # what was saved (or not) is not new next time,
                self.entries.update((d, memoryview(b)) for d, b in self.new.items())
                # the pages kept decoded are this run's (an edited buffer's versions go),
                self.decoded = {d: decoded[d] for d in self.used if d in decoded}
                self.new, self.used = {}, set()  # and the next run says what it uses

    def _write(self) -> None:
        stale = len(set(self.entries) - self.used) + self.ignored
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.valid_file and stale <= len(self.used) // 2:
                if self.new:
                    _append_whole(self.path, self._lines(self.new.items()))
                return
            if not self.new and not stale and self.valid_file:
                return
            keep = [(d, self.entries[d]) for d in sorted(self.used) if d in self.entries]
            header = json.dumps({"format": CACHE_FORMAT, "key": self.key}).encode() + b"\n"
            atomic_write(self.path, header + self._lines([*keep, *self.new.items()]))
            self.entries = dict(keep)  # what the file holds now, with the new entries
            self.valid_file, self.ignored = True, 0
        except OSError:
            pass  # a read-only checkout still works; it is only slower next time

    def _lines(self, items: Iterable[tuple[str, bytes | memoryview]]) -> bytes:
        assert self.sealer is not None
        seal = self.sealer.seal
        out = []
        for digest, page in items:
            rest = digest.encode("ascii") + b" " + page
            out.append(seal(rest) + b" " + rest + b"\n")
        return b"".join(out)


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(ParsedPage)


def encode_page(page: ParsedPage) -> bytes:
    """A parsed page as the cache stores it."""
    return _ENCODER.encode(page)


def decode_page(data: bytes | memoryview) -> ParsedPage:
    """What `encode_page` encoded (msgspec.DecodeError for anything else)."""
    return _DECODER.decode(data)


def _append_whole(path: Path, data: bytes) -> None:
    """Append `data` to `path`, all of it or nothing: a write cut short (a full disk) is
    taken back, so the file never ends in half an entry."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(fd).st_size
        rest = memoryview(data)
        try:
            while rest:
                rest = rest[os.write(fd, rest) :]
        except OSError:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)
