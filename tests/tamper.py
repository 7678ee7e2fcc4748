"""Helpers for the trust tests: real artifacts, changed as an attacker would, and every reader
front end run against them (CLI in-process, the MCP server over stdio)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import pickletools
import shutil
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner, Result

from knowl_build.artifacts import catalog, schema
from knowl_build.artifacts.layout import BUILD_MARKER, CATALOG_HEADS, MANIFEST, RECORDS, file_table
from knowl_build.artifacts.records import pack
from knowl_build.cli import cli
from knowl_build.core.errors import ArtifactError
from tests.helpers import Project, dump_json, invoke
from tests.test_reader import CORPUS

# Pages the commands ask for: one that exists for everyone.
PAGE = "revenue"


def build_corpus(root: Path) -> Path:
    """A real project (git, pages in two scopes, caveats, entities) built twice: the second,
    incremental build leaves two index segments, one with a deleted document. Returns the
    current artifact folder."""
    proj = Project(root).write(CORPUS)
    proj.commit("corpus")
    invoke(["build", "--repo", str(root)])
    proj.write(
        {"knowledge/global/glossary.md": "---\nsummary: Terms used in finance\n---\nRevenue.\n"}
    )
    proj.commit("glossary")
    invoke(["build", "--repo", str(root)])
    out = root / ".knowl" / "build"
    return out / (out / "CURRENT").read_text().strip()


def module_corpus(factory: pytest.TempPathFactory, name: str) -> Path:
    """`build_corpus` for a module's tests: in a folder of its own, with its own user cache,
    a fixed date and no vectors, whatever the test that first asks for it sets."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(factory.mktemp("cache")))
        patch.setenv("SOURCE_DATE_EPOCH", "1780000000")
        patch.setenv("KNOWL_EMBEDDINGS", "off")
        return build_corpus(factory.mktemp(name) / "kb")


def rehash(folder: Path) -> None:
    """Make the manifest agree with the files again, as an attacker who changed them would."""
    manifest = json.loads((folder / MANIFEST).read_bytes())
    manifest["files"] = file_table(folder)
    manifest["sizes"] = {
        name: (folder / name).stat().st_size
        for name in manifest["files"]
        if name.startswith("index/")
    }
    (folder / MANIFEST).write_bytes(dump_json(manifest))


def rewrite_records(folder: Path, lines: list[bytes]) -> None:
    """Write `lines` as the artifact's records, one gzip member each, and point the catalog at
    them (each page at the first line with its path), as an attacker who changed them would."""
    starts: dict[str, int] = {}
    members = []
    offset = 0
    for line in lines:
        members.append(pack(line.rstrip(b"\n") + b"\n"))
        with contextlib.suppress(ValueError, KeyError, TypeError, RecursionError):
            starts.setdefault(json.loads(line)["path"], offset)
        offset += len(members[-1])
    (folder / RECORDS).write_bytes(b"".join(members))
    catalog = json.loads((folder / "catalog.json").read_bytes())
    for entry in catalog["pages"]:
        entry["offset"] = starts.get(entry["key"], entry["offset"])
    (folder / "catalog.json").write_bytes(dump_json(catalog))
    if (folder / CATALOG_HEADS).exists():
        heads_agree(folder)


def tampered(source: Path, target: Path, change: Callable[[Path], None]) -> Path:
    """A copy of the artifact `source` at `target`, changed by `change(copy)`, manifest redone
    (and catalog-heads.json, when `change` rewrote catalog.json but not it)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(BUILD_MARKER))
    catalog, heads = target / "catalog.json", target / CATALOG_HEADS
    before = (catalog.read_bytes(), heads.read_bytes() if heads.exists() else None)
    change(target)
    after = (
        catalog.read_bytes() if catalog.exists() else None,
        heads.read_bytes() if heads.exists() else None,
    )
    if before[1] is not None and after[1] == before[1] and after[0] not in (None, before[0]):
        heads_agree(target)
    rehash(target)
    return target


class _Raws(msgspec.Struct):
    pages: list[msgspec.Raw]


def heads_agree(folder: Path) -> None:
    """Make catalog-heads.json agree with catalog.json again, however it is laid out, as an
    attacker who changed the catalog would (left alone when the catalog does not decode)."""
    data = (folder / "catalog.json").read_bytes()
    try:
        decoded = schema.decode("catalog.json", data, schema.Catalog)
        raws = msgspec.json.decode(data, type=_Raws).pages
    except (ArtifactError, msgspec.DecodeError):
        return
    starts, ends, end = [], [], 0
    for raw in raws:
        start = data.index(bytes(raw), end)
        end = start + len(bytes(raw))
        starts.append(start)
        ends.append(end)
    pages, caveats = decoded.pages, decoded.caveats
    if isinstance(caveats, msgspec.UnsetType):
        caveats = catalog.catalog_caveats(pages)
    heads = catalog.catalog_heads(pages, starts, ends, caveats)
    (folder / CATALOG_HEADS).write_bytes(schema.encode(heads))


def reader_runs(folder: Path) -> dict[str, Result]:
    """Every reader command of the CLI against the artifact folder, whatever their exit code."""
    runs = {}
    commands = {
        "search": ["search", "revenue orders", "--json"],
        "show": ["show", PAGE, "--json"],
        "traverse": ["traverse", PAGE, "--json"],
        "graph": ["graph"],
        "graphml": ["graph", "--format", "graphml"],
        "dot": ["graph", "--format", "dot"],
        "verify": ["verify"],
    }
    for name, args in commands.items():
        runs[name] = run_cli([*args, "--artifact", str(folder)])
    return runs


def run_cli(args: list[str]) -> Result:
    """The CLI in-process, whatever its exit code (the caller checks it)."""
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def assert_refused(result: Result, name: str, *, one_line: bool = True) -> None:
    """Exit 2 with `knowl: error:` and no traceback or internal error."""
    assert result.exit_code == 2, (name, result.exit_code, result.output)
    assert "Traceback" not in result.output, (name, result.output)
    assert "internal error" not in result.output, (name, result.output)
    assert "knowl: error:" in result.stderr, (name, result.stderr)
    if one_line:
        assert result.stderr.count("\n") == 1, (name, result.stderr)


def assert_clean(result: Result, name: str) -> None:
    """Any exit code a reader may give, never a traceback or an internal error."""
    assert result.exit_code in (0, 1, 2), (name, result.exit_code, result.output)
    assert "Traceback" not in result.output, (name, result.output)
    assert "internal error" not in result.output, (name, result.output)
    if result.exit_code == 2 and name != "verify":
        assert result.stderr.count("\n") == 1, (name, result.stderr)


# --- the MCP server over stdio ----------------------------------------------------------------


def mcp_answers(folder: Path) -> dict[str, Any]:
    """Call every read tool of `knowl mcp --artifact folder`; returns name -> CallToolResult."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    keep = ("PATH", "HOME", "SOURCE_DATE_EPOCH", "KNOWL_EMBEDDINGS", "XDG_CACHE_HOME")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "knowl_build", "mcp", "--artifact", str(folder)],
        env=env,
    )

    async def session() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return {
                "search": await client.call_tool("search_knowledge", {"query": "revenue"}),
                "read": await client.call_tool("read_knowledge_page", {"page": PAGE}),
                "traverse": await client.call_tool("traverse_knowledge", {"pages": [PAGE]}),
                "stale": await client.call_tool("list_stale", {}),
            }

    return asyncio.run(session())


# --- where the pickles are ----------------------------------------------------------------------


def pickle_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every complete pickle in `data` that starts with a PROTO opcode."""
    spans = []
    for start in range(len(data) - 1):
        if data[start] != 0x80 or not 2 <= data[start + 1] <= 5:
            continue
        try:
            end = None
            for opcode, _arg, pos in pickletools.genops(io.BytesIO(data[start:])):
                if opcode.name == "STOP":
                    end = start + pos + 1  # type: ignore[operator]
                    break
        except (ValueError, EOFError, UnicodeDecodeError):
            continue
        if end is not None:
            spans.append((start, end))
    return spans


def toc_segments_offset(toc: bytes) -> int:
    """Where the pickled segment list starts in a TOC file (after the skipped schema)."""
    from whoosh.filedb.structfile import StructFile

    stream = StructFile(io.BytesIO(toc))
    for _ in range(3):
        stream.read_varint()
    stream.read_int()
    stream.read_int()
    for _ in range(3):
        stream.read_varint()
    stream.skip_string()
    stream.read_int()
    stream.read_int()
    return int(stream.tell())


def peak(action: Callable[[], Any]) -> int:
    """The most memory `action` had allocated at once (bytes), whatever it raised."""
    tracemalloc.start()
    try:
        action()
    except Exception:  # the caller checks what it raised; here only the memory counts
        pass
    finally:
        _size, most = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return most
