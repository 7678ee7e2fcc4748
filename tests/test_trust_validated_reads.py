"""Trust 1, continued: a file the memo says was validated is read only if it is still that file.

A reader that finds its artifact in the validation memo reads the index with the C unpickler
(`Searcher`) or hands Whoosh its segments unwalked (`CheckedStorage`), once each file it
opens has the size, modification time and inode the validation saw. A rewrite in place that
keeps the size and sets the modification time back (what `unzip -o`, `tar -x` and
`rsync -t --inplace` do) kept all three: landing between the memo's check and the read, it
made `knowl site --artifact` run a hostile pickle. Each read now compares the change time too:
a file whose change time differs (a build links files of kept builds, which changes it too)
is read as if no validation had seen it, its segment walked before Whoosh reads it.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowl_build.artifacts import memo, opening
from knowl_build.core.errors import ArtifactError
from knowl_build.index import ranking
from knowl_build.index.storage import open_index, reading
from tests.tamper import module_corpus, pickle_spans, run_cli, tampered
from tests.test_trust_pickles import payloads


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("KNOWL_EMBEDDINGS", "off")
    yield


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "validated")


def rewrite_in_place(folder: Path, payload: bytes, *, directory: bool = False) -> Path:
    """`payload` written over the first pickle of a segment (or its compound directory), in
    place: the same size, inode and modification time (set back), another change time."""
    seg = sorted((folder / "index").glob("*.seg"))[0]
    before = seg.stat()
    time.sleep(0.05)  # past the clock tick of the change time the validation saw
    data = seg.read_bytes()
    start = int.from_bytes(data[:8], "big") if directory else pickle_spans(data)[0][0]
    with open(seg, "r+b") as handle:
        handle.seek(start)
        handle.write(payload)
    os.utime(seg, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = seg.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    assert after.st_ctime_ns != before.st_ctime_ns
    return seg


def _index_files(folder: Path) -> dict[str, memo.Identity]:
    files = memo.validated_files(folder)
    assert files is not None
    return {k.removeprefix("index/"): v for k, v in files.items() if k.startswith("index/")}


def test_a_file_rewritten_in_place_after_the_memo_was_read_is_not_trusted(
    artifact: Path, tmp_path: Path
) -> None:
    folder = tampered(artifact, tmp_path / "copy", lambda f: None)
    assert opening.verify(folder) == []
    expected = _index_files(folder)
    with ranking.Searcher(folder / "index", validated=expected) as searcher:
        assert all(s.unpickle.validated for s in searcher.segments)
    # A memo index bomb over the compound directory, which a Searcher reads as it opens: the
    # C unpickler would allocate 256 MB for it, the bounded one refuses it.
    rewrite_in_place(folder, b"\x80\x05]r" + (1 << 24).to_bytes(4, "little") + b".", directory=True)
    tracemalloc.start()
    try:
        with pytest.raises(ArtifactError, match="memo index beyond"):
            ranking.Searcher(folder / "index", validated=expected)
    finally:
        most = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert most < 32 << 20
    assert memo.validated_files(folder) is None  # and the memo no longer holds


def test_whoosh_reads_a_file_rewritten_in_place_only_once_walked(
    artifact: Path, tmp_path: Path
) -> None:
    folder = tampered(artifact, tmp_path / "copy", lambda f: None)
    assert opening.verify(folder) == []
    expected = _index_files(folder)
    rewrite_in_place(folder, payloads(tmp_path / "pwned")["GLOBAL os.system"](4))
    ix = open_index(folder / "index", expected=expected)  # Whoosh reads segments later
    try:
        with pytest.raises(ArtifactError, match="never loads"), reading(folder):
            ix.reader()  # the rewritten segment is walked, and refused
    finally:
        ix.storage.close_files()
        ix.close()
    assert not (tmp_path / "pwned").exists()


def test_a_file_of_another_modification_time_is_refused(artifact: Path, tmp_path: Path) -> None:
    folder = tampered(artifact, tmp_path / "copy", lambda f: None)
    assert opening.verify(folder) == []
    expected = _index_files(folder)
    seg = sorted((folder / "index").glob("*.seg"))[0]
    os.utime(seg, ns=(seg.stat().st_atime_ns, seg.stat().st_mtime_ns + 1))
    with pytest.raises(ArtifactError, match="changed after it was validated"):
        ranking.Searcher(folder / "index", validated=expected)


def test_the_site_export_refuses_a_segment_rewritten_while_it_starts(
    artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reviewer's race, made certain: the rewrite lands just after the export read the
    memo, before Whoosh reads the segment."""
    folder = tampered(artifact, tmp_path / "copy", lambda f: None)
    sentinel = tmp_path / "pwned"
    assert run_cli(["verify", "--artifact", str(folder)]).exit_code == 0
    real = memo.validated_files

    def racing(where: Path) -> dict[str, memo.Identity] | None:
        found = real(where)
        if found is not None and not sentinel.with_suffix(".done").exists():
            rewrite_in_place(folder, payloads(sentinel)["GLOBAL os.system"](4))
            sentinel.with_suffix(".done").touch()
        return found

    monkeypatch.setattr(memo, "validated_files", racing)
    site = run_cli(["site", "--artifact", str(folder), "--out", str(tmp_path / "site"), "-q"])
    assert sentinel.with_suffix(".done").exists()  # the race was run
    assert site.exit_code == 2, site.output
    assert "never loads" in site.output
    assert not sentinel.exists()
