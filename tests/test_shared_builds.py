"""Kept builds share the files an edit did not change (hard links): the index's segments and
any JSON file with the same bytes. Pruning a build leaves the others whole and still known
as validated, and a reader holding an older build keeps reading it; the validation memo is
sealed with this machine's key."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowl_build.artifacts import memo, opening, validate
from knowl_build.artifacts.layout import RECORDS
from knowl_build.reader import Reader
from tests.helpers import Project, current_build, invoke
from tests.tamper import run_cli
from tests.test_reader import CORPUS


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield


def _edit(proj: Project, n: int) -> Path:
    proj.write({"knowledge/global/glossary.md": f"---\nsummary: Terms {n}\n---\nRevenue {n}.\n"})
    proj.commit(f"edit {n}")
    invoke(["build", "--repo", str(proj.root)])
    return current_build(proj.root)


def _validations(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = validate.validate

    def counting(folder: Path) -> list[str]:
        calls.append(folder)
        return real(folder)

    monkeypatch.setattr(opening, "validate", counting)
    return calls


def test_unchanged_files_are_shared_and_pruning_keeps_the_rest_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "kb").write({**CORPUS, "knowl.toml": "keep_builds = 2\n"})
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    first = current_build(proj.root)
    second = _edit(proj, 1)
    segments = sorted((first / "index").glob("*.seg"))
    assert segments
    for segment in segments:  # the first build's segments, linked into the second
        shared = second / "index" / segment.name
        assert shared.stat().st_ino == segment.stat().st_ino
    assert (second / "entities.json").stat().st_ino == (first / "entities.json").stat().st_ino
    assert (second / RECORDS).stat().st_ino != (first / RECORDS).stat().st_ino
    calls = _validations(monkeypatch)
    with Reader.open(first) as held:  # a reader holds the first build...
        third = _edit(proj, 2)  # ...through a build that prunes beyond two builds
        assert first.is_dir()  # pinned: not pruned
        assert held.search("revenue")["hits"]
    fourth = _edit(proj, 3)  # prunes the first (and the second) now that nobody holds it
    assert not first.exists() and third.is_dir() and fourth.is_dir()
    assert opening.verify(fourth) == [] and opening.verify(third) == []
    calls.clear()
    with Reader.open(proj.root) as reader:  # unlinking shared files changed nothing it reads
        assert reader.search("revenue")["hits"]
    assert calls == []


def test_builds_that_link_and_prune_keep_every_kept_build_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The change time of a shared file moves when a build links or prunes it: the build
    remembers the kept builds again, so no reader validates any of them afterwards; a file
    written in place with its mtime set back (`unzip -o`) is still validated again, shared
    or not, pruned or not."""
    proj = Project(tmp_path / "kb").write({**CORPUS, "knowl.toml": "keep_builds = 3\n"})
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    calls = _validations(monkeypatch)
    for n in range(1, 5):  # the fourth build prunes
        _edit(proj, n)
        builds = sorted(p for p in (proj.root / ".knowl" / "build").iterdir() if p.is_dir())
        for folder in builds:
            with Reader.open(folder) as reader:
                assert reader.search("revenue")["hits"]
        assert calls == [], (n, calls)
    assert len(builds) == 3
    folder = current_build(proj.root)
    entities = folder / "entities.json"
    before = entities.stat()
    assert before.st_nlink > 1  # shared with the kept builds
    entities.write_bytes(entities.read_bytes().replace(b'"kind":', b'"kinx":', 1))
    os.utime(entities, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert entities.stat().st_ino == before.st_ino
    result = run_cli(["search", "revenue", "--repo", str(proj.root)])
    assert result.exit_code == 2 and "entities.json: checksum mismatch" in result.stderr


def test_a_memo_this_machine_did_not_seal_is_no_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit()
    invoke(["build", "--repo", str(proj.root)])
    folder = current_build(proj.root)
    state = memo.folder_state(folder)
    assert state is not None and memo.was_validated(folder, state)
    path = memo._memo_path(state["folder"])
    sealed = path.read_bytes()
    path.write_bytes(sealed.partition(b"\n")[2])  # the same memo, without its seal
    calls = _validations(monkeypatch)
    with Reader.open(proj.root):
        pass
    assert calls == [folder]
    os.unlink(path)
    monkeypatch.setenv("KNOWL_CACHE_KEY", "another machine's shared key")
    memo.remember(folder, state)  # sealed with another key
    monkeypatch.delenv("KNOWL_CACHE_KEY")
    with Reader.open(proj.root):
        pass
    assert calls == [folder, folder]
