"""The stat cache (issue 25): a page whose stat data is unchanged is not read again, and no
state of the cache (stale, racily clean, forged, of another project) makes a check miss
what a cold check finds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec
import pytest

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.pipeline import inputs, stats
from knowl_build.pipeline.cache import cache_place
from knowl_build.pipeline.check import check
from tests.helpers import Project

CLEAN = "---\nsummary: a page\n---\nSee [[two]].\n"
BROKEN = "---\nsummary: a page\n---\nSee [[twx]].\n"  # the same size: only the stamp tells
TWO = "---\nsummary: two\n---\nBack to [[one]].\n"


def findings(root: Path, use_cache: bool = True) -> list[tuple[str, str]]:
    return [(d.path, d.code) for d in _check(root, use_cache)]


def _check(root: Path, use_cache: bool) -> list[Diagnostic]:
    return check(root, Config(rules={"KB202": "off"}), use_cache=use_cache).diagnostics


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pages the inputs read (semantic files and other files aside)."""
    done: list[str] = []
    read = inputs.read_file

    def counted(root: str, path: str) -> tuple[bytes | None, str]:
        if path.endswith(".md"):
            done.append(path)
        return read(root, path)

    monkeypatch.setattr(inputs, "read_file", counted)
    return done


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as settled (as if written long before the run)."""
    monkeypatch.setattr(stats, "SETTLE_NS", 0)


def project(tmp_path: Path) -> Project:
    proj = Project(tmp_path / "p")
    proj.write({"knowledge/global/one.md": CLEAN, "knowledge/global/two.md": TWO})
    proj.commit("start")
    return proj


def edit(path: Path, text: str) -> None:
    """Write `text` with a later mtime than the file had, whatever the clock's tick."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 10**9, before + 10**9))


@pytest.mark.usefixtures("settled")
def test_unchanged_pages_are_not_read(tmp_path: Path, reads: list[str]) -> None:
    proj = project(tmp_path)
    assert findings(proj.root) == []
    assert sorted(reads) == ["knowledge/global/one.md", "knowledge/global/two.md"]
    reads.clear()
    (proj.root / ".knowl" / "cache" / "check.json").unlink()  # no memo: a real analysis
    assert findings(proj.root) == []
    assert reads == []


@pytest.mark.usefixtures("settled")
def test_a_changed_page_is_read_even_at_the_same_size(tmp_path: Path, reads: list[str]) -> None:
    proj = project(tmp_path)
    assert findings(proj.root) == []
    edit(proj.root / "knowledge/global/one.md", BROKEN)
    reads.clear()
    assert findings(proj.root) == [("knowledge/global/one.md", "KB103")]
    assert reads == ["knowledge/global/one.md"]
    assert findings(proj.root, use_cache=False) == [("knowledge/global/one.md", "KB103")]


def test_a_page_written_during_its_settling_time_is_not_remembered(tmp_path: Path) -> None:
    """Racily clean: a stamp as young as the run could be shared with a change to come."""
    proj = project(tmp_path)
    findings(proj.root)
    cache = stats.stat_cache(cache_place(proj.root), proj.root)
    assert cache.known == {}


@pytest.mark.usefixtures("settled")
def test_a_forged_stat_cache_is_ignored(tmp_path: Path, reads: list[str]) -> None:
    """A stat cache without this machine's seal (committed with the project, say) that says
    a broken page still has its clean digest is not read: the page is."""
    proj = project(tmp_path)
    findings(proj.root)
    place = cache_place(proj.root)
    path = place.file(stats.STAT_CACHE)
    assert path is not None
    sealed = path.read_bytes()
    page = proj.root / "knowledge/global/one.md"
    edit(page, BROKEN)
    stamp = stats.stamp_of(str(page))
    assert stamp is not None
    raw = msgspec.json.decode(sealed.partition(b"\n")[2])
    raw["files"]["knowledge/global/one.md"][0] = list(stamp)  # the clean digest, kept
    forged = msgspec.json.encode(raw)
    for seal in (b"0" * 64, sealed.partition(b"\n")[0]):  # no seal, an old seal
        path.write_bytes(seal + b"\n" + forged)
        reads.clear()
        assert findings(proj.root, use_cache=True) == [("knowledge/global/one.md", "KB103")]
        assert "knowledge/global/one.md" in reads


@pytest.mark.usefixtures("settled")
def test_a_digest_the_parse_cache_lacks_costs_a_read(tmp_path: Path, reads: list[str]) -> None:
    """A sealed entry whose digest the parse cache does not hold (the cache was rewritten,
    or the entry is wrong) makes the page read, and what it holds is what is checked."""
    proj = project(tmp_path)
    findings(proj.root)
    (proj.root / ".knowl" / "cache" / "pages.jsonl").unlink()
    (proj.root / ".knowl" / "cache" / "check.json").unlink()
    reads.clear()
    assert findings(proj.root) == []
    assert sorted(reads) == ["knowledge/global/one.md", "knowledge/global/two.md"]


@pytest.mark.usefixtures("settled")
def test_a_copy_of_the_project_reads_its_own_pages(tmp_path: Path, reads: list[str]) -> None:
    """The cache names its project root: a copy elsewhere (its caches copied too) reads
    every page, even where a copy kept the stamps."""
    proj = project(tmp_path)
    findings(proj.root)
    copy = tmp_path / "copy"
    shutil.copytree(proj.root, copy, symlinks=True)
    (copy / ".knowl" / "cache" / "check.json").unlink()
    reads.clear()
    assert findings(copy) == []
    assert sorted(reads) == ["knowledge/global/one.md", "knowledge/global/two.md"]
