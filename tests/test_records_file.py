"""The page records (`pages.jsonl.gz`, issue 16): one gzip member per record, so that the
file is the JSON Lines of SPEC 6.1 to any gzip reader, a reader decompresses one record, and
an incremental build copies the members of unchanged pages. A member from elsewhere is
untrusted: a compression bomb, a member holding two lines or two members, stray bytes, a
broken checksum are each refused with one line, never decompressed whole."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.artifacts import records as members
from knowl_build.artifacts.layout import RECORDS
from knowl_build.core.errors import ArtifactError
from tests.helpers import Project, current_build, invoke, record_lines, records
from tests.tamper import assert_refused, rehash, rewrite_records, run_cli, tampered
from tests.test_reader import CORPUS

SPEC_KEYS = {
    "id",
    "scope",
    "owner",
    "path",
    "title",
    "frontmatter",
    "body",
    "raw_body",
    "headings",
    "links",
    "freshness",
    "drift",
    "last_commit",
}


@pytest.fixture
def built(tmp_path: Path) -> Project:
    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit("corpus")
    invoke(["build", "--repo", str(proj.root)])
    return proj


def _catalog(folder: Path) -> list[dict[str, object]]:
    pages: list[dict[str, object]] = json.loads((folder / "catalog.json").read_bytes())["pages"]
    return pages


def _members(folder: Path) -> dict[str, bytes]:
    """Each page's gzip member, by path, cut at the catalog's offsets."""
    data = (folder / RECORDS).read_bytes()
    entries = {int(str(entry["offset"])): str(entry["key"]) for entry in _catalog(folder)}
    ends = members.spans(entries, len(data))
    return {key: data[start : ends[start]] for start, key in entries.items()}


def test_the_records_are_json_lines_to_any_gzip_reader(built: Project) -> None:
    folder = current_build(built.root)
    pages = records(folder)
    assert [(p["scope"], p["id"]) for p in pages] == sorted((p["scope"], p["id"]) for p in pages)
    assert all(set(p) >= SPEC_KEYS for p in pages)
    revenue = next(p for p in pages if p["id"] == "revenue")
    assert "<< sl:" not in revenue["body"] and revenue["raw_body"]
    zcat = shutil.which("zcat")
    if zcat is not None:  # the command-line tool reads the members as one stream
        shown = subprocess.run([zcat, str(folder / RECORDS)], capture_output=True, check=True)
        assert shown.stdout.splitlines(keepends=True) == record_lines(folder)


def test_each_catalog_offset_starts_the_member_of_that_page_alone(built: Project) -> None:
    folder = current_build(built.root)
    found = _members(folder)
    assert len(found) == len(records(folder))
    for path, member in found.items():
        (line,) = gzip.decompress(member).splitlines()
        assert json.loads(line)["path"] == path
    assert (
        b"".join(found[str(e["key"])] for e in _catalog(folder)) == (folder / RECORDS).read_bytes()
    )


def test_an_edit_copies_the_other_members_byte_for_byte(built: Project) -> None:
    before = _members(current_build(built.root))
    built.write({"knowledge/global/glossary.md": "---\nsummary: Terms\n---\nRevenue, edited.\n"})
    built.commit("edit")
    invoke(["build", "--repo", str(built.root)])
    folder = current_build(built.root)
    after = _members(folder)
    changed = {path for path in after if before.get(path) != after[path]}
    assert changed == {"knowledge/global/glossary.md"}
    manifest = json.loads((folder / "manifest.json").read_bytes())
    assert manifest["records"] == {"reused": len(after) - 1, "built": 1}


# --- hostile records ----------------------------------------------------------------------------


def _bomb(size: int) -> bytes:
    """A gzip member of `size` spaces: about a thousandth of its size."""
    packer = zlib.compressobj(9, zlib.DEFLATED, members.GZIP)
    block = b" " * (1 << 20)
    return b"".join(packer.compress(block) for _ in range(size >> 20)) + packer.flush()


def _replace_first(folder: Path, member: bytes) -> None:
    """Put `member` where the first page's member was, the catalog and manifest made to agree
    (an attacker controls every file of a downloaded artifact)."""
    catalog = json.loads((folder / "catalog.json").read_bytes())
    entries = sorted(catalog["pages"], key=lambda e: e["offset"])
    data = (folder / RECORDS).read_bytes()
    old_end = entries[1]["offset"]
    shift = len(member) - old_end
    for entry in entries[1:]:
        entry["offset"] += shift
    (folder / RECORDS).write_bytes(member + data[old_end:])
    (folder / "catalog.json").write_bytes(json.dumps(catalog).encode())


def _first_line(folder: Path) -> bytes:
    return record_lines(folder)[0]


HOSTILE: dict[str, tuple[Callable[[Path], bytes], str]] = {
    "a compression bomb": (lambda f: _bomb(256 << 20), "expands past its budget"),
    "two lines in one member": (
        lambda f: members.pack(_first_line(f) + _first_line(f)),
        "does not hold exactly one line",
    ),
    "two members in one span": (
        lambda f: members.pack(_first_line(f)) + members.pack(_first_line(f)),
        "not one complete gzip member",
    ),
    "a line without its end": (
        lambda f: members.pack(_first_line(f).rstrip(b"\n")),
        "does not hold exactly one line",
    ),
    "not gzip at all": (lambda f: _first_line(f), "not a valid gzip member"),
    "a broken checksum": (
        lambda f: (lambda m: m[:-8] + bytes([m[-8] ^ 1]) + m[-7:])(members.pack(_first_line(f))),
        "not a valid gzip member",
    ),
    "a cut member": (lambda f: members.pack(_first_line(f))[:-4], "not one complete gzip member"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_members_are_refused_with_one_line(
    built: Project, tmp_path: Path, case: str
) -> None:
    make, reason = HOSTILE[case]
    folder = tampered(
        current_build(built.root), tmp_path / "artifact", lambda f: _replace_first(f, make(f))
    )
    for command in (["search", "revenue"], ["show", "revenue"]):
        result = run_cli([*command, "--artifact", str(folder)])
        assert_refused(result, command[0])
        assert reason in result.stderr, result.stderr
    verified = run_cli(["verify", "--artifact", str(folder)])
    assert verified.exit_code == 2 and reason in verified.output


def test_members_each_within_budget_do_not_add_up_past_the_files(
    built: Project, tmp_path: Path
) -> None:
    """Every record padded with 8 MiB of one letter: each member is within its own budget,
    all of them together are not, and the file is read whole by validation and the site."""

    def pad(folder: Path) -> None:
        padded = []
        for line in record_lines(folder):
            record = json.loads(line)
            record["body"] += "a" * (8 << 20)
            padded.append(json.dumps(record).encode())
        rewrite_records(folder, padded)

    folder = tampered(current_build(built.root), tmp_path / "artifact", pad)
    data = (folder / RECORDS).read_bytes()
    sizes = [len(line) for line in gzip.decompress(data).splitlines()]
    assert max(sizes) < members.SLACK and sum(sizes) > members.budget(len(data))
    for command in (["search", "revenue"], ["site", "--out", str(tmp_path / "site")]):
        result = run_cli([*command, "--artifact", str(folder)])
        assert_refused(result, command[0])
        assert "expands past its budget" in result.stderr
    assert not (tmp_path / "site").exists()


def test_bytes_before_the_first_member_are_refused(built: Project, tmp_path: Path) -> None:
    def prefix(folder: Path) -> None:
        data = (folder / RECORDS).read_bytes()
        (folder / RECORDS).write_bytes(b"#!" + data)
        catalog = json.loads((folder / "catalog.json").read_bytes())
        for entry in catalog["pages"]:
            entry["offset"] += 2
        (folder / "catalog.json").write_bytes(json.dumps(catalog).encode())

    folder = tampered(current_build(built.root), tmp_path / "artifact", prefix)
    result = run_cli(["search", "revenue", "--artifact", str(folder)])
    assert_refused(result, "search")
    assert "no record starts at the file's first byte" in result.stderr


def _shift(pages: list[dict[str, int]]) -> None:
    pages[-1]["offset"] = 10**9  # past the end


def _middle(pages: list[dict[str, int]]) -> None:
    pages[1]["offset"] += 3  # inside a member


def _twice(pages: list[dict[str, int]]) -> None:
    pages[1]["offset"] = pages[0]["offset"]  # two pages, one member


def _dropped(pages: list[dict[str, int]]) -> None:
    del pages[1]  # a member nobody lists


OFFSETS: dict[str, Callable[[list[dict[str, int]]], None]] = {
    "past the end": _shift,
    "inside a member": _middle,
    "two pages at one member": _twice,
    "a member without its page": _dropped,
}


@pytest.mark.parametrize("case", sorted(OFFSETS))
def test_forged_catalog_offsets_are_refused(built: Project, tmp_path: Path, case: str) -> None:
    def forge(folder: Path) -> None:
        catalog = json.loads((folder / "catalog.json").read_bytes())
        OFFSETS[case](catalog["pages"])
        catalog.pop("caveats", None)
        (folder / "catalog.json").write_bytes(json.dumps(catalog).encode())

    folder = tampered(current_build(built.root), tmp_path / "artifact", forge)
    for command in (["search", "revenue"], ["show", "revenue"], ["verify"]):
        result = run_cli([*command, "--artifact", str(folder)])
        assert_refused(result, command[0], one_line=command[0] != "verify")


def test_a_bomb_is_refused_before_it_fills_memory(tmp_path: Path) -> None:
    """Both ways in: a member read alone at its offset, and a member cut from the file."""
    bomb = _bomb(1 << 30)  # 1 GiB of spaces in about 1 MB
    path = tmp_path / RECORDS
    path.write_bytes(bomb)
    tracemalloc.start()
    try:
        with pytest.raises(ArtifactError, match="expands past its budget"):
            members.read_at(path, 0)
        with pytest.raises(ArtifactError, match="expands past its budget"):
            members.unpack(bomb, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < members.budget(len(bomb)) + (64 << 20), peak


def test_an_honest_record_far_larger_than_its_member_is_read(tmp_path: Path) -> None:
    """The budget leaves room for a page of repeated text (it compresses hundreds of times)."""
    line = json.dumps({"body": "ab" * (8 << 20)}).encode() + b"\n"
    member = members.pack(line)
    assert len(line) > 200 * len(member)
    path = tmp_path / RECORDS
    path.write_bytes(member)
    assert members.read_at(path, 0) == line == members.unpack(member, 0)


def test_after_a_refusal_the_file_is_still_rewritten_whole_by_a_build(
    built: Project, tmp_path: Path
) -> None:
    """A damaged current build is not reused: the next build writes every member again."""
    folder = current_build(built.root)
    damaged = folder / RECORDS
    damaged.chmod(0o644)
    damaged.write_bytes(damaged.read_bytes()[:-4])
    rehash(folder)
    built.write({"knowledge/global/glossary.md": "---\nsummary: Terms\n---\nRevenue, again.\n"})
    built.commit("edit")
    invoke(["build", "--repo", str(built.root)])
    manifest = json.loads((current_build(built.root) / "manifest.json").read_bytes())
    assert manifest["records"]["reused"] == 0
    assert len(records(current_build(built.root))) == len(_catalog(current_build(built.root)))
