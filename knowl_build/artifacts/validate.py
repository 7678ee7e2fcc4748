"""Full validation of a build folder: every file against the manifest, every record
against its schema, every pickle through the bounded unpickler."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UnsetType

from knowl_build.artifacts.catalog import catalog_binding, catalog_caveats
from knowl_build.artifacts.folders import listing, safe_name, shown_name
from knowl_build.artifacts.layout import (
    BUILD_MARKER,
    CATALOG_HEADS,
    INDEX_JSON,
    JSON_FILES,
    MANIFEST,
    RECORDS,
    sha256_file,
)
from knowl_build.artifacts.manifest import MalformedManifest, read_manifest
from knowl_build.artifacts.records import members
from knowl_build.artifacts.schema import (
    FILES,
    Catalog,
    CatalogEntry,
    CatalogHeads,
    Manifest,
    PageRecord,
    VectorsMeta,
    decode,
    decoder,
    problem,
)
from knowl_build.core.errors import ArtifactError

# --- full validation ------------------------------------------------------------------------------


def validate(folder: Path) -> list[str]:
    """Every problem of an artifact folder, relative to its manifest.

    Checks the manifest's shape; that the folder holds exactly the files the manifest lists
    (regular files, no symlinks), each with its size and sha256; that every JSON file parses
    and has the shape of its schema, record by record (the catalog's offsets pointing at the
    gzip members of the matching records, which hold one line each); and that the Whoosh
    index opens through the restricted unpickler and every pickle in it decodes
    (`index.verify_index`).

    What an empty list proves: the folder is intact against its own manifest, and no file in
    it can make a reader run code or fail with anything but a one-line error. It does not
    prove where the artifact came from: anyone can write a consistent manifest, so this is
    integrity and safety, not authenticity."""
    try:
        manifest = read_manifest(folder)
    except MalformedManifest as exc:
        return [exc.problem]
    contents, problems = _check_files(folder, manifest)
    if problems:
        return problems
    problems = _check_records(folder, contents)
    if problems:
        return problems
    # Imported here, not above: opening an artifact must not import Whoosh (start-up time of
    # every reader command); only a full validation reads the index.
    from knowl_build.index.verify import verify_index

    return [f"index: {p}" for p in verify_index(folder / "index")]


def _check_files(folder: Path, manifest: Manifest) -> tuple[dict[str, bytes], list[str]]:
    """The folder holds exactly the listed files, with their sizes and checksums; returns the
    bytes of the JSON files (hashed and parsed from the same read)."""
    files = manifest.files
    sizes = manifest.sizes or {}
    problems = [
        f"{shown_name(n)}: not a file name inside the artifact" for n in files if not safe_name(n)
    ]
    if problems:
        return {}, problems
    for name in (*JSON_FILES, *INDEX_JSON):
        if name not in files:
            problems.append(f"{name}: missing from the manifest")
    if not any(re.fullmatch(r"index/_MAIN_[0-9]+\.toc", n) for n in files):
        problems.append("index: no table of contents in the manifest")
    try:
        found, odd = listing(folder)
    except OSError as exc:
        return {}, [f"cannot list the folder ({exc.strerror})"]
    problems += [f"{shown_name(n)}: not a regular file" for n in sorted(odd)]
    extra = set(found) - set(files) - {MANIFEST, BUILD_MARKER}
    problems += [f"{shown_name(n)}: not listed in the manifest" for n in sorted(extra)]
    contents: dict[str, bytes] = {}
    for name, expected in sorted(files.items()):
        if name not in found:
            problems.append(f"{name}: missing")
        elif name in sizes and found[name].st_size != sizes[name]:
            problems.append(f"{name}: size differs from the manifest")
        elif name in JSON_FILES or name.endswith(".json"):
            data = (folder / name).read_bytes()
            if hashlib.sha256(data).hexdigest() != expected:
                problems.append(f"{name}: checksum mismatch")
            contents[name] = data
        elif sha256_file(folder / name) != expected:
            problems.append(f"{name}: checksum mismatch")
    return contents, problems


def _check_records(folder: Path, contents: dict[str, bytes]) -> list[str]:
    """Every JSON file against its record type; the catalog against the records; the vectors
    against their meta. One problem per file (the first): the rest of a broken file says
    little."""
    problems = []
    decoded: dict[str, Any] = {}
    for name, kind in FILES.items():
        if name in contents and name != MANIFEST:
            try:
                decoded[name] = decode(name, contents[name], kind)
            except ArtifactError as exc:
                problems.append(str(exc))
    if "catalog.json" in decoded:
        catalog: Catalog = decoded["catalog.json"]
        try:
            found = _check_pages(contents[RECORDS], [entry.offset for entry in catalog.pages])
        except ArtifactError as exc:
            return [*problems, str(exc)]
        problems += _check_catalog(catalog, found)
        if CATALOG_HEADS in decoded:
            problems += _check_heads(contents["catalog.json"], catalog, decoded[CATALOG_HEADS])
    if "vectors/meta.json" in decoded:
        problems += _check_vectors(folder, decoded["vectors/meta.json"])
    return problems


def _check_pages(data: bytes, offsets: list[int]) -> dict[int, tuple[str, str, str]]:
    """Each record against the record type, the file split into members at the catalog's
    offsets as a reader splits it (every byte in a member, one line in each): offset ->
    (path, id, scope)."""
    found: dict[int, tuple[str, str, str]] = {}
    read = decoder(PageRecord)
    for offset, line in members(data, offsets):
        try:
            record = read.decode(line)
        except msgspec.DecodeError as exc:
            raise ArtifactError(f"{RECORDS}: the record at byte {offset}: {problem(exc)}") from None
        except RecursionError:
            raise ArtifactError(
                f"{RECORDS}: the record at byte {offset}: nested too deeply"
            ) from None
        found[offset] = (record.path, record.id, record.scope)
    return found


def _check_catalog(catalog: Catalog, found: dict[int, tuple[str, str, str]]) -> list[str]:
    """Each entry points at its own record (so every member has one entry: the members are
    cut at the entries' offsets)."""
    keys: set[str] = set()
    offsets: set[int] = set()
    for i, entry in enumerate(catalog.pages):
        if found.get(entry.offset) != (entry.key, entry.id, entry.scope):
            return [f"catalog.json: 'pages[{i}]' does not point at its record in {RECORDS}"]
        if entry.key in keys or entry.offset in offsets:
            return [f"catalog.json: 'pages[{i}]' lists a page twice"]
        keys.add(entry.key)
        offsets.add(entry.offset)
    if not isinstance(catalog.caveats, UnsetType) and catalog.caveats != catalog_caveats(
        catalog.pages
    ):
        return ["catalog.json: 'caveats' does not list the catalog's caveats"]
    return []


def _check_heads(data: bytes, catalog: Catalog, heads: CatalogHeads) -> list[str]:
    """catalog-heads.json tells what catalog.json holds: every entry's key, id, scope, status
    and usage mode, in order, each span holding exactly that entry's bytes, the same caveats
    and the same bindings."""
    pages = catalog.pages
    columns = (heads.keys, heads.ids, heads.scopes, heads.statuses, heads.usage_modes)
    if any(len(column) != len(pages) for column in (*columns, heads.starts, heads.ends)):
        return [f"{CATALOG_HEADS}: does not list each entry of catalog.json once"]
    read = decoder(CatalogEntry)
    view = memoryview(data)
    end = 0
    for i, page in enumerate(pages):
        if tuple(column[i] for column in columns) != (
            page.key,
            page.id,
            page.scope,
            page.status,
            page.usage_mode,
        ):
            return [f"{CATALOG_HEADS}: entry {i} is not catalog.json's"]
        start, stop = heads.starts[i], heads.ends[i]
        if not end <= start < stop <= len(data):
            return [f"{CATALOG_HEADS}: the span of entry {i} is out of order or out of the file"]
        try:
            found = read.decode(view[start:stop])
        except (msgspec.DecodeError, RecursionError):
            return [f"{CATALOG_HEADS}: the span of entry {i} holds no catalog entry"]
        if found != page:
            return [f"{CATALOG_HEADS}: the span of entry {i} holds another entry"]
        end = stop
    if heads.caveats != catalog_caveats(pages):
        return [f"{CATALOG_HEADS}: 'caveats' does not list the catalog's caveats"]
    if heads.binding != catalog_binding(pages):
        return [f"{CATALOG_HEADS}: 'binding' does not list the entries binding each entity"]
    return []


def _check_vectors(folder: Path, meta: VectorsMeta) -> list[str]:
    if len(meta.digests) != len(meta.keys):
        return ["vectors/meta.json: keys and digests differ in number"]
    try:
        size = (folder / "vectors" / "vectors.f32").stat().st_size
    except OSError:
        return ["vectors/vectors.f32: missing"]
    if size != 4 * meta.dim * len(meta.keys):
        return ["vectors/vectors.f32: size does not match vectors/meta.json"]
    return []
