"""What made tests flaky under load (issue 21, item 12), each reproduced deterministically."""

from __future__ import annotations

import gc
import os
import warnings
from pathlib import Path

import pytest

from knowl_build.artifacts import memo


def test_memo_trim_closes_its_listing_when_an_entry_vanishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process trimming the same cache removes a memo between the listing and its
    # stat; a dangling link is exactly that state, on every run.
    cache = tmp_path / "validated"
    cache.mkdir()
    for number in range(memo.MAX_MEMOS + 4):
        path = cache / f"{number:04d}.json"
        path.write_text("{}")
        os.utime(path, (1_000_000 + number, 1_000_000 + number))
    (cache / "0000-gone.json").symlink_to(cache / "vanished.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        memo.trim(cache, memo.MAX_MEMOS)
        gc.collect()
    left = sorted(p.name for p in cache.iterdir() if not p.is_symlink())
    # The oldest went, the newest MAX_MEMOS stayed: the vanished entry stopped nothing.
    assert len(left) == memo.MAX_MEMOS
    assert left[0] == "0004.json"
