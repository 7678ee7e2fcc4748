"""The names and bytes of a build folder: file names, markers, hashes, the JSON encoding."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

FORMAT = "knowl-build"
# 1.1: catalog.json lists the caveats by entity; 1.2: the index holds no positions;
# 2.0: the records are pages.jsonl.gz, one gzip member per record (`artifacts.records`)
# 2.1: a Markdown link's record has its form, end and text; 2.2: headings and names in the
# index; 2.3: catalog-heads.json
SCHEMA_VERSION = "2.3"
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
LOCK = ".knowl-lock"
WRITE_LOCK = ".knowl-write-lock"  # while a governed write runs (not the build lock)
LOCK_OWNER = "knowl-build"  # a lock file holds `knowl-build <pid> <host>`, nothing else
BUILD_SEAL = "build-manifest"
STAGING_PREFIX = ".tmp-"
OUT_MARKER = ".knowl-out"
BUILD_MARKER = ".knowl-build"
RECORDS = "pages.jsonl.gz"
JSON_FILES = (RECORDS, "entities.json", "graph.json", "diagnostics.json", "catalog.json")
INDEX_JSON = ("index/stats.json", "index/docs.json")
# Since 2.3: what a search needs of every catalog entry (a reader of an artifact without it
# decodes catalog.json whole).
CATALOG_HEADS = "catalog-heads.json"
# A build folder's name (CURRENT holds one): a build id, maybe with a `.<n>` suffix.
BUILD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TOKEN = re.compile(r"[0-9a-f]{32}")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_table(folder: Path, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every file of a build folder except the manifest and the marker, with its sha256;
    `known` gives the sha256 of files whose bytes the caller has just hashed or copied from
    a validated build (they are not read again)."""
    known = known or {}
    table = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name not in (MANIFEST, BUILD_MARKER):
            name = path.relative_to(folder).as_posix()
            table[name] = known.get(name) or sha256_file(path)
    return table
