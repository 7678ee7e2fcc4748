"""The site folder, written incrementally: a manifest of what made each file, and each file
written whole (a temporary file, then a rename) and only when its bytes change.

`<site>/.knowl-site.json` maps each file the site core wrote to the digest of its inputs (the
template data, the templates, the settings) and to the size and modification time it was left
with. A rebuild renders a file again only when its inputs digest differs or the file is no
longer as it was left; a rendered file whose bytes equal those on disk is not written. Files
of the previous manifest that the build no longer makes are removed, and nothing else: the
manifest is the only list of what may be deleted, each name checked against the URL layout.
The manifest is written last, so an interrupted build leaves the previous one, which is still
true of every file it names that was not rewritten, and says nothing of those that were (they
are rendered again, and their bytes compared, the next time). A folder knowl creates or finds
empty is claimed first, with a manifest naming no file (`claim`), so a first build that stops
half way (a full disk) leaves a folder that is still knowl's, and the next build finishes it.

A manifest is no licence to delete: a file it names is removed only while it is exactly as a
build left it (its size and modification time to the nanosecond), so a marker knowl did not
write, in a folder of someone else's files, cannot make knowl delete any of them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from knowl_build.support.files import atomic_write

MANIFEST = ".knowl-site.json"
FORMAT = 1
# The only names a manifest may hold (and a build may remove): the layout's (site/urls.py).
_LAYOUT = re.compile(r"(?:[^/\\]+\.html|(?:pages|entities|tags|categories|assets)/[^/\\]+)")


class _Entry(msgspec.Struct, array_like=True, frozen=True):
    inputs: str
    size: int
    mtime_ns: int


class _Manifest(msgspec.Struct, frozen=True):
    format: int
    files: dict[str, _Entry]


def is_site_folder(folder: Path) -> bool:
    return (folder / MANIFEST).is_file()


def claim(folder: Path) -> None:
    """Mark a new or empty folder as a site knowl writes, before any file of the site: a
    manifest naming no file (so it licenses no removal)."""
    atomic_write(folder / MANIFEST, msgspec.json.encode(_Manifest(FORMAT, {})) + b"\n")


def layout_name(name: str) -> bool:
    """A file name of the site's layout: never absolute, `..`, or outside the folders."""
    return (
        _LAYOUT.fullmatch(name) is not None
        and not name.startswith(".")
        and all(part not in ("", ".", "..") for part in name.split("/"))
    )


def _load(folder: Path) -> dict[str, _Entry]:
    try:
        manifest = msgspec.json.decode((folder / MANIFEST).read_bytes(), type=_Manifest)
    except (OSError, msgspec.DecodeError):
        return {}  # none, or unreadable: every file is rendered again, and compared
    if manifest.format != FORMAT:
        return {}
    return {name: entry for name, entry in manifest.files.items() if layout_name(name)}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


@dataclass
class SiteFolder:
    """One build's writes into the site folder."""

    root: Path
    full: bool = False
    previous: dict[str, _Entry] = field(default_factory=dict)
    files: dict[str, _Entry] = field(default_factory=dict)
    rendered: int = 0
    skipped: int = 0
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.full:
            self.previous = _load(self.root)

    def current(self, name: str, inputs: str) -> bool:
        """True (and the file kept) when it was made from these inputs and is as left."""
        entry = self.previous.get(name)
        if entry is None or entry.inputs != inputs:
            return False
        try:
            stat = (self.root / name).stat()
        except OSError:
            return False
        if stat.st_size != entry.size or stat.st_mtime_ns != entry.mtime_ns:
            return False
        self.files[name] = entry
        self.skipped += 1
        return True

    def put(self, name: str, inputs: str, data: bytes) -> None:
        """The file's new content: written unless the file already holds these bytes."""
        if not layout_name(name):
            raise ValueError(f"site: {name!r} is not a name of the site's layout")
        self.rendered += 1
        path = self.root / name
        try:
            same = path.stat().st_size == len(data) and path.read_bytes() == data
        except OSError:
            same = False
        if same:
            self.unchanged += 1
        else:
            atomic_write(path, data)
            self.written.append(name)
        stat = path.stat()
        self.files[name] = _Entry(inputs, stat.st_size, stat.st_mtime_ns)

    def prune(self) -> None:
        """Remove the files of the previous build that this one did not make."""
        for name in sorted(set(self.previous).difference(self.files)):
            path = self.root / name
            entry = self.previous[name]
            try:
                stat = path.lstat()
            except OSError:
                continue
            # Only a file as a build left it: never one changed since, nor one a marker knowl
            # did not write names (see the module's docstring).
            as_left = stat.st_size == entry.size and stat.st_mtime_ns == entry.mtime_ns
            if path.is_file() and not path.is_symlink() and as_left:
                path.unlink()
                self.removed.append(name)

    def save(self) -> None:
        manifest = _Manifest(FORMAT, dict(sorted(self.files.items())))
        data = msgspec.json.encode(manifest) + b"\n"
        path = self.root / MANIFEST
        try:
            if path.read_bytes() == data:
                return
        except OSError:
            pass
        atomic_write(path, data)
