"""Trust 10: a corrupt artifact is exit 2 with a message, whatever is in it (issue 10).

A hypothesis property test mutates each JSON file of a real artifact (drop a key, change a
type, a huge or odd value, truncation, random bytes), redoes the manifest as an attacker
would (catalog offsets included), and runs every reader command: never a traceback or an
internal error; when the mutation breaks the shape SPEC 6.1 gives the file, exit 2 with one
line. Then a corrupt CURRENT, and the validation memo (validate once per state of a folder).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.artifacts import layout, opening, publication, validate
from knowl_build.artifacts.layout import RECORDS
from knowl_build.core.errors import ArtifactError
from tests.helpers import Project, dump_json, invoke, record_lines
from tests.tamper import (
    assert_clean,
    assert_refused,
    module_corpus,
    reader_runs,
    rewrite_records,
    run_cli,
    tampered,
)
from tests.test_reader import CORPUS


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "records")


# --- the shapes SPEC 6.1 gives each file (the oracle) ----------------------------------------------
#
# A path pattern (keys, `*` for any list element) and the JSON types allowed there. Dropping
# such a key, or giving it a value of another type, breaks the file's shape.

STR, OPT_STR, INT, BOOL, NUM, DICT, LIST = "str", "str?", "int", "bool", "num", "dict", "list"
STRS = "[str]"

_CATALOG = {
    "key": STR,
    "id": STR,
    "scope": STR,
    "owner": OPT_STR,
    "title": STR,
    "summary": STR,
    "tags": STRS,
    "sl_refs": STRS,
    "usage_mode": STR,
    "category": OPT_STR,
    "status": STR,
    "superseded_by": OPT_STR,
    "visibility": STR,
    "freshness": STR,
    "drift_flag": BOOL,
    "offset": INT,
}
_FIELDS = {
    "summary": STR,
    "tags": STRS,
    "sl_refs": STRS,
    "refs": STRS,
    "usage_mode": STR,
    "category": OPT_STR,
    "status": STR,
    "superseded_by": OPT_STR,
    "freshness": STR,
    "confidence": NUM,
    "source": OPT_STR,
    "source_commit": OPT_STR,
    "affected_paths": STRS,
    "visibility": STR,
    "reasoning": OPT_STR,
    "alternatives": STRS,
    "steps": STRS,
    "provenance": STR,
    "last_validated_at": OPT_STR,
    "bound_fingerprints": DICT,
    "frozen": BOOL,
}
_RECORD = {
    "id": STR,
    "scope": STR,
    "owner": OPT_STR,
    "path": STR,
    "title": STR,
    "frontmatter": DICT,
    "fields": DICT,
    "body": STR,
    "raw_body": STR,
    "headings": LIST,
    "links": LIST,
    "freshness": DICT,
    "drift": LIST,
}
_ENTITY = {
    "name": STR,
    "kind": STR,
    "connection": STR,
    "source": STR,
    "member": OPT_STR,
    "definition": DICT,
    "file": STR,
    "line": INT,
    "fingerprint": STR,
}
SHAPES: dict[str, dict[tuple[str, ...], str]] = {
    "catalog.json": {
        ("pages",): LIST,
        ("pages", "*"): DICT,
        **{("pages", "*", k): t for k, t in _CATALOG.items()},
    },
    RECORDS: {
        **{(k,): t for k, t in _RECORD.items()},
        **{("fields", k): t for k, t in _FIELDS.items()},
        ("freshness", "value"): STR,
        ("freshness", "reasons"): LIST,
        ("links", "*"): DICT,
        ("links", "*", "target"): STR,
        ("links", "*", "line"): INT,
        ("headings", "*", "text"): STR,
    },
    "entities.json": {
        ("entities",): LIST,
        ("entities", "*"): DICT,
        **{("entities", "*", k): t for k, t in _ENTITY.items()},
    },
    "graph.json": {
        ("nodes",): LIST,
        ("edges",): LIST,
        ("nodes", "*"): DICT,
        ("nodes", "*", "id"): STR,
        ("nodes", "*", "type"): STR,
        ("edges", "*"): DICT,
        ("edges", "*", "source"): STR,
        ("edges", "*", "target"): STR,
        ("edges", "*", "kind"): STR,
        ("edges", "*", "kinds"): STRS,
    },
    "diagnostics.json": {
        ("diagnostics",): LIST,
        ("diagnostics", "*"): DICT,
        **{("diagnostics", "*", k): STR for k in ("code", "severity", "path", "message")},
        ("diagnostics", "*", "line"): INT,
        ("summary",): DICT,
    },
    "signatures.json": {("graph",): STR, ("pages",): DICT},
    "index/stats.json": {
        ("doc_count",): INT,
        ("length_sums",): DICT,
        **{("length_sums", k): INT for k in ("title", "summary", "tags", "body")},
    },
    "index/docs.json": {("*",): STR},
}
FILES = sorted(SHAPES)


def _fits(value: Any, kind: str) -> bool:
    if kind == STRS:
        return type(value) is list and all(type(x) is str for x in value)
    allowed = {
        STR: (str,),
        OPT_STR: (str, type(None)),
        INT: (int,),
        BOOL: (bool,),
        NUM: (int, float),
        DICT: (dict,),
        LIST: (list,),
    }[kind]
    if type(value) is float and not math.isfinite(value):
        return False
    return type(value) in allowed


def _general(file: str, path: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple("*" if isinstance(p, int) or file == "index/docs.json" else p for p in path)


def _pattern(file: str, path: tuple[Any, ...]) -> str | None:
    """The kind the shape requires at `path`, if it requires one."""
    shape = SHAPES[file]
    general = _general(file, path)
    if general in shape:
        return shape[general]
    parent = shape.get(general[:-1])
    return STR if parent == STRS and general[-1] == "*" else None


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> Iterator[tuple[Any, ...]]:
    if depth > 6:
        return
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        yield (*prefix, key)
        yield from _paths(child, (*prefix, key), depth + 1)


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    2**70,
    -(2**70),
    "",
    "x",
    "\x00\n\u2028 ../../etc",
    "a" * 200_000,
    [],
    [1, None],
    {},
    {"a": [1]},
    float("nan"),
    float("inf"),
]


def _mutations() -> st.SearchStrategy[tuple[str, Any]]:
    return st.one_of(
        st.tuples(st.just("drop"), st.integers(0, 10**6)),
        st.tuples(st.just("set"), st.integers(0, 10**6), st.sampled_from(range(len(ODD_VALUES)))),
        st.tuples(st.just("deep"), st.integers(0, 10**6)),
        st.tuples(st.just("truncate"), st.floats(0, 1, exclude_max=True)),
        st.tuples(st.just("bytes"), st.binary(max_size=64), st.floats(0, 1)),
    )


def mutate(folder: Path, file: str, mutation: tuple[Any, ...], line_pick: int) -> bool:
    """Apply the mutation; True when it breaks the shape the file must have."""
    path = folder / file
    data = path.read_bytes()
    kind = mutation[0]
    if kind == "truncate":
        cut = int(mutation[1] * len(data))
        path.write_bytes(data[:cut])
        return file == RECORDS or not _parses(data[:cut])
    if kind == "bytes":
        at = int(mutation[2] * len(data))
        changed = data[:at] + mutation[1] + data[at + len(mutation[1]) :]
        path.write_bytes(changed)
        return changed != data and file != RECORDS and not _parses(changed)
    lines = record_lines(folder) if file == RECORDS else [data]
    which = line_pick % len(lines)
    doc = json.loads(lines[which])
    paths = list(_paths(doc))
    if not paths:
        return False
    target = paths[mutation[1] % len(paths)]
    parent, key = _get(doc, target[:-1]), target[-1]
    required = _pattern(file, target)
    if kind == "drop":  # a required key of an object (not an entry of a list or a map)
        del parent[key]
        breaks = required is not None and _general(file, target)[-1] != "*"
    else:
        value: Any = ODD_VALUES[mutation[2]] if kind == "set" else DEEP
        parent[key] = value
        breaks = kind == "deep" or (required is not None and not _fits(value, required))
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False)
    lines[which] = text.replace(
        json.dumps(DEEP, ensure_ascii=False), "[" * 20_000 + "]" * 20_000
    ).encode()
    if file == RECORDS:
        rewrite_records(folder, lines)
    else:
        path.write_bytes(lines[0])
    return breaks


# Stands for 20,000 nested lists (more than any JSON parser recurses into); spliced as text.
DEEP = "\u2603 deep nesting \u2603"


def _parses(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


# --- the property ---------------------------------------------------------------------------------


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(file=st.sampled_from(FILES), mutation=_mutations(), line=st.integers(0, 100))
def test_a_mutated_json_file_is_exit_2_or_an_answer_never_a_crash(
    artifact: Path,
    tmp_path_factory: pytest.TempPathFactory,
    file: str,
    mutation: tuple[Any, ...],
    line: int,
) -> None:
    breaks: list[bool] = []
    folder = tampered(
        artifact,
        tmp_path_factory.mktemp("mutated") / "artifact",
        lambda f: breaks.append(mutate(f, file, mutation, line)),
    )
    runs = reader_runs(folder)
    for name, result in runs.items():
        assert_clean(result, name)
        if breaks[0]:
            assert_refused(result, name, one_line=name != "verify")


@pytest.mark.parametrize("file", FILES)
def test_dropping_each_required_key_is_refused(artifact: Path, tmp_path: Path, file: str) -> None:
    """Deterministic companion of the property: the first required key of each file."""

    def drop(folder: Path) -> None:
        path = folder / file
        lines = record_lines(folder) if file == RECORDS else [path.read_bytes()]
        doc = json.loads(lines[0])
        target = next(p for p in _paths(doc) if _pattern(file, p) is not None)
        if _general(file, target)[-1] == "*":  # a map: give an entry another type instead
            _get(doc, target[:-1])[target[-1]] = 7
        else:
            del _get(doc, target[:-1])[target[-1]]
        lines[0] = json.dumps(doc).encode()
        if file == RECORDS:
            rewrite_records(folder, lines)
        else:
            path.write_bytes(lines[0])

    folder = tampered(artifact, tmp_path / "artifact", drop)
    for name, result in reader_runs(folder).items():
        assert_refused(result, name, one_line=name != "verify")


def test_the_catalog_must_point_at_its_own_line(artifact: Path, tmp_path: Path) -> None:
    def swap(folder: Path) -> None:
        catalog = json.loads((folder / "catalog.json").read_bytes())
        pages = catalog["pages"]
        pages[0]["offset"], pages[1]["offset"] = pages[1]["offset"], pages[0]["offset"]
        (folder / "catalog.json").write_bytes(dump_json(catalog))

    folder = tampered(artifact, tmp_path / "artifact", swap)
    result = run_cli(["search", "revenue", "--artifact", str(folder)])
    assert_refused(result, "search")
    assert "does not point at its record in pages.jsonl.gz" in result.stderr


def test_the_caveats_must_be_the_catalogs_own(artifact: Path, tmp_path: Path) -> None:
    """catalog.json lists the caveats by entity (1.1) so that a reader need not decode every
    entry: a list that disagrees with the entries is refused like any other damage."""
    catalog = json.loads((artifact / "catalog.json").read_bytes())
    assert catalog["caveats"]  # the corpus has caveats

    def forge(folder: Path) -> None:
        found = json.loads((folder / "catalog.json").read_bytes())
        found["caveats"] = {"shop_pg.orders.total_revenue": [0]}
        (folder / "catalog.json").write_bytes(dump_json(found))

    folder = tampered(artifact, tmp_path / "artifact", forge)
    result = run_cli(["search", "revenue", "--artifact", str(folder)])
    assert_refused(result, "search")
    assert "does not list the catalog's caveats" in result.stderr


def test_an_unlisted_or_linked_file_is_refused(artifact: Path, tmp_path: Path) -> None:
    """A file the manifest does not list (a newer TOC generation whoosh would prefer), or a
    symlink, is refused even when every listed checksum matches."""
    extra = tmp_path / "extra"
    shutil.copytree(artifact, extra)
    toc = next((extra / "index").glob("_MAIN_*.toc"))
    shutil.copyfile(toc, extra / "index" / "_MAIN_99.toc")
    result = run_cli(["show", "revenue", "--artifact", str(extra)])
    assert_refused(result, "show")
    assert "not listed in the manifest" in result.stderr
    linked = tmp_path / "linked"
    shutil.copytree(artifact, linked)
    (linked / "graph.json").unlink()
    (linked / "graph.json").symlink_to(artifact / "graph.json")
    assert_refused(run_cli(["show", "revenue", "--artifact", str(linked)]), "show")


# --- a corrupt CURRENT --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\x00garbage\n",
        b"not a name at all\n",
        b"../outside\n",
        b"a/b\n",
        b"..\n",
        b"",
        b".tmp-abc\n",
        b"x" * 5000,
        b"missing-build\n",
    ],
)
def test_a_corrupt_current_is_exit_2_and_the_next_build_replaces_it(
    tmp_path: Path, content: bytes
) -> None:
    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    current = proj.root / ".knowl" / "build" / "CURRENT"
    current.write_bytes(content)
    for args in (
        ["search", "revenue"],
        ["show", "revenue"],
        ["traverse", "revenue"],
        ["graph"],
        ["verify"],
    ):
        result = run_cli([*args, "--repo", str(proj.root)])
        assert_refused(result, args[0])
        assert "CURRENT" in result.stderr or "no published build" in result.stderr
    invoke(["build", "--repo", str(proj.root), "--full"])
    assert layout.BUILD_NAME.fullmatch(current.read_text().strip())
    assert json.loads(invoke(["search", "revenue", "--repo", str(proj.root), "--json"]).stdout)[
        "hits"
    ]


@pytest.mark.parametrize("kind", ["fifo", "endless", "folder"])
def test_a_current_that_is_not_a_file_is_exit_2_never_a_hang(tmp_path: Path, kind: str) -> None:
    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    current = proj.root / ".knowl" / "build" / "CURRENT"
    current.unlink()
    if kind == "fifo":
        os.mkfifo(current)
    elif kind == "endless":
        current.symlink_to("/dev/zero")
    else:
        current.mkdir()
    result = run_cli(["search", "revenue", "--repo", str(proj.root)])
    assert_refused(result, "search")
    assert "CURRENT" in result.stderr
    proj.write({"knowledge/global/glossary.md": "---\nsummary: Terms\n---\nMore.\n"})
    build = run_cli(["build", "--repo", str(proj.root)])
    if kind == "folder":  # not knowl's to remove: said so, nothing deleted
        assert_refused(build, "build")
        assert current.is_dir()
    else:
        assert build.exit_code == 0, build.output
        assert publication.current_folder(current.parent) is not None


def test_a_corrupt_current_in_a_folder_given_to_the_reader(tmp_path: Path) -> None:
    from knowl_build.reader import Reader

    out = tmp_path / "out"
    out.mkdir()
    (out / "CURRENT").write_bytes(b"\xc3\x28\n")
    with pytest.raises(ArtifactError, match="CURRENT: corrupt"):
        Reader.open(out)
    assert publication.current_folder(out) is None  # the build side: "no current build"


# --- validate once per state of a folder ----------------------------------------------------------


def _count_validations(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = validate.validate

    def counting(folder: Path) -> list[str]:
        calls.append(folder)
        return real(folder)

    monkeypatch.setattr(opening, "validate", counting)
    return calls


def test_a_build_records_its_folder_and_a_change_is_validated_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowl_build.reader import Reader

    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    calls = _count_validations(monkeypatch)
    for _ in range(3):
        with Reader.open(proj.root) as reader:
            assert reader.search("revenue")["hits"]
    assert calls == []  # the build wrote the folder: never validated again on open
    assert list((tmp_path / "cache" / "knowl-build" / "validated").glob("*.json"))
    folder = (
        proj.root / ".knowl" / "build" / (proj.root / ".knowl/build/CURRENT").read_text().strip()
    )
    time.sleep(0.01)
    os.utime(folder / "entities.json")  # same bytes, new mtime: validated again
    with Reader.open(proj.root):
        pass
    with Reader.open(proj.root):
        pass
    assert len(calls) == 1
    entities = folder / "entities.json"
    entities.write_bytes(entities.read_bytes().replace(b'"kind":', b'"kinx":', 1))
    manifest = json.loads((folder / "manifest.json").read_bytes())
    manifest["files"]["entities.json"] = layout.sha256_file(entities)
    (folder / "manifest.json").write_bytes(dump_json(manifest))
    result = run_cli(["traverse", "revenue", "--repo", str(proj.root)])
    assert_refused(result, "traverse")
    assert "entities.json" in result.stderr


def test_a_file_written_in_place_with_its_mtime_set_back_is_validated_again(
    artifact: Path, tmp_path: Path
) -> None:
    """What `unzip -o` of another archive over a validated folder does: the same inode and
    size, the archive's modification time; only the change time tells."""
    folder = tampered(artifact, tmp_path / "copy", lambda f: None)
    assert run_cli(["search", "revenue", "--artifact", str(folder)]).exit_code == 0  # memo
    records = folder / RECORDS
    before = records.stat()
    data = bytearray(records.read_bytes())
    data[-9] ^= 1  # the last member's checksum
    time.sleep(0.01)
    with records.open("r+b") as handle:
        handle.write(data)
    os.utime(records, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = records.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    result = run_cli(["search", "revenue", "--artifact", str(folder)])
    assert_refused(result, "search")
    assert f"{RECORDS}: checksum mismatch" in result.stderr


def test_without_a_writable_cache_every_open_validates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowl_build.reader import Reader

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    calls = _count_validations(monkeypatch)
    for _ in range(2):
        with Reader.open(proj.root) as reader:
            assert reader.show("revenue")["page_id"] == "revenue"
    assert len(calls) == 2
