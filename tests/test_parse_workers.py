"""Pages parsed in worker processes (as many pages are on a cold run) cross back encoded as
the parse cache stores them: the same parsed pages, findings and cache as a serial parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowl_build.core.config import Config
from knowl_build.pipeline import cache, pages
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.cache import CachePlace
from knowl_build.support.trust import MachineKey
from tests.helpers import Project
from tests.test_reader import CORPUS


def _analysed(root: Path, cache: Path) -> list[object]:
    place = CachePlace(cache, key=MachineKey(b"k" * 32))
    analysis = analyse(root, Config(), caches=place)
    return [(p.path, p.parsed) for p in analysis.pages] + [analysis.diagnostics]


def test_workers_parse_as_one_process_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = Project(tmp_path / "kb").write(CORPUS)
    proj.commit()
    serial = _analysed(proj.root, tmp_path / "serial")
    monkeypatch.setattr(pages, "PARALLEL_MIN_PAGES", 1)
    decoded: list[bytes] = []
    real = cache.decode_page

    def decode(data: bytes) -> object:
        decoded.append(data)
        return real(data)

    monkeypatch.setattr(pages, "decode_page", decode)
    parallel = _analysed(proj.root, tmp_path / "parallel")
    assert decoded  # the workers parsed them
    assert parallel == serial
    assert (tmp_path / "parallel" / "pages.jsonl").read_bytes().count(b"\n") == (
        tmp_path / "serial" / "pages.jsonl"
    ).read_bytes().count(b"\n")
    # and read back from the cache the workers filled
    assert _analysed(proj.root, tmp_path / "parallel") == serial
